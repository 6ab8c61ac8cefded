"""``worktree_setup:``: commands run once in an agent's new worktree, their log, and how they ended.

An agent.yaml may list commands (``cp "$AGENTLAUNCH_REPO/.env" .env``, ``npm ci``)
to run when its worktree is made, before its CLI starts. Each runs with
``/bin/sh -c`` in the worktree, one after another, stdin closed, with
agentlaunch's environment plus ``AGENTLAUNCH_AGENT``, ``AGENTLAUNCH_REPO``
(the repository's main work tree), ``AGENTLAUNCH_WORKTREE`` and
``AGENTLAUNCH_BRANCH``; the first that fails ends the setup. Their output goes
to one log, ``<state dir>/worktree-setup/<agent>-<16 hex of the worktree's
path>.log``, and how it went to the record beside it (``.json``): that is what
``status`` and the status record show.

It runs when the worktree is made, and again at a later start only while
its last run did not succeed (it failed, or was interrupted): once it has
succeeded, reusing or resuming in that worktree runs nothing. A failure
stops the launch before the CLI starts (:class:`WorktreeSetupFailed`, exit 8).
Two launches of one worktree never run it twice: a lock per worktree holds the
second until the first is done.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from hashlib import sha256
from pathlib import Path
from typing import Any

from agentlaunch.datarecord import replace
from agentlaunch.errors import AgentlaunchError, ExitCode, StateError
from agentlaunch.fsutil import PRIVATE_FILE_MODE, exclusive_lock, private_dir, read_regular, write_atomic
from agentlaunch.processes import process_start, same_process, valid_pid

SETUP_DIR = "worktree-setup"
RECORD_LIMIT = 64 << 10
TAIL_LINES = 10  # lines of the log a failure quotes
TAIL_BYTES = 4096
Report = Callable[[str], None]


class WorktreeSetupFailed(AgentlaunchError):
    """A ``worktree_setup`` command failed (or could not run): the agent was not started."""

    exit_code = ExitCode.WORKTREE_SETUP


@dataclass(frozen=True)
class SetupRecord:
    """How the last setup of one worktree went (``ok`` None: running, or interrupted when its process is gone)."""

    agent: str
    worktree: str
    log: str
    ok: bool | None
    exit: int | None = None  # the failing command's exit code (None: it could not start, or was interrupted)
    command: str | None = None  # the failing (or running) command
    pid: int | None = None
    pid_start: str | None = None
    started: str | None = None
    finished: str | None = None
    commands: int = 0

    @property
    def running(self) -> bool:
        """Still being run by a live process (else, with ``ok`` None, it was interrupted)."""
        return self.ok is None and same_process(self.pid, self.pid_start)

    @property
    def failed(self) -> bool:
        return self.ok is False or (self.ok is None and not self.running)

    def shown(self) -> dict[str, Any]:
        """What a status record and ``status --json`` carry: ``{"ok", "exit", "command", "log"}`` (ok null: running)."""
        ok = None if self.running else self.ok is True
        return {"ok": ok, "exit": self.exit, "command": self.command, "log": self.log}

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _stem(agent: str, worktree: Path) -> str:
    digest = sha256(str(worktree).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{agent}-{digest}"


def record_path(state_dir: Path, agent: str, worktree: Path) -> Path:
    return state_dir / SETUP_DIR / f"{_stem(agent, worktree)}.json"


def log_path(state_dir: Path, agent: str, worktree: Path) -> Path:
    return state_dir / SETUP_DIR / f"{_stem(agent, worktree)}.log"


def _parse(data: object) -> SetupRecord | None:
    """A record read from a file anyone could have written: None unless every field has its type."""
    if not isinstance(data, dict):
        return None
    texts = ("agent", "worktree", "log")
    if not all(isinstance(data.get(k), str) for k in texts):
        return None
    ok, code, pid, count = data.get("ok"), data.get("exit"), data.get("pid"), data.get("commands", 0)
    if ok not in (True, False, None) or not (code is None or (isinstance(code, int) and not isinstance(code, bool))):
        return None
    optional = ("command", "pid_start", "started", "finished")
    if any(data.get(k) is not None and not isinstance(data.get(k), str) for k in optional):
        return None
    return SetupRecord(
        data["agent"],
        data["worktree"],
        data["log"],
        ok,
        code,
        data.get("command"),
        pid if valid_pid(pid) else None,
        data.get("pid_start"),
        data.get("started"),
        data.get("finished"),
        count if isinstance(count, int) and not isinstance(count, bool) else 0,
    )


def _read_file(path: Path) -> SetupRecord | None:
    try:
        return _parse(json.loads(read_regular(path, RECORD_LIMIT)))
    except (OSError, ValueError, RecursionError):
        return None


def read(state_dir: Path, agent: str, worktree: Path) -> SetupRecord | None:
    """The record of ``agent``'s setup in ``worktree``, or None (never set up here, or unreadable)."""
    return _read_file(record_path(state_dir, agent, worktree))


