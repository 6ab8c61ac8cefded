"""A Textual app's screenshot for the docs, written only when the screen differs in substance.

A live screen never draws twice the same: session ids, clock times, how long an agent has been waiting, a
countdown, token counts (the startup message holds the date), and the column widths those change. Each is
replaced by a placeholder and runs of spaces are folded before the screen's styled text is hashed; the hash
rides in the SVG as a comment, and a screen with the hash already there leaves the file alone, so a clean
checkout stays clean after the suite.
"""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

from rich.console import Console
from textual.app import App

VARYING = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b"), "<clock>"),
    (re.compile(r"\b(?:\d+h)?(?:\d+m)?\d+s\b"), "<span>"),
    (re.compile(r"%\d+\b"), "%<pane>"),
    (re.compile(r"/tmp/\S+"), "<tmp>"),
    (re.compile(r"\d[\d,.]*"), "<n>"),  # token counts follow the startup message's date, whose length varies
    (re.compile(r" +"), " "),
)
MARK = re.compile(r"<!-- substance ([0-9a-f]{16}) -->")
STYLE = re.compile(r"\x1b\[[0-9;]*m")  # a colour's numbers are substance


def substance(styled_text: str) -> str:
    """The hash of a screen's styled text with what varies from run to run taken out of its text (not its styles)."""

    def steady(text: str) -> str:
        for pattern, placeholder in VARYING:
            text = pattern.sub(placeholder, text)
        return text

    texts, styles = STYLE.split(styled_text), STYLE.findall(styled_text)
    kept = "".join(steady(text) + style for text, style in zip(texts, [*styles, ""], strict=True))
    return hashlib.sha256(kept.encode()).hexdigest()[:16]


def save_if_changed(app: App[object], path: Path) -> bool:
    """Write ``app``'s screen to ``path`` as SVG unless the file already holds this screen in substance; True if written."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )  # (as App.export_screenshot makes it)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    digest = substance(console.export_text(styles=True, clear=False))
    old = MARK.search(path.read_text()) if path.exists() else None
    if old is not None and old.group(1) == digest:
        return False
    first, _, rest = console.export_svg(title=app.title).partition("\n")
    path.write_text(f"{first}\n<!-- substance {digest} -->\n{rest}")
    return True
