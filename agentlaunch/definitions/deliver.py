"""Writing the instructions file into the working directory without ever clobbering the user's own.

agentlaunch keeps a ledger (``delivered.json`` in the state directory) of
every file it wrote: path, sha256, agent, and the launches holding it (each
by pid and kernel start time, released only by itself). A file at the target
that the ledger does not know, or whose bytes no longer match, is the user's
and is never replaced (``force`` moves it aside to a timestamped backup first,
and puts it back if the new file cannot be written); a symlink, dangling or
not, counts as the user's file too. A file held by another agent's running
launch is a conflict. Files are written with the permissions the umask
allows, and a file that is replaced keeps its mode. A file that cannot be
read, moved aside or written, and a ledger that cannot be kept, are state
errors (exit 5), naming the path and the system's reason.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentlaunch.datarecord import datarecord
from agentlaunch.errors import RefusedOverwrite, StateError
from agentlaunch.fsutil import FileTooLarge, NotRegularFile, read_regular, write_atomic
from agentlaunch.processes import process_start, same_process, valid_pid

LEDGER = "delivered.json"
LEDGER_LIMIT = 16 << 20  # about 80,000 files delivered; a larger ledger is not ours
EXISTING_LIMIT = 64 << 20  # an existing file larger than this cannot be one agentlaunch wrote
__all__ = ["Delivery", "Ledger", "deliver", "release", "sha256"]


@datarecord(frozen=True)
class Delivery:
    path: Path
    changed: bool
    backup: Path | None = None
    previous_agent: str | None = None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Ledger:
    """The record of files agentlaunch wrote, guarded by a lock file."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / LEDGER

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """Yield the ledger's entries under an exclusive lock; save them on exit."""
        lock_path = self.state_dir / (LEDGER + ".lock")
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            # O_NONBLOCK: a FIFO put in the lock's place must fail here, not wait for a reader.
            fd = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise StateError(f"{self.state_dir}: state directory is not usable ({exc.strerror})") from None
        lock = os.fdopen(fd, "a")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            lock.close()
            raise StateError(f"{lock_path}: not a regular file; move it away")
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
            except OSError as exc:
                raise StateError(f"{lock.name}: cannot lock the delivery ledger ({exc.strerror})") from None
            entries = self._read()
            before = json.dumps(entries, sort_keys=True)
            yield entries
            if json.dumps(entries, sort_keys=True) != before:
                try:
                    write_atomic(self.path, json.dumps(entries, indent=1, sort_keys=True).encode())
                except OSError as exc:
                    raise StateError(f"{self.path}: cannot save ({exc.strerror})") from None

    def _read(self) -> dict[str, Any]:
        """The entries, each an object: anything else in the file (someone else wrote it) is left out."""
        try:
            data = json.loads(read_regular(self.path, LEDGER_LIMIT).decode("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
            raise StateError(f"{self.path}: unreadable ledger ({why}); move it away to start a new one") from None
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(v, dict)}


def _holds(entry: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The launches that hold the entry's file and still run (an older ledger's single ``pid`` counts as one)."""
    if entry is None:
        return []
    found: list[dict[str, Any]] = []
    listed = entry.get("holds")
    for hold in listed if isinstance(listed, list) else []:
        if isinstance(hold, dict) and valid_pid(hold.get("pid")):
            found.append({"pid": hold["pid"], "start": hold.get("start") if isinstance(hold.get("start"), str) else None})
    legacy = entry.get("pid")
    if valid_pid(legacy) and all(h["pid"] != legacy for h in found):
        found.append({"pid": legacy, "start": None})
    return [h for h in found if same_process(h["pid"], h["start"])]


def _this_launch() -> dict[str, Any]:
    return {"pid": os.getpid(), "start": process_start(os.getpid())}


def _backup_name(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{stamp}.{n}.bak")
        n += 1
    return candidate


def _existing(path: Path) -> bytes | str | None:
    """What is at ``path`` now: its bytes, None when nothing is, or (a string saying what it is) something
    agentlaunch cannot have written: a symlink, dangling or not, or a file too large. A directory, FIFO or
    device there is a StateError, found without opening it."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink():
        return "a symlink"
    try:
        return read_regular(path, EXISTING_LIMIT)
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        # Never opened (a FIFO would block): a directory, FIFO or device here is a state to fix, not a file to replace.
        reason = os.strerror(errno.EISDIR) if exc.kind == "directory" else f"it is a {exc.kind}, not a regular file"
        raise StateError(f"{path}: cannot read the existing file ({reason})") from None
    except FileTooLarge:
        return "a file larger than any agentlaunch writes"
    except OSError as exc:
        raise StateError(f"{path}: cannot read the existing file ({exc.strerror})") from None


def _put_back(backup: Path | None, path: Path) -> str:
    """After a failed write: move the user's file back from its backup, and say where it is."""
    if backup is None:
        return "nothing was written"
    try:
        if not os.path.lexists(path):
            os.replace(backup, path)
            return f"nothing was written, and your {path.name} is back in place"
    except OSError:
        pass
    return f"nothing was written; your own {path.name} is in {backup}"


def deliver(path: Path, text: str, agent: str, state_dir: Path, *, force: bool = False, hold: bool = False) -> Delivery:
    """Write ``text`` to ``path`` for ``agent``, only when its bytes change.

    ``hold`` marks the file as held by this launch (its pid and start time)
    until :func:`release` by the same launch; another agent's launch is
    refused while any holder runs.
    """
    data = text.encode("utf-8")
    key = str(path)
    backup: Path | None = None
    with Ledger(state_dir).locked() as entries:
        entry = entries.get(key)
        previous_agent = None
        current = _existing(path)
        backup_mode: int | None = None
        if current is not None:
            ours = isinstance(current, bytes) and entry is not None and entry.get("sha256") == sha256(current)
            if not ours and current != data:
                why = "was edited since agentlaunch wrote it" if entry else "was not written by agentlaunch"
                if isinstance(current, str):
                    why = f"is {current}, not a file agentlaunch wrote"
                if not force:
                    raise RefusedOverwrite(
                        f"{path} {why}; it is yours and was left untouched",
                        hint="move it away, or pass --force to back it up beside itself and write the agent's instructions",
                    )
                backup = _backup_name(path)
                if isinstance(current, bytes):
                    backup_mode = stat.S_IMODE(os.lstat(path).st_mode)  # the new file keeps the mode of the one it replaces
                try:
                    os.replace(path, backup)
                except OSError as exc:
                    raise StateError(
                        f"{path}: cannot move it aside to {backup.name} ({exc.strerror}); nothing was written"
                    ) from None
                current = None
            elif ours and entry is not None and entry.get("agent") != agent:
                others = [h for h in _holds(entry) if h["pid"] != os.getpid()]
                if others:
                    holder = others[-1]["pid"]
                    raise RefusedOverwrite(
                        f"{path} holds the instructions of agent {entry.get('agent')!r}, "
                        f"whose launch (pid {holder}) is still running; two agents cannot share one instructions file",
                        hint="run this agent in another working directory, or end the other one first",
                    )
                previous_agent = entry.get("agent")
        changed = current != data
        if changed:
            try:
                write_atomic(path, data, mode=backup_mode)
            except OSError as exc:
                where = _put_back(backup, path)
                raise StateError(f"{path.parent}: cannot write {path.name} there ({exc.strerror}); {where}") from None
        if changed or entry is not None or current is None:
            # Other running launches of this agent keep their holds; each is released only by its own launch.
            holds = [h for h in _holds(entry) if entry is not None and entry.get("agent") == agent and h != _this_launch()]
            if hold:
                holds.append(_this_launch())
            entries[key] = {
                "agent": agent,
                "sha256": sha256(data),
                "holds": holds,
                "pid": holds[-1]["pid"] if holds else None,  # the latest holder, as older versions read it
                "written": entry.get("written") if entry and not changed else datetime.now(UTC).isoformat(),
            }
    return Delivery(path=path, changed=changed, backup=backup, previous_agent=previous_agent)


def release(path: Path, state_dir: Path) -> None:
    """Forget that this launch holds ``path`` (it ended); other launches' holds stay, and holders gone are dropped."""
    with Ledger(state_dir).locked() as entries:
        entry = entries.get(str(path))
        if entry is None:
            return
        holds = [h for h in _holds(entry) if h != _this_launch()]
        entry["holds"] = holds
        entry["pid"] = holds[-1]["pid"] if holds else None
