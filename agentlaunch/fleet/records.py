"""The one reader of the live status records, ``<state dir>/status/<pid>.json``: checked field by field.

The records are written by :class:`agentlaunch.live.status.StatusWriter`; this module reads them back (a record
is anyone's file: every field is checked for its type), flags those whose agentlaunch process is gone as stale
(:func:`agentlaunch.fleet.states.is_stale`), and says why a ``*.json`` of the folder is no record. It runs on
every tmux status-bar refresh: the standard library only, without pathlib, dataclasses nor typing.

A new record field is shown by ``status --json`` as soon as :func:`checked_record` keeps it (an unknown plain
scalar is kept as is; a list or an object needs a line in :func:`checked_record`).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from json import loads
from typing import TYPE_CHECKING

from agentlaunch.fleet.states import STALE, is_stale
from agentlaunch.fsutil import read_regular
from agentlaunch.usage import plan_limits

if TYPE_CHECKING:  # only mypy reads these
    from pathlib import Path
    from typing import Any, TypeGuard

STATUS_DIR = "status"
STATE_DIR_ENV = "AGENTLAUNCH_STATE_DIR"
RECORD_LIMIT = 256 << 10  # a record is about 1 KiB; a larger file is not one
MAX_COUNT = 1 << 53  # a count at or above this is not one agentlaunch wrote


def state_folder() -> str:
    """``<state dir>`` as text, as :func:`agentlaunch.paths.state_dir` finds it."""
    return _folder(STATE_DIR_ENV, "XDG_STATE_HOME", (".local", "state"))


def config_folder() -> str:
    """``<config dir>`` as text, as :func:`agentlaunch.paths.config_dir` finds it."""
    return _folder("AGENTLAUNCH_CONFIG_DIR", "XDG_CONFIG_HOME", (".config",))


def _folder(variable: str, xdg: str, linux_default: tuple[str, ...]) -> str:
    """The folder ``$VARIABLE`` names, else the platform's, without importing :mod:`pathlib`.

    The common cases are computed here (the variable; on Linux without ``$XDG_…``, ``~/<linux_default>/agentlaunch``);
    any other asks platformdirs, through :mod:`agentlaunch.paths`.
    """
    named = os.environ.get(variable)
    if named:
        return os.path.expanduser(named)
    home = os.environ.get("HOME", "")
    if sys.platform == "linux" and not os.environ.get(xdg, "").strip() and home.startswith("/"):
        return os.path.join(home, *linux_default, "agentlaunch")
    from agentlaunch import paths

    return os.fspath(paths.config_dir() if xdg == "XDG_CONFIG_HOME" else paths.state_dir())


def status_folder(state_dir: str | os.PathLike[str] | None = None) -> str:
    """``<state dir>/status`` as text: where every running launch keeps its record."""
    return os.path.join(os.fspath(state_dir) if state_dir is not None else state_folder(), STATUS_DIR)


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

    @property
    def name(self) -> str:
        """The record's file name (``<pid>.json``): who it is among the records."""
        return os.path.basename(self.file)

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
        return STALE if self.stale else str(self.data.get("state", "?"))

    @property
    def session_id(self) -> str | None:
        sid = self.data.get("session_id")
        return sid if isinstance(sid, str) else None

    def as_dict(self) -> dict[str, Any]:
        return {**self.data, "stale": self.stale}


_TEXT_FIELDS = (
    "agent",
    "display",
    "provider",
    "model",
    "session_id",
    "working_dir",
    "state",
    "pid_start",
    "started",
    "updated",
    "cost",
    "window_source",
    "state_since",
    "control",
    "state_reason",
    "state_source",
    "fork_of",
)
_COUNT_FIELDS = (
    "pid",
    "cli_pid",
    "version",
    "turns",
    "calls",
    "context",
    "window",
    "to_compaction",
    "priced_calls",
    "unpriced_calls",
)


def is_count(value: object) -> TypeGuard[int]:
    """An integer agentlaunch could have written (not a bool, not absurdly large)."""
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_COUNT < value < MAX_COUNT


def is_number(value: object) -> TypeGuard[int | float]:
    """A count, or a finite float of the same range."""
    return is_count(value) or (isinstance(value, float) and math.isfinite(value) and abs(value) < MAX_COUNT)


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
            ok = is_count(item)
        elif key in _CACHE_NUMBERS:
            ok = item is None or is_number(item)
        else:
            ok = False  # a field agentlaunch never writes: nothing shows it
        if ok:
            kept[key] = item
    return kept


_FLAT_TEXT = {  # the objects of texts (and one count) a record holds: the CLI's own report, a disagreement
    "cli_report": ("state", "kind", "msg", "title", "app"),
    "disagreement": ("cli", "state", "source", "at"),
}


