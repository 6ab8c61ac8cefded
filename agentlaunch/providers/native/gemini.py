"""Gemini CLI's native (TUI) launch: its session file for meters and states.

Gemini CLI 0.61 writes each session to
``$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``:
a header line (``sessionId``, ``projectHash`` = SHA-256 of the project
folder, ``kind``), then one line per message written or rewritten (a model
call's record is written when the call ends, and again when its tool calls'
results are added), ``{"$set": {...}}`` lines, and ``messages`` lists in a
``$set`` when the history is rewritten. A model call is a ``type: "gemini"``
record with ``tokens`` (``input`` includes ``cached``; ``thoughts`` billed as
output), keyed by its ``id``: the same figures the headless per-call split
reads (:func:`~agentlaunch.providers.gemini.call_usage`), each id counted once.
Gemini 0.61 writes a call's record once its stream has ended, and sets its
``tokens`` once (read in its bundle: ``recordMessageTokens`` never replaces
them), so the first version with tokens is the call's final figure.

States come from the same file (Gemini offers nothing else agentlaunch can
receive without editing the user's settings; see the docs): a user prompt
recorded means ``thinking``; a model call whose record has no text (it asked
for tools) means ``tool`` until a tool result (``functionResponse``) is
recorded (``thinking``); a model call with text and no tool calls means the
turn's answer: ``waiting``. Gemini cannot tell ``asking`` this way (a
permission prompt shows as ``tool``). The relay is woken by inotify on the
session folders (:mod:`agentlaunch.providers.native.dir_watch`), else by a timer.

The model's answer is the ``content`` of a model call's record: one ``Text``
per message id, the first time its record is read with text, before the state
that record tells (``waiting`` for the turn's answer). Gemini 0.61 writes a
call's record once its stream has ended, ``content`` the whole response text
(a string; thoughts are kept apart, in ``thoughts``), and rewrites the record
only to add its tool calls' results or ``tokens``, never its text (read in its
bundle: ``recordMessage`` after the stream, ``recordToolCalls``,
``recordMessageTokens``), so the first version is the final text. A record is
a model call's when its ``content`` is that string or it has ``tokens``; the
notes the CLI adds to the history itself (after ``/compress``, a binary file's
"received") are parts lists without ``tokens``, and ``thought`` parts are
never text. Messages only seen in a ``$set`` of the whole history (a resume,
a rewritten history) are history: no ``Text``; the ids a resumed session
already holds are known as its calls are.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from agentlaunch.events import CallUsage, Event, SessionStarted, Text
from agentlaunch.providers import values
from agentlaunch.providers.gemini import call_usage, session_calls, session_files
from agentlaunch.providers.native.dir_watch import DirWatch, open_watch
from agentlaunch.providers.native.jsonl_tail import JsonlTail
from agentlaunch.providers.native.source import NativeContext, NativeExtras, NativeItem
from agentlaunch.providers.values import BadUsage, items, label, opt_label, string
from agentlaunch.sinks import StateChanged

HEADER_LIMIT = 1 << 20
POLL = 2.0
"""Seconds between reads when inotify is not available."""
SETTLE = (0.3, 1.5)
"""After a change, two more reads (Gemini writes a record in more than one write)."""


HEADLESS_MARKERS = ("CI", "GITHUB_ACTIONS")
"""Gemini 0.61 runs headless whenever one of these is ``true`` (``isHeadlessMode``), at a terminal too: a
resumed interface (no ``-i PROMPT``) then waits for stdin and exits 42."""


def native_extras(ctx: NativeContext) -> NativeExtras:
    """The source of a native Gemini launch (no flags: Gemini's own argv and home stay as they are).

    agentlaunch relays a real terminal here, so a ``CI=true`` (or ``GITHUB_ACTIONS=true``) inherited from the
    environment is turned to ``false`` for the interface; it would make Gemini take the terminal for a pipe.
    """
    env = {name: "false" for name in HEADLESS_MARKERS if ctx.env.get(name) == "true"}
    return NativeExtras(env=env, sources=[GeminiNativeSource(ctx, open_watch())])


def gemini_root(env: Any) -> Path:
    """``~/.gemini/tmp`` where ``~`` is ``$GEMINI_CLI_HOME`` when set (Gemini's own rule), else ``$HOME``."""
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME", "~")).expanduser() / ".gemini" / "tmp"


def project_hash(working_dir: Path) -> str:
    """Gemini's ``projectHash``: the SHA-256 of the project folder's path."""
    return hashlib.sha256(str(working_dir).encode("utf-8")).hexdigest()


class GeminiNativeSource:
    """The session file(s) of one native Gemini launch (see the module doc)."""

    def __init__(self, ctx: NativeContext, watch: DirWatch | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.ctx = ctx
        self.watch = watch
        self.clock = clock
        self.root = gemini_root(ctx.env)
        self.project = project_hash(ctx.working_dir)
        self.session_id: str | None = ctx.session_id
        self.tails: dict[Path, JsonlTail] = {}
        self.rejected: set[Path] = set()
        self.seen: set[str] = set()
        self.answered: set[str] = set()
        """The message ids whose text was given as ``Text`` (on resume, the session's calls so far)."""
        self.state: str | None = None
        self.announced = False
        self._schedule: list[float] = []
        if ctx.resumed and ctx.session_id:
            # What the files hold already was counted by the launches before.
            self.seen.update(c.call_id for c in session_calls(ctx.session_id, ctx.env) if c.call_id)
            self.answered.update(self.seen)
            for path in session_files(ctx.session_id, ctx.env):
                self.tails[path] = JsonlTail(path, start_at_end=True)
        self._watch_folders()
        if self.watch is None:
            self._schedule = [clock() + POLL]

    # -- NativeSource ------------------------------------------------------------------------
    def fileno(self) -> int | None:
        return self.watch.fd if self.watch is not None else None

    def deadline(self) -> float | None:
        return min(self._schedule) if self._schedule else None

    def read(self) -> list[NativeItem]:
        now = self.clock()
        self._schedule = [t for t in self._schedule if t > now]
        woken = self.watch.drain() if self.watch is not None else False
        self._watch_folders()
        self._find_files()
        out: list[NativeItem] = []
        for tail in list(self.tails.values()):
            for obj in tail.read():
                if isinstance(obj, dict):
                    out += self._line(obj)
        if woken or out:
            self._schedule = [now + d for d in SETTLE]
        if self.watch is None and not self._schedule:
            self._schedule = [now + POLL]
        return out

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()

    # -- finding the files -------------------------------------------------------------------
    def _watch_folders(self) -> None:
        if self.watch is None:
            return
        if not self.watch.watch(self.root):
            # Gemini has not made its tmp folder yet (a new home): its creation in the parent wakes the launch.
            self.watch.watch(self.root.parent)
            return
        try:
            projects = [p for p in self.root.iterdir() if p.is_dir()]
        except OSError:
            return
        for project in projects:
            self.watch.watch(project)
            chats = project / "chats"
            if chats.is_dir():
                self.watch.watch(chats)

    def _find_files(self) -> None:
        try:
            candidates = sorted(self.root.glob("*/chats/session-*.jsonl"))
        except OSError:
            return
        for path in candidates:
            if path in self.tails or path in self.rejected:
                continue
            head = _header(path)
            if head is None:
                continue  # not written yet: looked at again next time
            if self._ours(head, path):
                self.tails[path] = JsonlTail(path)
            else:
                self.rejected.add(path)

    def _ours(self, head: dict[str, Any], path: Path) -> bool:
        session = label(head.get("sessionId"))
        if self.session_id is not None:
            return session == self.session_id
        if head.get("projectHash") != self.project or head.get("kind") not in (None, "main"):
            return False
        try:
            return path.stat().st_mtime + 1 >= self.ctx.started_at and _started(head) + 2 >= self.ctx.started_at
        except OSError:
            return False

    # -- lines -------------------------------------------------------------------------------
    def _line(self, obj: dict[str, Any]) -> list[NativeItem]:
        if "sessionId" in obj and "projectHash" in obj:
            if self.session_id is None:
                self.session_id = opt_label(obj.get("sessionId"))
            return list(self._announce())
        change = obj.get("$set")
        if isinstance(change, dict):
            out: list[NativeItem] = []
            for message in items(change.get("messages")):
                if isinstance(message, dict):
                    out += self._message(message, replayed=True)
            return out
        return self._message(obj, replayed=False)

    def _message(self, message: dict[str, Any], replayed: bool) -> list[NativeItem]:
        kind = message.get("type")
        out: list[NativeItem] = []
        if kind == "gemini":
            out += self._call(message)
            if not replayed:
                out += self._answer(message)
                out += self._set_state(_after_call(message))
        elif kind == "user" and not replayed:
            out += self._set_state("thinking")
        return out

    def _call(self, message: dict[str, Any]) -> list[NativeItem]:
        call_id = opt_label(message.get("id"))
        tokens = message.get("tokens")
        if call_id is None or call_id in self.seen or not isinstance(tokens, dict):
            return []
        try:
            usage = call_usage(tokens)
        except BadUsage:
            return []
        self.seen.add(call_id)
        return [CallUsage(usage, opt_label(message.get("model")), call_id)]

    def _answer(self, message: dict[str, Any]) -> list[NativeItem]:
        """The model call's text, the first time its record is read with some (see the module doc)."""
        message_id = opt_label(message.get("id"))
        if message_id is None or message_id in self.answered:
            return []
        content = message.get("content")
        if not isinstance(content, str) and not isinstance(message.get("tokens"), dict):
            return []  # a note the CLI added to the history itself, not a model call
        text = answer_text(content)
        if not text.strip():
            return []
        self.answered.add(message_id)
        return [Text(text)]

    def _announce(self) -> list[Event]:
        if self.announced or not self.session_id:
            return []
        self.announced = True
        return [SessionStarted(self.session_id, cwd=str(self.ctx.working_dir))]

    def _set_state(self, state: str | None) -> list[NativeItem]:
        if state is None or state == self.state:
            return []
        self.state = state
        return [StateChanged(state)]


def _after_call(message: dict[str, Any]) -> str | None:
    """The state a model call's record tells: its tools running, or the turn's answer given."""
    calls = [c for c in items(message.get("toolCalls")) if isinstance(c, dict)]
    if calls:
        done = all(string(c.get("status")) in ("success", "error", "cancelled") for c in calls)
        return "thinking" if done else "tool"
    if string(message.get("content")).strip() or _has_text(message.get("content")):
        return "waiting"
    return "tool"


def answer_text(content: Any) -> str:
    """A record's ``content`` as text: the string, or its text parts joined (not thoughts, calls or their results)."""
    if isinstance(content, str):
        return content
    return "".join(string(p.get("text")) for p in items(content) if isinstance(p, dict) and not p.get("thought"))


def _has_text(content: Any) -> bool:
    return any(isinstance(p, dict) and string(p.get("text")).strip() for p in items(content))


def _header(path: Path) -> dict[str, Any] | None:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            line = fh.readline(HEADER_LIMIT)
        head = values.loads(line) if line.endswith("\n") else None
    except (OSError, ValueError):
        return None
    return head if isinstance(head, dict) and "sessionId" in head else None


def _started(head: dict[str, Any]) -> float:
    """The header's ``startTime`` as a timestamp (0 when it is not an ISO time)."""
    text = string(head.get("startTime"))
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