def _write(state_dir: Path, record: SetupRecord) -> None:
    path = record_path(state_dir, record.agent, Path(record.worktree))
    private_dir(path.parent)  # a log may hold what a command printed of a .env
    write_atomic(path, (json.dumps(record.as_dict(), indent=1) + "\n").encode(), mode=PRIVATE_FILE_MODE)


def forget(state_dir: Path, agent: str, worktree: Path) -> None:
    """The worktree is gone: its record and log go too."""
    for path in (record_path(state_dir, agent, worktree), log_path(state_dir, agent, worktree)):
        with contextlib.suppress(OSError):
            path.unlink()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def mark_pending(state_dir: Path, agent: str, worktree: Path) -> None:
    """The worktree was just made and its setup is to come (called under the lock that made it)."""
    pid = os.getpid()
    log = str(log_path(state_dir, agent, worktree))
    with contextlib.suppress(OSError):  # not written: the setup's own first write says why (a StateError)
        _write(state_dir, SetupRecord(agent, str(worktree), log, None, pid=pid, pid_start=process_start(pid), started=_now()))


def _locked(state_dir: Path, agent: str, worktree: Path) -> contextlib.AbstractContextManager[None]:
    lock = record_path(state_dir, agent, worktree).with_suffix(".lock")
    try:
        private_dir(lock.parent)
        lock.touch()
    except OSError as exc:
        raise StateError(f"{lock.parent}: cannot keep the worktree setup's log and record ({exc.strerror or exc})") from None
    return exclusive_lock(lock)


@dataclass(frozen=True)
class Place:
    """Where a setup runs: the agent, its worktree, the repository's main work tree and the branch."""

    agent: str
    worktree: Path
    repo: Path
    branch: str

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "AGENTLAUNCH_AGENT": self.agent,
            "AGENTLAUNCH_REPO": str(self.repo),
            "AGENTLAUNCH_WORKTREE": str(self.worktree),
            "AGENTLAUNCH_BRANCH": self.branch,
        }


def ensure_setup(
    commands: Sequence[str], place: Place, state_dir: Path, *, created: bool, report: Report
) -> tuple[SetupRecord | None, bool]:
    """Run ``commands`` in a worktree made now, or whose last setup did not succeed: (the record, whether it ran now).

    The record is None when there is no setup. Raises :class:`WorktreeSetupFailed`
    when a command fails; the record says so and the next start runs the setup again.
    """
    if not commands:
        return None, False
    with _locked(state_dir, place.agent, place.worktree):
        last = read(state_dir, place.agent, place.worktree)
        if last is not None and last.ok is True:
            return last, False  # done before (by another launch of this worktree, maybe while this one waited)
        if last is None and not created:
            return None, False  # a worktree made before it had a setup (or before agentlaunch kept one): left as it is
        if last is not None and not created:
            report(f"worktree setup of {place.worktree} did not finish last time: running it again")
        return _run(commands, place, state_dir, report), True