def _checked_flat(key: str, value: object) -> dict[str, Any] | None:
    """``cli_report`` or ``disagreement`` with each field of its type (None when it is not an object)."""
    if not isinstance(value, dict):
        return None
    kept: dict[str, Any] = {k: value.get(k) if isinstance(value.get(k), str) else None for k in _FLAT_TEXT[key]}
    if key == "cli_report":
        kept["progress"] = value.get("progress") if is_count(value.get("progress")) else None
    return kept


def checked_setup(value: object) -> dict[str, Any] | None:
    """A record's ``worktree_setup``, each field of its type (None when it is not an object)."""
    if not isinstance(value, dict):
        return None
    ok, code = value.get("ok"), value.get("exit")
    return {
        "ok": ok if isinstance(ok, bool) else None,
        "exit": code if is_count(code) else None,
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
            ok = value is None or is_count(value)
        elif key in ("percent", "cost_usd"):
            ok = value is None or is_number(value)
        elif key in ("resumed", "done"):
            ok = isinstance(value, bool)
        elif key == "usage":
            ok = isinstance(value, dict)
            value = {k: v for k, v in value.items() if is_count(v)} if ok else None
        elif key == "cache":  # the prompt cache's warmth: null before the first call
            value = _checked_cache(value)
            ok = True
        elif key == "rate_limits":  # the plan's windows: null with an API key
            value = plan_limits.checked(value)
            ok = True
        elif key in _FLAT_TEXT:
            value = _checked_flat(key, value)
            ok = True
        elif key == "worktree_setup":  # how the worktree's setup went: {"ok", "exit", "command", "log"}
            value = checked_setup(value)
            ok = value is not None
        else:
            ok = value is None or isinstance(value, str | bool) or is_number(value)
        if ok:
            kept[key] = value
    return kept


def read_record(path: str) -> tuple[dict[str, Any] | None, str]:
    """The record in ``path`` and ``""``; or None and why it is none (not a regular file, too large, not JSON, not a
    JSON object; ``""`` when the file is gone)."""
    try:
        data = loads(read_regular(path, RECORD_LIMIT).decode("utf-8"))
    except FileNotFoundError:  # its session ended between the folder's listing and this read
        return None, ""
    except OSError as exc:  # gone (its session just ended), a FIFO, a huge file
        return None, f"cannot be read: {exc.strerror or exc}"
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested 10,000 deep
        return None, "is not JSON"
    return (checked_record(data), "") if isinstance(data, dict) else (None, "is not a JSON object")


def is_record_name(name: str) -> bool:
    """A name in the status folder a record may have (``*.json``, not hidden)."""
    return name.endswith(".json") and len(name) > 5 and not name.startswith(".")


def read_folder(
    directory: str | os.PathLike[str] | None = None, *, clean: bool = True
) -> tuple[list[StatusRecord], list[tuple[str, str]]]:
    """Every record, sorted by agent then start, stale ones flagged and (``clean``) removed; and every file of the
    folder that is no record, with why (``("109.json", "is not JSON")``), by name.

    Never blocks and never raises on what it finds: a FIFO named ``*.json``,
    a record nested 10,000 deep or with an impossible pid is skipped or shown
    stale, and the records around it are read and cleaned as usual.
    """
    folder = os.fspath(directory) if directory is not None else status_folder()
    records: list[StatusRecord] = []
    unreadable: list[tuple[str, str]] = []
    try:
        names = sorted(n for n in os.listdir(folder) if is_record_name(n))
    except OSError:
        return [], []
    for name in names:
        path = os.path.join(folder, name)
        data, why = read_record(path)
        if data is None:
            if why:
                unreadable.append((name, why))
            continue
        stale = is_stale(data)
        if stale and clean:
            with contextlib.suppress(OSError):
                os.unlink(path)
        records.append(StatusRecord(path, data, stale))
    records.sort(key=lambda r: (r.agent, str(r.data.get("started", "")), r.name))
    return records, unreadable


def read_records(directory: str | os.PathLike[str] | None = None, *, clean: bool = True) -> list[StatusRecord]:
    """Every record (:func:`read_folder`'s first half)."""
    return read_folder(directory, clean=clean)[0]


def folder_names(directory: str | os.PathLike[str]) -> frozenset[str]:
    """The names in the status folder now (none when it cannot be listed): a record came or went when they change."""
    try:
        return frozenset(os.listdir(directory))
    except OSError:
        return frozenset()


def folder_mtime(directory: str | os.PathLike[str]) -> float:
    """The status folder's mtime (0 when there is none): a record written, replaced or removed changes it."""
    try:
        return os.stat(directory).st_mtime
    except OSError:
        return 0.0
