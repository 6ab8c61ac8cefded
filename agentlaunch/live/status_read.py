"""Reading and showing the live status records: the standard library only, for ``status --line`` and ``--json``.

The records are written by :class:`agentlaunch.live.status.StatusWriter`; this module reads them back
(checked field by field: a record is anyone's file), flags those whose agentlaunch process is gone as
stale, and formats them: :func:`one_line` is the one-line form (``status --line``, the pane title) and
:func:`json_rows` the rows of ``status --json``. It runs on every tmux status-bar refresh, so it imports
neither pathlib, dataclasses nor anything of agentlaunch's beyond the base helpers it names
(``tests/test_status_lean.py`` holds that).

A new record field is shown by ``--json`` as soon as :func:`checked_record` keeps it (an unknown plain
scalar is kept as is; a list or an object needs a line in :func:`checked_record`), and by ``--line`` once
:func:`one_line` appends it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from agentlaunch.fsutil import read_regular
from agentlaunch.processes import same_process, valid_pid
from agentlaunch.usage import plan_limits
from agentlaunch.usage.warmth import warmth_text
from agentlaunch.visible import visible

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    class PaneLike(Protocol):  # agentlaunch.live.tmux.DeadPane, agentlaunch.live.status_lean.Pane
        @property
        def agent(self) -> str: ...
        @property
        def session(self) -> str: ...
        @property
        def pane_id(self) -> str: ...
        @property
        def exit_status(self) -> int | None: ...
        @property
        def stopped(self) -> bool: ...


STATUS_DIR = "status"
STATE_DIR_ENV = "AGENTLAUNCH_STATE_DIR"
NEEDS_YOU = ("waiting", "asking", "stalled", "paused")  # the states in which the agent waits for the person
TIMED = (*NEEDS_YOU, "retrying")  # the states shown with how long they have lasted
TURN_STATES = ("thinking", "tool", "asking", "retrying", "stalled")  # a turn is under way
SETUP_DIR = "worktree-setup"  # agentlaunch.worktrees.setup_commands.SETUP_DIR
SETUP_LIMIT = 64 << 10  # agentlaunch.worktrees.setup_commands.RECORD_LIMIT
RECORD_LIMIT = 256 << 10  # a record is about 1 KiB; a larger file is not one
MAX_COUNT = 1 << 53  # a count at or above this is not one agentlaunch wrote


def status_folder() -> str:
    """``<state dir>/status`` as text, as :func:`agentlaunch.paths.state_dir` finds it.

    The common cases are computed here (``$AGENTLAUNCH_STATE_DIR``; on Linux without ``$XDG_STATE_HOME``,
    ``~/.local/state/agentlaunch``); any other asks platformdirs, through :mod:`agentlaunch.paths`.
    """
    named = os.environ.get(STATE_DIR_ENV)
    if named:
        return os.path.join(os.path.expanduser(named), STATUS_DIR)
    home = os.environ.get("HOME", "")
    if sys.platform == "linux" and not os.environ.get("XDG_STATE_HOME", "").strip() and home.startswith("/"):
        return os.path.join(home, ".local", "state", "agentlaunch", STATUS_DIR)
    from agentlaunch import paths

    return os.fspath(paths.state_dir() / STATUS_DIR)


def _n(value: int) -> str:
    return f"{value:,}"


STATES = ("starting", "waiting", "thinking", "tool", "retrying", "asking", "stalled", "paused", "exited")
"""The states a launch reports; ``asking`` (a permission prompt or a question waits) and ``stalled`` (its turn has
heard nothing from the CLI for ``stall_timeout``) mean a person is needed; so does ``paused`` (a budget's
``on_spent: pause``: its ``state_reason`` is ``budget``, shown ``paused: budget``)."""
ASKING = "asking"
ASKING_SHOWN = "ASKING: needs you"
"""How ``asking`` reads in one-line and table views: it must stand out in a row of panes."""
STALLED_SHOWN = "STALLED: needs you"
DONE = "done"
"""How ``waiting`` reads when the agent's last turn ended and nothing came since (``"done": true``)."""
REASON_CHARS = 80  # the cause shown after ``retrying``, at most


