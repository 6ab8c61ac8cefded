"""The rendered instructions and startup message, kept by the digest of their inputs.

Rendering imports Jinja (about 13 ms) and compiles the templates (about 8 ms)
on every launch, although an unchanged agent renders the same bytes launch
after launch. The launch path asks here instead: the inputs of a rendering
(agentlaunch's version and rendering code, every file in the template folders,
the agent's parts, skills, variables; for the startup message the whole
definition, the session and the time as the message says it) are hashed, and a
rendering kept under that digest in ``<state>/rendered/`` is used as it is.
Any change to an input is another digest: rendered again with Jinja, and kept.

The startup message names the session, new each launch: it is kept with a
stand-in id, and used only when the template is agentlaunch's own and renders
two stand-ins as the same text apart from the id itself (checked when kept).

A cache that cannot be read or written costs the launch only its shortcut.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import date, datetime
from hashlib import sha256
from pathlib import Path
from typing import Any

from agentlaunch import __version__
from agentlaunch.definitions.bounded_read import PART_LIMIT
from agentlaunch.definitions.rendered import (
    STARTUP_TEMPLATE,
    Rendered,
    VolatileUse,
    part_label,
    quantize_time,
    sections,
    template_search,
    template_source,
    template_variables,
)
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.fsutil import read_regular

CACHE_DIR = "rendered"
KEEP = 64  # renderings kept (the newest): a few per agent (instructions, the startup message by ten minutes)
FILES_LIMIT = 256  # template folders holding more files than this are not hashed: rendered on every launch
RECORD_LIMIT = 64 << 20
STAND_IN = ("agentlaunch-session-stand-in-a7Kq", "agentlaunch-session-stand-in-Z3pw")
CODE = ("render.py", "rendered.py", "sandbox.py", "render_cache.py")  # the rendering code, by its files' stamps


def _code_stamp() -> list[list[int]]:
    """Size and modification time of the rendering code (a source checkout edited without a new version)."""
    here = Path(__file__).parent
    stamps = []
    for name in CODE:
        st = os.stat(here / name)
        stamps.append([st.st_size, st.st_mtime_ns])
    return stamps


def templates_digest(templates_dir: Path | None) -> str | None:
    """A digest of every file in the template folders (what a template may include); None: not to be kept."""
    digest = sha256()
    count = 0
    for folder in template_search(templates_dir):
        digest.update(json.dumps(folder).encode())
        for root, dirs, files in os.walk(folder, followlinks=True):
            dirs.sort()
            for name in sorted(files):
                count += 1
                if count > FILES_LIMIT:
                    return None
                path = os.path.join(root, name)
                try:
                    data = read_regular(Path(path), PART_LIMIT)
                except OSError:
                    return None  # unreadable, a FIFO, too large: the rendering says what is wrong
                digest.update(json.dumps(os.path.relpath(path, folder)).encode())
                digest.update(sha256(data).digest())
    return digest.hexdigest()


def _key(kind: str, templates: str, inputs: list[Any]) -> str:
    whole = json.dumps([kind, __version__, _code_stamp(), templates, inputs], default=str)
    return sha256(whole.encode("utf-8")).hexdigest()[:32]


def _read(state_dir: Path, key: str) -> dict[str, Any] | None:
    try:
        record = json.loads(read_regular(state_dir / CACHE_DIR / f"{key}.json", RECORD_LIMIT))
    except (OSError, ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _keep(state_dir: Path, key: str, record: dict[str, Any]) -> None:
    from agentlaunch.fsutil import keep_newest, write_atomic

    folder = state_dir / CACHE_DIR
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{key}.json", json.dumps(record).encode("utf-8"))
        keep_newest(folder, KEEP)


def instructions(spec: AgentSpec, working_dir: Path, today: date, state_dir: Path, templates_dir: Path | None = None) -> Rendered:
    """:func:`agentlaunch.definitions.render.render_instructions` for ``spec``'s provider, kept by its inputs."""
    templates = templates_digest(templates_dir)
    key = None
    if templates is not None:
        inputs = [
            spec.provider,
            template_variables(spec, working_dir, today),
            spec.prefix_order,
            [[part_label(spec, p), p.name, str(p.path), p.text, p is spec.soul, p is spec.instructions] for p in sections(spec)],
            [[s.name, s.description] for s in spec.skills],
        ]
        key = _key("instructions", templates, inputs)
        if (found := _rendered(_read(state_dir, key))) is not None:
            return found
    from agentlaunch.definitions.render import render_instructions

    rendered = render_instructions(spec, working_dir, today, templates_dir=templates_dir)
    if key is not None:
        record = {
            "text": rendered.text,
            "filename": rendered.filename,
            "offset": rendered.first_volatile_offset,
            "volatile": [[v.variable, v.source] for v in rendered.volatile],
            "parts": [list(p) for p in rendered.parts],
        }
        _keep(state_dir, key, record)
    return rendered


def _rendered(record: dict[str, Any] | None) -> Rendered | None:
    """The kept rendering, when it has every field with its type."""
    if record is None:
        return None
    try:
        text, filename, offset = record["text"], record["filename"], record["offset"]
        volatile = tuple(VolatileUse(str(v), str(s)) for v, s in record["volatile"])
        parts = tuple((str(label), str(part)) for label, part in record["parts"])
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(text, str) or not isinstance(filename, str) or not (offset is None or isinstance(offset, int)):
        return None
    return Rendered(text=text, filename=filename, volatile=volatile, first_volatile_offset=offset, parts=parts)


def startup(
    spec: AgentSpec, session_id: str | None, working_dir: Path, now: datetime, state_dir: Path, templates_dir: Path | None = None
) -> str:
    """:func:`agentlaunch.definitions.render.render_startup`, kept by its inputs with a stand-in for the session id."""
    templates = templates_digest(templates_dir)
    own = templates_dir is None or template_source([str(templates_dir)], [STARTUP_TEMPLATE]) is None
    key = None
    if templates is not None and own:
        when = _quantized(now)
        inputs = [repr(spec), session_id is None, str(working_dir), when.isoformat(), when.strftime("%A %Y-%m-%d %H:%M %Z")]
        key = _key("startup", templates, inputs)
        record = _read(state_dir, key)
        if record is not None and isinstance(text := record.get("text"), str):
            return text if session_id is None else text.replace(STAND_IN[0], session_id)
    from agentlaunch.definitions.render import RunFacts, render_startup

    def render(sid: str | None) -> str:
        return render_startup(spec, RunFacts(spec.provider, spec.model, sid, working_dir, now), templates_dir)

    message = render(session_id)
    if key is not None:
        if session_id is None:
            _keep(state_dir, key, {"text": message})
        else:
            first = render(STAND_IN[0])
            if (
                first.replace(STAND_IN[0], STAND_IN[1]) == render(STAND_IN[1])
                and first.replace(STAND_IN[0], session_id) == message
            ):
                _keep(state_dir, key, {"text": first})
    return message


def _quantized(now: datetime) -> datetime:
    return quantize_time(now.astimezone())
