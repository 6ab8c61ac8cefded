"""The deck's preview: which rows of the selected agent's pane it shows, fitted to the space it has.

The three CLIs draw what a person needs at the bottom of their pane (the permission dialog, the input box,
the status line), so a pane taller than the preview is shown from its bottom, not its top. The rule
(:func:`window`), for a pane of ``height`` rows in a preview of ``rows`` rows:

- the bottom is the lower of the cursor's row and the last row that is not blank (a CLI that draws inline,
  Claude Code, leaves blank rows under its box in a tall pane; the cursor sits below text at a shell prompt);
- everything up to the bottom fits: shown from the pane's first row;
- else the ``rows`` rows that end at the bottom; for an agent that is ``asking``, if the question (the last
  row ending in ``?`` among the :data:`QUESTION_SPAN` rows above the bottom: "Do you want to proceed?",
  "Would you like to run the following command?", "Allow execution of: 'echo'?") is above those rows, the
  rows from the question down instead: the question and its first choices, the bottom cut.

Every line is cut at the preview's width (never wrapped: a wrapped row would push the bottom out of view),
an ellipsis marking a cut line. The pane is captured in a worker thread (:func:`capture_pane`, one tmux call for
the screen, its colours and the cursor); the rows are chosen on the deck's loop each time the capture or the
preview's size changes, so a pane resized while previewed, or a deck resized, is fitted again.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text
from textual import events
from textual.widgets import Static

from agentlaunch.live.tmux import Tmux, tmux_arg

CAPTURE_LIMIT = 1 << 20  # bytes of a capture kept: a pane of 1,000 by 1,000 cells with colours
QUESTION_SPAN = 24  # rows above the bottom searched for an asking agent's question (a dialog is shorter)
GEOMETRY = "#{cursor_y} #{pane_height} #{pane_width}"
_ESCAPES = re.compile(r"\x1b(?:\[[0-9;:?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_FRAME = " \t│┃║|╭╮╰╯┌┐└┘─━═▌▐█"  # box borders around a dialog's text (its question ends before them)


@dataclass(frozen=True)
class PaneShot:
    """One capture of a pane: its rows (with their colours), the cursor's row and the pane's size."""

    raw: str  # what tmux printed: two captures are the same screen when it is the same
    lines: list[Text] = field(compare=False)
    plain: list[str] = field(compare=False)
    cursor_y: int | None = field(compare=False, default=None)
    height: int = field(compare=False, default=0)
    width: int = field(compare=False, default=0)


def capture_pane(tmux: Tmux, pane: str, shown: PaneShot | None = None) -> PaneShot:
    """The pane's screen as tmux holds it, with its colours (``capture-pane -e -p``) and its cursor's row and size
    (``display-message``, in the same tmux call); ``shown`` itself when it is the same screen (not parsed again).
    OSError when tmux cannot (the pane closed, the server went)."""
    capture, geometry = ("capture-pane", "-e", "-p", "-t", pane), ("display-message", "-p", "-t", pane, GEOMETRY)
    argv = [*tmux.command(*capture), ";", *(tmux_arg(a) for a in geometry)]  # one tmux call: tmux's own ";"
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False, errors="replace")
    if proc.returncode != 0:
        said = proc.stderr.strip().splitlines()
        raise OSError(f"tmux capture-pane: {said[0] if said else f'exit {proc.returncode}'}")
    return shown if shown is not None and shown.raw == proc.stdout else parse(proc.stdout)


def parse(stdout: str) -> PaneShot:
    """A :class:`PaneShot` from what :func:`capture_pane`'s tmux call printed: the rows, then the geometry line."""
    body, _, last = stdout.rstrip("\n").rpartition("\n")
    geometry = last.split()
    if len(geometry) != 3 or not all(g.isdigit() for g in geometry):
        body, geometry = stdout, []  # no geometry line: the rows alone, the bottom found from the text
    body = body[-CAPTURE_LIMIT:]
    cursor, height, width = (int(g) for g in geometry) if geometry else (None, 0, 0)
    # Parsed whole, then split: tmux carries a colour begun on one row into the next without repeating it.
    lines = (
        list(Text.from_ansi(body, no_wrap=True).split("\n", allow_blank=True))
        if "\x1b" in body
        else [Text(line) for line in body.split("\n")]
    )
    plain = [_ESCAPES.sub("", line) for line in body.split("\n")]
    if len(plain) != len(lines):  # a stray escape the decoder read otherwise: the decoder's rows are what is shown
        plain = [line.plain for line in lines]
    return PaneShot(stdout, lines, plain, cursor, height, width)


def bottom_row(plain: Sequence[str], cursor_y: int | None) -> int:
    """The last row that matters: the lower of the last row that is not blank and the cursor's."""
    last = next((i for i in range(len(plain) - 1, -1, -1) if plain[i].strip()), -1)
    if cursor_y is not None and cursor_y < len(plain):
        last = max(last, cursor_y)
    return last


def question_row(plain: Sequence[str], bottom: int) -> int | None:
    """The row of an asking CLI's question: the last row ending in ``?`` within :data:`QUESTION_SPAN` rows above
    ``bottom`` (box borders taken off), or None."""
    for i in range(bottom, max(bottom - QUESTION_SPAN, -1), -1):
        if plain[i].strip(_FRAME).endswith("?"):
            return i
    return None


def window(plain: Sequence[str], cursor_y: int | None, rows: int, *, asking: bool = False) -> tuple[int, int]:
    """The rows ``[start, end)`` of the pane the preview shows in ``rows`` rows (the rule in the module's doc)."""
    bottom = bottom_row(plain, cursor_y)
    end = bottom + 1
    rows = max(rows, 1)
    if end <= rows:
        return 0, end
    start = end - rows
    if asking and (question := question_row(plain, bottom)) is not None and question < start:
        return question, question + rows
    return start, end


def fitted(shot: PaneShot, rows: int, cols: int, *, asking: bool = False) -> Text:
    """The rows of ``shot`` the preview shows in ``rows`` by ``cols`` cells, each cut at ``cols``."""
    start, end = window(shot.plain, shot.cursor_y, rows, asking=asking)
    shown = []
    for line in shot.lines[start:end]:
        line = line.copy()
        line.rstrip()
        line.truncate(max(cols, 1), overflow="ellipsis")
        shown.append(line)
    out = Text("\n", no_wrap=True, overflow="ellipsis").join(shown)
    out.no_wrap, out.overflow = True, "ellipsis"
    return out


class Preview(Static):
    """The selected pane, fitted by :func:`fitted`: again at each capture and each change of its own size."""

    DEFAULT_CSS = "Preview { text-wrap: nowrap; text-overflow: ellipsis; }"

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__("", id=id, markup=False)
        self.shot: PaneShot | None = None
        self.asking = False

    def show_shot(self, shot: PaneShot, *, asking: bool = False) -> None:
        self.shot, self.asking = shot, asking
        self._fit()

    def show_text(self, text: str) -> None:
        """A line of the deck's own (no pane to show, or why the capture failed)."""
        self.shot = None
        self.update(Text(text))

    def on_resize(self, _event: events.Resize) -> None:
        if self.shot is not None:
            self._fit()

    def _fit(self) -> None:
        assert self.shot is not None
        size = self.content_size
        self.update(fitted(self.shot, size.height, size.width, asking=self.asking))
