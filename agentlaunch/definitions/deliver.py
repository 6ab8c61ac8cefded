"""Writing the instructions file into the working directory without ever clobbering the user's own.

agentlaunch keeps a ledger (``delivered.json`` in the state directory) of
every file it wrote: path, sha256, agent, and the pid of the launch holding
it. A file at the target that the ledger does not know, or whose bytes no
longer match, is the user's and is never replaced (``force`` moves it aside
to a timestamped backup first). A file held by another agent's running
launch is a conflict. A file that cannot be read, moved aside or written, and
a ledger that cannot be kept, are state errors (exit 5), naming the path and
the system's reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentlaunch.errors import RefusedOverwrite, StateError

LEDGER = "delivered.json"


@dataclass(frozen=True)
class Delivery:
    path: Path
    changed: bool
    backup: Path | None = None
    previous_agent: str | None = None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def keep_newest(folder: Path, keep: int, pattern: str = "*.json") -> None:
    """Delete all but the ``keep`` most recently written files matching ``pattern`` in ``folder``.

    For the caches that gain a file per new key (what the schema accepted, the
    launch plans): they stay small without an expiry to configure. A file lost
    here only costs the next launch that would have used it its shortcut.
    """
    try:
        files = [(entry.stat().st_mtime_ns, entry) for entry in folder.glob(pattern)]
    except OSError:
        return
    if len(files) <= keep:
        return
    files.sort(key=lambda pair: pair[0], reverse=True)
    for _, old in files[keep:]:
        with contextlib.suppress(OSError):
            old.unlink()


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Ledger:
    """The record of files agentlaunch wrote, guarded by a lock file."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.path = state_dir / LEDGER

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """Yield the ledger's entries under an exclusive lock; save them on exit."""
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            lock = open(self.state_dir / (LEDGER + ".lock"), "a")  # noqa: SIM115
        except OSError as exc:
            raise StateError(f"{self.state_dir}: state directory is not usable ({exc.strerror})") from None
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
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StateError(f"{self.path}: unreadable ledger ({exc}); move it away to start a new one") from None
        return data if isinstance(data, dict) else {}


def _backup_name(path: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{stamp}.{n}.bak")
        n += 1
    return candidate


def deliver(path: Path, text: str, agent: str, state_dir: Path, *, force: bool = False, hold: bool = False) -> Delivery:
    """Write ``text`` to ``path`` for ``agent``, only when its bytes change.

    ``hold`` marks the file as held by this process (a running launch) until
    :func:`release`; another agent's launch is then refused.
    """
    data = text.encode("utf-8")
    key = str(path)
    backup: Path | None = None
    with Ledger(state_dir).locked() as entries:
        entry = entries.get(key)
        previous_agent = None
        try:
            current: bytes | None = path.read_bytes()
        except FileNotFoundError:
            current = None
        except OSError as exc:
            raise StateError(f"{path}: cannot read the existing file ({exc.strerror})") from None
        if current is not None:
            ours = entry is not None and entry.get("sha256") == sha256(current)
            if not ours and current != data:
                why = "was edited since agentlaunch wrote it" if entry else "was not written by agentlaunch"
                if not force:
                    raise RefusedOverwrite(
                        f"{path} {why}; it is yours and was left untouched",
                        hint="move it away, or pass --force to back it up beside itself and write the agent's instructions",
                    )
                backup = _backup_name(path)
                try:
                    os.replace(path, backup)
                except OSError as exc:
                    raise StateError(
                        f"{path}: cannot move it aside to {backup.name} ({exc.strerror}); nothing was written"
                    ) from None
                current = None
            elif ours and entry is not None and entry.get("agent") != agent:
                holder = entry.get("pid")
                if holder != os.getpid() and pid_alive(holder):
                    raise RefusedOverwrite(
                        f"{path} holds the instructions of agent {entry.get('agent')!r}, "
                        f"whose launch (pid {holder}) is still running; two agents cannot share one instructions file",
                        hint="run this agent in another working directory, or end the other one first",
                    )
                previous_agent = entry.get("agent")
        changed = current != data
        if changed:
            try:
                write_atomic(path, data)
            except OSError as exc:
                raise StateError(f"{path.parent}: cannot write {path.name} there ({exc.strerror}); nothing was written") from None
        if changed or entry is not None or current is None:
            entries[key] = {
                "agent": agent,
                "sha256": sha256(data),
                "pid": os.getpid() if hold else None,
                "written": entry.get("written") if entry and not changed else datetime.now(UTC).isoformat(),
            }
    return Delivery(path=path, changed=changed, backup=backup, previous_agent=previous_agent)


def release(path: Path, state_dir: Path) -> None:
    """Forget that this process holds ``path`` (the launch ended)."""
    with Ledger(state_dir).locked() as entries:
        entry = entries.get(str(path))
        if entry and entry.get("pid") == os.getpid():
            entry["pid"] = None
