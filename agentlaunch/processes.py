"""Is a process still the one we mean? Liveness checks for pids read from files anyone may have written.

A pid in a state file is input: ``true``, ``-1``, ``0`` or ``2**70`` must not
reach ``os.kill`` (``kill(-1, 0)`` asks about every process, a huge value
raises ``OverflowError``), and a pid reused by an unrelated process must not
count as the launch that wrote it (the kernel's start time tells them apart).
"""

from __future__ import annotations

import os

from agentlaunch.platform_support import proc_text, process_state

PID_MAX = 1 << 22  # Linux's PID_MAX_LIMIT; no system hands out larger pids


def valid_pid(pid: object) -> bool:
    """``pid`` is an integer a process could have (not a bool, not 0 or negative, not absurdly large)."""
    return isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid <= PID_MAX


def pid_alive(pid: object) -> bool:
    """A process with this pid exists (it may belong to another user)."""
    if not valid_pid(pid):
        return False
    try:
        os.kill(pid, 0)  # type: ignore[arg-type]  # valid_pid checked it is an int
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (the state first); None when it cannot be read (no
    ``/proc``: macOS)."""
    try:
        stat = proc_text(pid, "stat")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return stat[stat.rfind(")") + 2 :].split()


def process_start(pid: object) -> str | None:
    """The kernel's start time of ``pid`` (Linux ``/proc``), to tell a reused pid from ours; None elsewhere."""
    if not valid_pid(pid):
        return None
    fields = stat_fields(pid)  # type: ignore[arg-type]
    return fields[19] if fields is not None and len(fields) > 19 else None


def process_running(pid: object) -> bool:
    """``pid`` exists and is not a zombie (an exited child its parent has not reaped yet)."""
    if not pid_alive(pid):
        return False
    return process_state(pid) != "Z"  # type: ignore[arg-type]  # pid_alive checked it is a pid; ps where no /proc


def same_process(pid: object, start: object) -> bool:
    """``pid`` is running and, where start times are known, is the process that started at ``start``.

    Without a recorded start time the pid alone decides, except pid 1: init
    always runs, so a record naming it without a start time is not a launch's.
    """
    if not process_running(pid):
        return False
    if start is None:
        return pid != 1
    if not isinstance(start, str):
        return False
    current = process_start(pid)
    return current is None or current == start


def resolve_command(command: str) -> str:
    """The absolute path of ``command``, or ProviderMissing with an install hint."""
    import shutil

    from agentlaunch.errors import ProviderMissing

    found = shutil.which(command)
    if found is None:
        from pathlib import Path

        path = Path(command)
        if path.exists() and not os.access(path, os.X_OK):
            raise ProviderMissing(f"{command}: provider CLI is not executable")
        raise ProviderMissing(f"{command}: provider CLI not found on PATH")
    return found
