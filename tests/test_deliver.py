"""Delivering the instructions file: atomic, only on change, never clobbering the user's file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.definitions.deliver import deliver, release
from agentlaunch.errors import RefusedOverwrite, StateError
from agentlaunch.fsutil import keep_newest


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_writes_then_keeps_unchanged_file_and_mtime(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    assert deliver(target, "hello\n", "a", state).changed
    os.utime(target, (1_000_000, 1_000_000))
    again = deliver(target, "hello\n", "a", state)
    assert not again.changed
    assert target.stat().st_mtime == 1_000_000 and target.read_text() == "hello\n"
    assert deliver(target, "changed\n", "a", state).changed and target.read_text() == "changed\n"


def test_users_own_file_survives_untouched(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    target.write_bytes(b"my own notes\r\n\x00binary")
    before = target.stat()
    with pytest.raises(RefusedOverwrite, match="was not written by agentlaunch; it is yours"):
        deliver(target, "agent text\n", "a", state)
    assert target.read_bytes() == b"my own notes\r\n\x00binary"
    assert target.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in workdir.iterdir()) == ["CLAUDE.md"]


def test_file_edited_after_delivery_is_the_users(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    deliver(target, "v1\n", "a", state)
    target.write_text("v1\nmy edit\n")
    with pytest.raises(RefusedOverwrite, match="was edited since agentlaunch wrote it"):
        deliver(target, "v2\n", "a", state)
    assert target.read_text() == "v1\nmy edit\n"


def test_force_moves_the_users_file_to_a_backup(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    target.write_text("mine\n")
    result = deliver(target, "agent\n", "a", state, force=True)
    assert result.backup is not None and result.backup.parent == workdir
    assert result.backup.name.startswith("CLAUDE.md.") and result.backup.name.endswith(".bak")
    assert result.backup.read_text() == "mine\n" and target.read_text() == "agent\n"


def test_identical_user_file_is_left_and_not_claimed(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    target.write_text("same\n")
    assert not deliver(target, "same\n", "a", state).changed
    with pytest.raises(RefusedOverwrite):
        deliver(target, "different\n", "a", state)


def test_running_agent_holds_its_file_against_another_agent(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deliver(target, "from a\n", "a", state, hold=True)
        # Pretend the holding launch is another live process.
        import json

        ledger = state / "delivered.json"
        entries = json.loads(ledger.read_text())
        entries[str(target)]["pid"] = holder.pid
        ledger.write_text(json.dumps(entries))
        with pytest.raises(RefusedOverwrite, match="holds the instructions of agent 'a', whose launch .* is still running"):
            deliver(target, "from b\n", "b", state)
        assert target.read_text() == "from a\n"
    finally:
        holder.kill()
        holder.wait()
    # Once that launch is gone, the swap is allowed and reported.
    result = deliver(target, "from b\n", "b", state)
    assert result.previous_agent == "a" and target.read_text() == "from b\n"


def test_release_frees_the_file(workdir: Path, state: Path) -> None:
    target = workdir / "CLAUDE.md"
    deliver(target, "x\n", "a", state, hold=True)
    release(target, state)
    assert '"pid": null' in (state / "delivered.json").read_text()


def test_read_only_working_directory(tmp_path: Path, state: Path) -> None:
    """A read-only mount refuses writes even to root: a clear error, nothing written."""
    ro = Path("/proc/self")  # never writable, for root too
    with pytest.raises(StateError, match=r"cannot write CLAUDE.md there"):
        deliver(ro / "CLAUDE.md", "x\n", "a", state)
    assert not (state / "delivered.json").exists() or "CLAUDE.md" not in (state / "delivered.json").read_text()


def test_keep_newest_trims_a_cache_folder_to_its_newest_files(tmp_path: Path) -> None:
    for i in range(5):
        path = tmp_path / f"memo-{i}.json"
        path.write_text("{}")
        os.utime(path, ns=(i * 10**9, i * 10**9))  # memo-4 is the newest
    (tmp_path / "notes.txt").write_text("not a memo")
    keep_newest(tmp_path, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memo-2.json", "memo-3.json", "memo-4.json", "notes.txt"]
    keep_newest(tmp_path, 3)  # already small enough: nothing more goes
    assert len(list(tmp_path.glob("*.json"))) == 3
    keep_newest(tmp_path / "missing", 3)  # no folder: nothing to do, no error


def test_an_existing_file_that_cannot_be_read_is_a_state_error(workdir: Path, state: Path) -> None:
    (workdir / "CLAUDE.md").mkdir()  # a directory where the file would go
    with pytest.raises(StateError, match=r"CLAUDE.md: cannot read the existing file \(Is a directory\)") as info:
        deliver(workdir / "CLAUDE.md", "x\n", "a", state)
    assert info.value.exit_code == 5


def test_a_file_that_cannot_be_moved_aside_is_a_state_error_and_stays(
    workdir: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = workdir / "CLAUDE.md"
    target.write_text("mine\n")

    def refuse(src: object, dst: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StateError, match=r"CLAUDE.md: cannot move it aside to CLAUDE.md\..*\.bak \(Permission denied\)"):
        deliver(target, "x\n", "a", state, force=True)
    assert target.read_text() == "mine\n"