def shown_state(state: str, record: dict[str, Any] | None = None) -> str:
    """The state as views print it: ``asking`` and ``stalled`` in capitals with what they mean, ``waiting`` after a
    finished turn as ``done``, ``retrying`` with its cause (``retrying (529 overloaded, attempt 3/10)``)."""
    if state == ASKING:
        return ASKING_SHOWN
    if state == "stalled":
        return STALLED_SHOWN
    record = record or {}
    if state == "paused":
        reason = record.get("state_reason")
        return f"paused: {reason[:REASON_CHARS]}" if isinstance(reason, str) and reason else "paused"
    if state == "waiting" and record.get("done") is True:
        return DONE
    reason = record.get("state_reason")
    if state in ("retrying", "waiting") and isinstance(reason, str) and reason:
        return f"{state} ({reason[:REASON_CHARS]})"  # the cause of a retry loop; why the last turn ended (it failed)
    return state


def waited(record: dict[str, Any], now: datetime | None) -> str | None:
    """How long a ``waiting`` or ``asking`` agent has been so: ``for 3m12s`` at ``now``, else ``since 11:42``."""
    if record.get("stale") or record.get("state") not in TIMED or not isinstance(record.get("state_since"), str):
        return None
    try:
        since = datetime.fromisoformat(record["state_since"])
    except ValueError:
        return None
    if since.tzinfo is None:
        return None
    if now is None:  # a pane title is written once per state: a clock time stays true
        return f"since {since.astimezone():%H:%M}"
    return f"for {duration((now - since).total_seconds())}"


