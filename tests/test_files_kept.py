"""The files agentlaunch keeps: holds per launch, --force on a full disk or a read-only directory,
symlinks and special files in the target's place, permissions."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.definitions import deliver as deliver_module
from agentlaunch.definitions.deliver import deliver, release
from agentlaunch.errors import RefusedOverwrite, StateError
from agentlaunch.fsutil import write_atomic

# A launch, as far as the ledger sees one: deliver with a hold, wait, release when told, exit.
LAUNCH = r"""
import sys
from pathlib import Path
from agentlaunch.definitions.deliver import deliver, release
target, state, agent = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
deliver(target, "instructions of " + agent + "\n", agent, state, hold=True)
print("holding", flush=True)
sys.stdin.readline()
release(target, state)
print("released", flush=True)
"""


class Launch:
    def __init__(self, target: Path, state: Path, agent: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, str(target), str(state), agent],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "holding\n"

    def end(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline() == "released\n"
        assert self.proc.wait(timeout=30) == 0


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_a_second_launch_of_the_same_agent_ending_does_not_free_the_first_ones_hold(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    first = Launch(target, state, "a")
    try:
        second = Launch(target, state, "a")
        second.end()
        held = rf"holds the instructions of agent 'a', whose launch \(pid {first.proc.pid}\)"
        with pytest.raises(RefusedOverwrite, match=held):
            deliver(target, "instructions of c\n", "c", state)
        assert target.read_text() == "instructions of a\n"
    finally:
        first.end()
    result = deliver(target, "instructions of c\n", "c", state)
    assert result.previous_agent == "a" and target.read_text() == "instructions of c\n"


def test_a_hold_is_released_only_by_its_own_launch(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    first = Launch(target, state, "a")
    try:
        release(target, state)  # this process never held it: the first launch's hold stays
        entry = json.loads((state / "delivered.json").read_text())[str(target)]
        assert [h["pid"] for h in entry["holds"]] == [first.proc.pid] and entry["pid"] == first.proc.pid
        deliver(target, "instructions of a\n", "a", state)  # a non-holding delivery (render --write) keeps it too
        with pytest.raises(RefusedOverwrite):
            deliver(target, "instructions of c\n", "c", state)
    finally:
        first.end()


def test_a_hold_whose_pid_was_reused_does_not_count(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    deliver(target, "a\n", "a", state, hold=True)
    ledger = state / "delivered.json"
    entries = json.loads(ledger.read_text())
    entries[str(target)]["holds"] = [{"pid": os.getppid(), "start": "1"}]  # a live pid, started at another time
    entries[str(target)]["pid"] = None
    ledger.write_text(json.dumps(entries))
    assert deliver(target, "c\n", "c", state).previous_agent == "a"


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_space(path: Path, data: bytes, mode: int | None = None) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(deliver_module, "write_atomic", no_space)


def test_force_on_a_full_disk_puts_the_users_file_back(workdir: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = workdir / "CLAUDE.md"
    target.write_text("mine\n")
    _full_disk(monkeypatch)
    with pytest.raises(StateError) as info:
        deliver(target, "agent\n", "a", state, force=True)
    assert "No space left on device" in info.value.message
    assert "nothing was written, and your CLAUDE.md is back in place" in info.value.message
    assert target.read_text() == "mine\n"
    assert sorted(p.name for p in workdir.iterdir()) == ["CLAUDE.md"]


def test_force_on_a_full_disk_says_where_the_file_is_when_it_cannot_go_back(
    workdir: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = workdir / "CLAUDE.md"
    target.write_text("mine\n")
    _full_disk(monkeypatch)
    real_replace = os.replace
    calls: list[str] = []

    def replace_once(src: str | Path, dst: str | Path) -> None:
        calls.append(str(dst))
        if len(calls) > 1:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        real_replace(src, dst)

    monkeypatch.setattr(deliver_module.os, "replace", replace_once)
    with pytest.raises(StateError) as info:
        deliver(target, "agent\n", "a", state, force=True)
    (backup,) = [p for p in workdir.iterdir() if p.name.endswith(".bak")]
    assert info.value.message.endswith(f"nothing was written; your own CLAUDE.md is in {backup}")
    assert backup.read_text() == "mine\n"


def test_force_in_a_read_only_directory_is_a_clear_error(tmp_path: Path, state: Path) -> None:
    """/proc/self refuses renames even for root: the move aside fails, and says so."""
    target = Path("/proc/self/environ")  # exists, is not ours, cannot be moved
    expected = r"/proc/self/environ: cannot move it aside to environ\..*\.bak \(.*\); nothing was written"
    with pytest.raises(StateError, match=expected):
        deliver(target, "x\n", "a", state, force=True)


def test_force_in_a_read_only_directory_via_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.cli_runs import run_cli

    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "CLAUDE.md").write_text("mine\n")
    shim = tmp_path / "shim"
    shim.mkdir()
    # A read-only directory even for root: rename() fails with EROFS, as on a read-only mount.
    (shim / "sitecustomize.py").write_text(
        "import errno, os\n"
        "_real = os.replace\n"
        f"def _replace(a, b):\n    if str(a).startswith({str(ro)!r}):\n"
        "        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(a))\n"
        "    return _real(a, b)\n"
        "os.replace = _replace\n"
    )
    pythonpath = os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")])
    agents = Path(__file__).resolve().parent.parent / "agents"
    result = run_cli(
        "render",
        "reviewer",
        "--force",
        "--output",
        str(ro / "CLAUDE.md"),
        "--agents-dir",
        str(agents),
        env={"PYTHONPATH": pythonpath},
    )
    assert result.returncode == 5, result.stderr
    assert b"cannot move it aside" in result.stderr and b"Read-only file system" in result.stderr
    assert b"Traceback" not in result.stderr
    assert (ro / "CLAUDE.md").read_text() == "mine\n"


@pytest.mark.parametrize("kind", ["dangling", "to a file", "to a directory"])
def test_a_symlink_in_the_files_place_is_the_users(workdir: Path, state: Path, kind: str) -> None:
    target = workdir / "CLAUDE.md"
    if kind == "dangling":
        target.symlink_to(workdir / "nowhere.md")
    elif kind == "to a file":
        (workdir / "notes.md").write_text("agent\n")  # even with the very bytes agentlaunch would write
        target.symlink_to(workdir / "notes.md")
    else:
        target.symlink_to(workdir)
    with pytest.raises(RefusedOverwrite, match="is a symlink, not a file agentlaunch wrote; it is yours and was left untouched"):
        deliver(target, "agent\n", "a", state)
    assert target.is_symlink()
    result = deliver(target, "agent\n", "a", state, force=True)
    assert result.backup is not None and result.backup.is_symlink()  # the link itself moved aside, its target untouched
    assert target.is_file() and not target.is_symlink() and target.read_text() == "agent\n"
    if kind == "to a file":
        assert (workdir / "notes.md").read_text() == "agent\n"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_fifo_or_directory_in_the_files_place_is_a_state_error_without_blocking(workdir: Path, state: Path, kind: str) -> None:
    target = workdir / "CLAUDE.md"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    reason = "it is a FIFO (named pipe), not a regular file" if kind == "fifo" else "Is a directory"
    for force in (False, True):
        with pytest.raises(StateError, match=re.escape(f"{target}: cannot read the existing file ({reason})")):
            deliver(target, "agent\n", "a", state, force=force)  # a plain read of the FIFO would block here
    assert sorted(p.name for p in workdir.iterdir()) == ["CLAUDE.md"]


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_written_files_honour_the_umask(workdir: Path, state: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        deliver(workdir / "CLAUDE.md", "agent\n", "a", state)
        write_atomic(workdir / "other.json", b"{}")
    finally:
        os.umask(old)
    for name in ("CLAUDE.md", "other.json"):
        assert stat.S_IMODE((workdir / name).stat().st_mode) == 0o666 & ~umask, name
    assert stat.S_IMODE((state / "delivered.json").stat().st_mode) == 0o666 & ~umask


def test_a_replaced_file_keeps_its_mode(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    deliver(target, "v1\n", "a", state)
    target.chmod(0o640)
    deliver(target, "v2\n", "a", state)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640 and target.read_text() == "v2\n"
    users = workdir / "AGENTS.md"
    users.write_text("mine\n")
    users.chmod(0o644)
    old = os.umask(0o077)
    try:
        deliver(users, "agent\n", "a", state, force=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(users.stat().st_mode) == 0o644  # a CLAUDE.md that replaces a 0644 one is 0644 too