def _run(commands: Sequence[str], place: Place, state_dir: Path, report: Report) -> SetupRecord:
    log = log_path(state_dir, place.agent, place.worktree)
    pid = os.getpid()
    base = SetupRecord(
        place.agent,
        str(place.worktree),
        str(log),
        None,
        pid=pid,
        pid_start=process_start(pid),
        started=_now(),
        commands=len(commands),
    )
    try:
        _write(state_dir, base)
        handle = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
    except OSError as exc:
        raise StateError(f"{log.parent}: cannot keep the worktree setup's log and record ({exc.strerror or exc})") from None
    report(f"worktree setup: {len(commands)} command{'s' if len(commands) != 1 else ''} in {place.worktree} (log: {log})")
    began = time.monotonic()
    env = place.env()
    with os.fdopen(handle, "wb") as out:
        for i, command in enumerate(commands, 1):
            report(f"worktree setup {i}/{len(commands)}: {command}")
            with contextlib.suppress(OSError):  # which command runs now: what `status` shows meanwhile
                _write(state_dir, replace(base, command=command))
            out.write(f"$ {command}\n".encode("utf-8", "surrogateescape"))
            out.flush()
            try:
                # A shell, as the person wrote it; stdin closed: a command that asks would wait for ever.
                done = subprocess.run(
                    ["/bin/sh", "-c", command],
                    cwd=place.worktree,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
            except OSError as exc:
                out.write(f"[could not start: {exc.strerror or exc}]\n".encode())
                _finish(state_dir, base, False, None, command)
                raise WorktreeSetupFailed(
                    f"worktree setup: `{command}` could not start in {place.worktree} ({exc.strerror or exc})\n"
                    "the agent was not started",
                    hint=_hint(log),
                ) from None
            except BaseException:  # Ctrl-C: subprocess.run ended the command; the next start runs the setup again
                out.write(b"[interrupted]\n")
                _finish(state_dir, base, None, None, command, interrupted=True)
                raise
            out.write(f"[exit {done.returncode}]\n".encode())
            out.flush()
            if done.returncode != 0:
                _finish(state_dir, base, False, done.returncode, command)
                raise WorktreeSetupFailed(_failure(command, done.returncode, place.worktree, log), hint=_hint(log))
    record = _finish(state_dir, base, True, 0, None)
    report(f"worktree setup done in {time.monotonic() - began:.1f}s")
    return record


def _finish(
    state_dir: Path, base: SetupRecord, ok: bool | None, code: int | None, command: str | None, *, interrupted: bool = False
) -> SetupRecord:
    # Interrupted: no live pid any more once this process ends, so it reads as not finished (and runs again).
    record = replace(base, ok=ok, exit=code, command=command, finished=_now(), pid=None if interrupted else base.pid)
    with contextlib.suppress(OSError):
        _write(state_dir, record)
    return record


def _failure(command: str, code: int, worktree: Path, log: Path) -> str:
    said = f"exited {code}" if code >= 0 else f"was killed by signal {-code}"
    lines = [f"worktree setup: `{command}` {said} in {worktree}; the agent was not started"]
    tail = log_tail(log)
    if tail:
        lines += ["its last output:", *(f"  {line}" for line in tail)]
    return "\n".join(lines)


def _hint(log: Path) -> str:
    return (
        f"the whole output is in {log}; fix the command (worktree_setup: in agent.yaml) and start the agent again: "
        "the setup runs again until it succeeds"
    )


def log_tail(log: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines a setup wrote (as text; the log is the commands' bytes)."""
    try:
        with open(log, "rb") as handle:
            handle.seek(max(os.fstat(handle.fileno()).st_size - TAIL_BYTES, 0))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]
