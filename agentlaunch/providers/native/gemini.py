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
reads (:func:`~agentlaunch.providers.gemini_session.call_usage`), each id counted once.
Gemini 0.61 writes a call's record once its stream has ended, and sets its
``tokens`` once (read in its bundle: ``recordMessageTokens`` never replaces
them), so the first version with tokens is the call's final figure.

States come from Gemini's hooks and the same file. The per-agent home's
generated ``settings.json`` runs agentlaunch's reporter on ``SessionStart``
(the interface is up: ``waiting`` until a prompt), ``BeforeAgent`` (a prompt:
``thinking``, and its text for the session's title), ``BeforeTool`` (``tool``),
``Notification`` ``ToolPermission`` (a permission prompt: ``asking``) and
``AfterTool`` (``thinking``); see :mod:`agentlaunch.providers.native.gemini_hooks`
for what was measured and how a report finds this launch. From the file: a user
prompt recorded means ``thinking`` (only while no hook was heard: after a denied
tool Gemini writes its history again, prompts included); a model call whose
record has no text (it asked for tools) means ``tool`` until a tool result
(``functionResponse``) is recorded (``thinking``); a model call with text and no
tool calls means the turn's answer: ``waiting``; an ``info`` record "Request
cancelled." (a denied tool, Esc) ends the turn: ``waiting`` (with hooks heard).
A ``tool`` read from the file never replaces ``asking`` (the record of the
call that asked may be read after the prompt's report). Without hooks (the
user's settings turn them off or are not valid JSON), a resumed session counts
as up once its session file is found, and ``asking`` is not told. The relay is
woken by the hook socket and by inotify on the session folders
(:mod:`agentlaunch.dir_watch`), else by a timer.

The model's answer is the ``content`` of a model call's record (one ``Text`` per message id, the first time its
record is read with text; what a record tells: :mod:`agentlaunch.providers.native.gemini_records`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentlaunch.dir_watch import DirWatch, open_watch
from agentlaunch.events import CallUsage, Event, SessionStarted, Text
from agentlaunch.providers.gemini_home import GEMINI_DIR, SETTINGS, user_settings
from agentlaunch.providers.gemini_session import call_usage, session_calls, session_files
from agentlaunch.providers.native.gemini_ask import ask_user_question, asked_input, is_ask_user
from agentlaunch.providers.native.gemini_hooks import SAFE_ID, BadSettings, hooks_disabled, parse_settings, registry_dir
from agentlaunch.providers.native.gemini_records import (
    answer_text,
    call_state,
    gemini_asked,
    gemini_question,
    gemini_root,
    header_started,
    project_hash,
    session_header,
)
from agentlaunch.providers.native.hook_socket import HookReport, HookSocket
from agentlaunch.providers.native.jsonl_tail import JsonlTail
from agentlaunch.providers.native.source import NativeContext, NativeExtras, NativeItem, PromptTyped
from agentlaunch.providers.untrusted import BadUsage, items, label, opt_label, string
from agentlaunch.sinks import StateChanged

POLL = 2.0
"""Seconds between reads when inotify is not available."""
SETTLE = (0.3, 1.5)
"""After a change, two more reads (Gemini writes a record in more than one write)."""


HEADLESS_MARKERS = ("CI", "GITHUB_ACTIONS")
"""Gemini 0.61 runs headless whenever one of these is ``true`` (``isHeadlessMode``), at a terminal too: a
resumed interface (no ``-i PROMPT``) then waits for stdin and exits 42."""


SOCKET_NAME = "gemini-hooks.sock"
HOOK_STATES = {"BeforeAgent": "thinking", "BeforeTool": "tool", "AfterTool": "thinking"}
"""The state each of agentlaunch's Gemini hooks tells (SessionStart and Notification: see ``_report``)."""
CANCELLED = "Request cancelled."
UNSEEN = "Gemini's permission prompts will show as tool, not asking"


def native_extras(ctx: NativeContext) -> NativeExtras:
    """The source of a native Gemini launch: its session file, and the hook socket its settings' hooks report to.

    No flags: Gemini's own argv stays as it is. agentlaunch relays a real terminal here, so a ``CI=true`` (or
    ``GITHUB_ACTIONS=true``) inherited from the environment is turned to ``false`` for the interface; it would make
    Gemini take the terminal for a pipe.
    """
    env = {name: "false" for name in HEADLESS_MARKERS if ctx.env.get(name) == "true"}
    notices: list[str] = []
    sock: HookSocket | None = None
    named: Path | None = None
    home = ctx.env.get("GEMINI_CLI_HOME")
    if home and ctx.session_id and SAFE_ID.match(ctx.session_id):
        problem = hooks_problem(Path(home))
        if problem is not None:
            notices.append(problem)
        else:
            try:
                sock = HookSocket(ctx.runtime_dir / SOCKET_NAME)
                named = name_socket(Path(home), ctx.session_id, sock.path)
            except OSError as exc:
                if sock is not None:
                    sock.close()
                sock = None
                notices.append(f"Gemini's hooks are not followed ({exc}): {UNSEEN}")
    return NativeExtras(env=env, sources=[GeminiNativeSource(ctx, open_watch(), sock, named)], notices=notices)


def hooks_problem(home: Path) -> str | None:
    """Why Gemini will run no hook of agentlaunch's from ``home`` (None: it will): the user's settings say so."""
    settings = home / GEMINI_DIR / SETTINGS
    if settings.is_symlink():  # the generated file could not be made: the user's own is linked as it is
        _, problem = user_settings(settings)
        return f"your Gemini settings {os.readlink(settings)} {problem or 'could not be read'}: {UNSEEN}"
    try:
        data = parse_settings(settings.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, BadSettings):
        return None  # agentlaunch wrote it: Gemini reads what it reads
    if hooks_disabled(data):
        return f"your Gemini settings turn hooks off (hooksConfig.enabled: false): {UNSEEN}"
    return None


def name_socket(home: Path, session_id: str, socket_path: Path) -> Path:
    """Write the file through which the hooks of ``session_id`` find this launch's socket (mode 0600)."""
    folder = registry_dir(home)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / session_id
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(str(socket_path) + "\n")
    return path


class GeminiNativeSource:
    """The session file(s) of one native Gemini launch (see the module doc)."""

    def __init__(
        self,
        ctx: NativeContext,
        watch: DirWatch | None,
        sock: HookSocket | None = None,
        named: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ctx = ctx
        self.watch = watch
        self.sock = sock
        self.named = named  # the file naming this launch's socket to the hooks: removed at the end
        self.clock = clock
        self.hooks_heard = False
        self._ask_input: dict[str, Any] | None = None  # the input of the ask_user call under way (its BeforeTool)
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
        self._resumed_up = bool(ctx.resumed and self.tails)  # without hooks, a found session file says it is up
        self._watch_folders()
        if self.watch is None:
            self._schedule = [clock() + POLL]

    # -- NativeSource ------------------------------------------------------------------------
    def filenos(self) -> tuple[int, ...]:
        return (*((self.sock.fileno(),) if self.sock is not None else ()), *((self.watch.fd,) if self.watch is not None else ()))

    def deadline(self) -> float | None:
        return min(self._schedule) if self._schedule else None

    def read(self) -> list[NativeItem]:
        now = self.clock()
        self._schedule = [t for t in self._schedule if t > now]
        woken = self.watch.drain() if self.watch is not None else False
        self._watch_folders()
        self._find_files()
        reports = self.sock.receive() if self.sock is not None else []
        out: list[NativeItem] = []
        if self._resumed_up and self.sock is None:
            self._resumed_up = False
            out += self._set_state("waiting")  # no hooks: the resumed session's file is there, Gemini reads it
        for tail in list(self.tails.values()):
            for obj in tail.read():
                if isinstance(obj, dict):
                    out += self._line(obj)
        for report in reports:  # after the file: a report is newer than the lines written before it
            out += self._report(report)
        if woken or out:
            self._schedule = [now + d for d in SETTLE]
        if self.watch is None and not self._schedule:
            self._schedule = [now + POLL]
        return out

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()
        if self.sock is not None:
            self.sock.close()
        if self.named is not None:
            with contextlib.suppress(OSError):
                self.named.unlink()

    # -- hooks -------------------------------------------------------------------------------
    def _report(self, report: HookReport) -> list[NativeItem]:
        payload = report.payload
        session = opt_label(payload.get("session_id"))
        if self.session_id and session and session != self.session_id:
            return []  # another session's hook (the file names sessions, so this is only a guard)
        self.hooks_heard = True
        event = report.event
        if event == "SessionStart":
            # The interface is up; a new session's first prompt (BeforeAgent) follows at once.
            return self._set_state("waiting") if self.state is None else []
        if event == "Notification":
            kind = string(payload.get("notification_type"))
            if kind != "ToolPermission":
                return []
            if is_ask_user(payload):  # its own question to the person (gemini_ask)
                asked = ask_user_question(self._ask_input)
                return [asked, *self._set_state("asking", asked.asks)]
            return [gemini_asked(payload), *self._set_state("asking", gemini_question(payload))]
        out: list[NativeItem] = []
        if event == "BeforeTool":
            self._ask_input = asked_input(payload)
        if event == "BeforeAgent" and (prompt := string(payload.get("prompt"))):
            out.append(PromptTyped(prompt))
        state = HOOK_STATES.get(event)
        return out + (self._set_state(state) if state else [])

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
            head = session_header(path)
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
            return path.stat().st_mtime + 1 >= self.ctx.started_at and header_started(head) + 2 >= self.ctx.started_at
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
                out += self._set_state(call_state(message))
        elif kind == "user" and not replayed and not self.hooks_heard:
            out += self._set_state("thinking")
        elif kind == "info" and not replayed and self.hooks_heard and message.get("content") == CANCELLED:
            out += self._set_state("waiting")  # a denied tool or Esc: the turn is over (no hook says so)
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

    def _set_state(self, state: str | None, reason: str | None = None) -> list[NativeItem]:
        if state is None or (state == self.state and reason is None):
            return []
        if state == "tool" and self.state == "asking":
            return []  # the record of the call that asked, read after the prompt's report: the prompt still waits
        self.state = state
        return [StateChanged(state, reason)]