def duration(seconds: float) -> str:
    """``45s``, ``5m00s``, ``2h05m``: how long a state has lasted, as every view says it."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    if hours:
        return f"{hours}h{rest // 60:02d}m"
    return f"{rest // 60}m{rest % 60:02d}s" if rest >= 60 else f"{rest}s"


def one_line(record: dict[str, Any], now: datetime | None = None, *, warmth: bool = True) -> str:
    """``demo · waiting · ctx 12.3% · 40,211 to compaction · $0.0123 · 5h 42% · resets 18:20 · cache warm 4m12s · for 3m12s``:
    for tmux and prompts (the plan's limits only for a subscription, which the CLI reports them for).

    The last part, for an agent ``waiting`` or ``asking``, says how long at ``now`` (``status --line``),
    or since when without ``now`` (the pane title, written once per state). A launch that is ``asking``
    reads ``demo · ASKING: needs you · …``. ``warmth=False`` leaves the cache's countdown out: the pane
    border computes it from the expiry itself (:data:`agentlaunch.live.tmux.BORDER_FORMAT`), since a
    title written once would keep saying "warm" after the cache expired.
    """
    parts = [str(record.get("agent", "?")), shown_state(str(record.get("state", "?")), record)]
    if record.get("stale"):
        parts[1] = "stale"
    percent = record.get("percent")
    if _number(percent) and record.get("window_source") != "observed":
        parts.append(f"ctx {percent:.1f}%")
    elif _count(record.get("context")) and record["context"]:
        parts.append(f"ctx {_n(record['context'])}")
    left = record.get("to_compaction")
    if _count(left):
        parts.append(f"{_n(left)} to compaction" if left > 0 else "past compaction threshold")
    cost = record.get("cost")
    if isinstance(cost, str) and cost:
        parts.append(cost)
    if limits := plan_limits.limits_text(record, now or datetime.now(UTC)):
        parts.append(limits)
    warm = warmth_text(record, now or datetime.now(UTC)) if warmth else None
    if warm:
        parts.append(warm)
    if (how_long := waited(record, now)) is not None:
        parts.append(how_long)
    return visible(" · ".join(parts))  # a status bar is a terminal: no escape from a record reaches it


class StatusRecord:
    """One record as read back, with whether its agentlaunch process is gone."""

    __slots__ = ("data", "file", "stale")

    def __init__(self, path: str | os.PathLike[str], data: dict[str, Any], stale: bool) -> None:
        self.file = os.fspath(path)
        self.data = data
        self.stale = stale

    @property
    def path(self) -> Path:
        from pathlib import Path

        return Path(self.file)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StatusRecord):
            return NotImplemented
        return (self.file, self.data, self.stale) == (other.file, other.data, other.stale)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was

    def __repr__(self) -> str:
        return f"StatusRecord(path={self.file!r}, data={self.data!r}, stale={self.stale!r})"

    @property
    def agent(self) -> str:
        return str(self.data.get("agent", "?"))

    @property
    def state(self) -> str:
        return "stale" if self.stale else str(self.data.get("state", "?"))

    def as_dict(self) -> dict[str, Any]:
        return {**self.data, "stale": self.stale}

    def line(self, now: datetime | None = None) -> str:
        return one_line(self.as_dict(), now)


def is_stale(data: dict[str, Any]) -> bool:
    """The record's agentlaunch process no longer exists (or its pid now belongs to another process).

    Whatever ``pid`` holds (``true``, ``-1``, ``2**70``, a string) it never reaches ``os.kill`` unchecked:
    anything that cannot be a running launch's pid makes the record stale.
    """
    return not same_process(data.get("pid"), data.get("pid_start") or None)


_TEXT_FIELDS = ("agent", "display", "provider", "model", "session_id", "working_dir", "state", "pid_start", "started",
                "updated", "cost", "window_source", "state_since", "control", "state_reason", "fork_of")  # fmt: skip
_COUNT_FIELDS = ("pid", "cli_pid", "version", "turns", "calls", "context", "window", "to_compaction", "priced_calls",
                 "unpriced_calls")  # fmt: skip


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_COUNT < value < MAX_COUNT


def _number(value: object) -> TypeGuard[int | float]:
    return _count(value) or (isinstance(value, float) and math.isfinite(value) and abs(value) < MAX_COUNT)


_CACHE_TEXT = ("expires_at",)
_CACHE_COUNTS = ("ttl_s", "context")
_CACHE_NUMBERS = ("next_turn_cold_usd", "next_turn_warm_usd")


def _checked_cache(value: object) -> dict[str, Any] | None:
    """The record's ``cache`` with only the fields of the right type (None when it is not an object)."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {}
    for key, item in value.items():
        if key in _CACHE_TEXT:
            ok = isinstance(item, str)
        elif key in _CACHE_COUNTS:
            ok = _count(item)
        elif key in _CACHE_NUMBERS:
            ok = item is None or _number(item)
        else:
            ok = False  # a field agentlaunch never writes: nothing shows it
        if ok:
            kept[key] = item
    return kept


def checked_setup(value: object) -> dict[str, Any] | None:
    """A record's ``worktree_setup``, each field of its type (None when it is not an object)."""
    if not isinstance(value, dict):
        return None
    ok, code = value.get("ok"), value.get("exit")
    return {
        "ok": ok if isinstance(ok, bool) else None,
        "exit": code if _count(code) else None,
        "command": value["command"] if isinstance(value.get("command"), str) else None,
        "log": value["log"] if isinstance(value.get("log"), str) else None,
    }


def checked_record(data: dict[str, Any]) -> dict[str, Any]:
    """A record read from a file anyone could have written, keeping only the fields whose type is right.

    Known fields of the wrong type or out of range (``pid: 2**70``, ``context: "x"``,
    ``usage: [..]``) are left out, as are unknown fields that are not plain
    scalars, so the table, ``--line`` and ``--json`` see only what they can show.
    """
    kept: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TEXT_FIELDS:
            ok = value is None or isinstance(value, str)
        elif key in _COUNT_FIELDS:
            ok = value is None or _count(value)
        elif key in ("percent", "cost_usd"):
            ok = value is None or _number(value)
        elif key in ("resumed", "done"):
            ok = isinstance(value, bool)
        elif key == "usage":
            ok = isinstance(value, dict)
            value = {k: v for k, v in value.items() if _count(v)} if ok else None
        elif key == "cache":  # the prompt cache's warmth: null before the first call
            value = _checked_cache(value)
            ok = True
        elif key == "rate_limits":  # the plan's windows: null with an API key
            value = plan_limits.checked(value)
            ok = True
        elif key == "worktree_setup":  # how the worktree's setup went: {"ok", "exit", "command", "log"}
            value = checked_setup(value)
            ok = value is not None
        else:
            ok = value is None or isinstance(value, str | bool) or _number(value)
        if ok:
            kept[key] = value
    return kept


def _read_record(path: str) -> dict[str, Any] | None:
    """The record in ``path``, or None when it is gone, not a regular file, too large or not a JSON object."""
    try:
        data = json.loads(read_regular(path, RECORD_LIMIT).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None  # gone (its session just ended), a FIFO, a huge file, not JSON, nested 10,000 deep
    return checked_record(data) if isinstance(data, dict) else None


def read_records(directory: str | os.PathLike[str] | None = None, *, clean: bool = True) -> list[StatusRecord]:
    """Every record, sorted by agent then start; stale ones are flagged and (``clean``) removed.

    Never blocks and never raises on what it finds: a FIFO named ``*.json``,
    a record nested 10,000 deep or with an impossible pid is skipped or shown
    stale, and the records around it are read and cleaned as usual.
    """
    folder = os.fspath(directory) if directory is not None else status_folder()
    records: list[StatusRecord] = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json") and len(n) > 5 and not n.startswith("."))
    except OSError:
        return []
    for name in names:
        path = os.path.join(folder, name)
        data = _read_record(path)
        if data is None:
            continue
        stale = is_stale(data)
        if stale and clean:
            with contextlib.suppress(OSError):
                os.unlink(path)
        records.append(StatusRecord(path, data, stale))
    records.sort(key=lambda r: (r.agent, str(r.data.get("started", "")), os.path.basename(r.file)))
    return records


def line_for(agent: str, directory: str | os.PathLike[str] | None = None) -> str:
    """The one-line status of ``agent``'s running session (the latest updated), or "" when none runs."""
    live = [r for r in read_records(directory, clean=False) if r.agent == agent and not r.stale]
    if not live:
        return ""
    latest = max(live, key=lambda r: str(r.data.get("updated", "")))
    line = latest.line(datetime.now(UTC))
    return line + (f" (+{len(live) - 1} more)" if len(live) > 1 else "")


FORK_MARK = "⑂"


def agent_label(record: StatusRecord, records: Sequence[StatusRecord]) -> str:
    """The agent's name for its own session; ``cx ⑂ 2`` for a fork (``fork_of`` set: ``agentlaunch fork``,
    ``run --fork``), 2 being its place among the agent's running sessions by start (the first is 1)."""
    if not record.data.get("fork_of"):
        return record.agent
    mine = sorted((r for r in records if r.agent == record.agent and not r.stale),
                  key=lambda r: (str(r.data.get("started") or ""), os.path.basename(r.file)))  # fmt: skip
    place = next((i for i, r in enumerate(mine, 1) if r.file == record.file), len(mine) + 1)
    return f"{record.agent} {FORK_MARK} {place}"


STOPPED_OPTION = "@agentlaunch_stopped"  # agentlaunch.live.life.STOPPED_OPTION: `stop` marks the pane it ends
BUDGET_EXIT = 6  # agentlaunch.errors.ExitCode.BUDGET: a budget stopped the agent


def stop_marked(mark: str, pid: int | str) -> bool:
    """Whether a pane's ``@agentlaunch_stopped`` value (``"PID AT"``) says `agentlaunch stop` ended the process the
    pane runs (or ran last), ``pid``. `stop` sets it before it signals, so no reader ever sees the pane dead and not
    yet marked; a mark left from an earlier process (the pane started again since) says nothing of this one."""
    words = mark.split()
    if not words:
        return False
    return len(words) == 1 or words[0] == str(pid)  # one word: an earlier version's mark (the time only)


def pane_state(pane: PaneLike) -> str:
    """What an agent whose pane is dead is: ``stopped`` (`agentlaunch stop`), ``budget stopped`` or ``dead``.
    ``status`` (table, ``--json``, ``--line``) and the deck's rows all say it with this."""
    if pane.stopped:
        return "stopped"
    return "budget stopped" if pane.exit_status == BUDGET_EXIT else "dead"


def dead_record(pane: PaneLike) -> dict[str, object]:
    """An agent whose pane is dead as ``status --json`` shows it beside the running ones (``dead``: false when it
    was stopped, by `agentlaunch stop` or its budget)."""
    state = pane_state(pane)
    return {
        "agent": pane.agent, "state": state.replace(" ", "-"), "exit_status": pane.exit_status,
        "tmux_session": pane.session, "pane": pane.pane_id, "stale": False, "dead": state == "dead",
    }  # fmt: skip


def dead_line(pane: PaneLike) -> str:
    """An agent whose pane is dead as ``status --line`` shows it."""
    where = f"tmux {pane.session} {pane.pane_id}"
    state = pane_state(pane)
    if state == "stopped":
        return f"{pane.agent} · stopped (agentlaunch stop) · agentlaunch restart {pane.agent} brings it back · {where}"
    if state == "budget stopped":
        return f"{pane.agent} · stopped by its budget · {where}"
    code = f" (exit {pane.exit_status})" if pane.exit_status is not None else ""
    return f"{pane.agent} · dead{code} · {where}"


class Setup:
    """A worktree setup's record as :class:`agentlaunch.worktrees.setup_commands.Setup` reads it (without dataclasses)."""

    __slots__ = ("agent", "command", "exit", "log", "ok", "pid", "pid_start", "worktree")

    def __init__(self, data: dict[str, Any]) -> None:
        self.agent, self.worktree, self.log = data["agent"], data["worktree"], data["log"]
        self.ok, self.exit, self.command = data.get("ok"), data.get("exit"), data.get("command")
        self.pid = data.get("pid") if valid_pid(data.get("pid")) else None
        self.pid_start = data.get("pid_start")

    @property
    def running(self) -> bool:
        """Still being run by a live process (else, with ``ok`` None, it was interrupted)."""
        return self.ok is None and same_process(self.pid, self.pid_start)

    def shown(self) -> dict[str, Any]:
        """What ``status --json`` carries: ``{"ok", "exit", "command", "log"}`` (ok null: running)."""
        ok = None if self.running else self.ok is True
        return {"ok": ok, "exit": self.exit, "command": self.command, "log": self.log}


def _setup(path: str) -> Setup | None:
    """The setup record in ``path``: None unless every field has its type (as ``worktree_setup`` parses it)."""
    try:
        data = json.loads(read_regular(path, SETUP_LIMIT).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("agent", "worktree", "log")):
        return None
    ok, code = data.get("ok"), data.get("exit")
    if ok not in (True, False, None) or not (code is None or (isinstance(code, int) and not isinstance(code, bool))):
        return None
    if any(data.get(k) is not None and not isinstance(data.get(k), str) for k in ("command", "pid_start", "started",
                                                                                     "finished")):  # fmt: skip
        return None
    return Setup(data)


def setups() -> list[Setup]:
    """Worktree setups that failed (their agent did not start) or run now, in a worktree still there, by agent then
    worktree: :func:`agentlaunch.worktrees.setup_commands.unfinished`'s answer, read on the standard library only."""
    folder = os.path.join(os.path.dirname(status_folder()), SETUP_DIR)
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return []
    found = [r for r in (_setup(os.path.join(folder, n)) for n in names) if r is not None]
    return sorted((r for r in found if r.ok is not True and os.path.isdir(r.worktree)), key=lambda r: (r.agent, r.worktree))


def setup_record(record: Setup) -> dict[str, object]:
    """A failed or running worktree setup as ``status --json`` shows it beside the running agents."""
    state = "setting-up" if record.running else "setup-failed"
    return {"agent": record.agent, "state": state, "working_dir": record.worktree, "worktree_setup": record.shown(),
            "stale": False, "dead": False}  # fmt: skip


def setup_line(record: Setup) -> str:
    """A failed or running worktree setup as ``status --line`` shows it."""
    if record.running:
        return f"{record.agent} · setting up its worktree: {record.command or ''} · log {record.log}"
    code = f" (exit {record.exit})" if record.exit is not None else ""
    return f"{record.agent} · worktree setup failed{code}: {record.command or ''} · log {record.log}"


def agent_line(agent: str, dead: Callable[[], Sequence[PaneLike]]) -> str:
    """``status --line AGENT``'s text: its running session's line, else its unfinished worktree setup's, else its dead
    pane's (``dead()`` asks tmux), else ""."""
    text = line_for(agent)
    if not text:  # not running: maybe its worktree setup failed (or runs), or it died in a tmux pane
        text = next((setup_line(s) for s in setups() if s.agent == agent), "")
    if not text:
        text = next((dead_line(p) for p in dead() if p.agent == agent), "")
    return text


def json_rows(records: list[StatusRecord], dead: Sequence[PaneLike]) -> list[dict[str, Any]]:
    """The rows of ``status --json``: every record as read (with ``stale``), every unfinished worktree setup, then
    every dead pane."""
    return [r.as_dict() for r in records] + [setup_record(s) for s in setups()] + [dead_record(p) for p in dead]


def json_text(rows: list[dict[str, Any]]) -> str:
    """``status --json``'s output (without the final newline ``print`` adds)."""
    return json.dumps(rows, indent=2, ensure_ascii=False)
