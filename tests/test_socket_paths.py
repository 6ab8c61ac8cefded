"""Every socket agentlaunch makes fits macOS's 104 bytes, whatever the user's folders, and a working folder reached
through a link (macOS's ``/tmp`` is ``/private/tmp``) is the resolved one the CLIs record."""

from __future__ import annotations

import os
from pathlib import Path

import pexpect
import pytest

from agentlaunch import runtime_dirs
from agentlaunch.definitions.spec import resolve_working_dir
from agentlaunch.errors import StateError
from agentlaunch.hosts import ssh
from agentlaunch.hosts.config import Host
from agentlaunch.launch import control
from agentlaunch.launch.early import early_appserver, early_interface
from agentlaunch.platform_support import SOCKET_PATH_MAX
from agentlaunch.providers.native import claude, codex, gemini
from agentlaunch.providers.native.gemini_records import project_hash
from tests.support.cli_runs import run_cli
from tests.test_interactive import chat, finish

NAMES = (
    claude.SOCKET_NAME,
    claude.HELD_NAME,
    codex.SOCKET_NAME,
    gemini.SOCKET_NAME,
    control.SOCKET_NAME,
    early_appserver.SOCKET_NAME,
    "claude" + early_interface.STREAM,
)


@pytest.fixture
def long_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A runtime folder, a TMPDIR (as macOS's, under /var/folders) and a state folder each over 104 bytes."""
    deep = tmp_path / ("r" * 60) / ("t" * 60)
    deep.mkdir(parents=True)
    assert len(str(deep)) > 120
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setenv("AGENTLAUNCH_STATE_DIR", str(deep / "state"))
    return deep


def test_the_runtime_folder_of_a_long_runtime_dir_is_short_enough_for_each_socket(long_folders: Path) -> None:
    runtime = runtime_dirs.make_for_launch()
    try:
        assert not str(runtime).startswith(str(long_folders))
        assert [n for n in NAMES if len(os.fsencode(runtime / n)) > SOCKET_PATH_MAX] == []
    finally:
        runtime_dirs.remove_tree(runtime)


def test_the_ssh_control_socket_fits_or_names_the_setting_to_change(long_folders: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host = Host(name="box", ssh="me@box.example")
    path = ssh.control_path(host)
    assert len(os.fsencode(path)) + 17 <= SOCKET_PATH_MAX and not path.startswith(str(long_folders))
    monkeypatch.setattr(ssh, "control_dir", lambda: long_folders)  # as if the folder chosen were that long
    with pytest.raises(StateError, match="too long for a socket; set XDG_RUNTIME_DIR to a shorter folder"):
        ssh.control_path(host)


def test_a_chat_with_long_state_and_runtime_folders_takes_a_sent_prompt(long_folders: Path, agents_dir: Path) -> None:
    chats: list[pexpect.spawn] = []
    child = chat(chats, agents_dir)
    try:
        sent = run_cli("send", "demo", "hello from send", "--wait", timeout=60)
        assert sent.returncode == 0, sent.stderr
        assert b'You said: "hello from send"' in sent.stdout
        child.sendeof()
        assert finish(child) == 0
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_a_working_folder_through_a_link_is_the_resolved_one_the_clis_record(tmp_path: Path) -> None:
    """macOS's /tmp is a link to /private/tmp: the CLIs record (and Gemini hashes) the resolved folder, and so does
    agentlaunch, so that it finds their sessions."""
    real = tmp_path / "private" / "tmp" / "work"
    real.mkdir(parents=True)
    (tmp_path / "tmp").symlink_to(real.parent)
    spec = type("Spec", (), {"working_dir": None, "agent_dir": tmp_path, "name": "a"})()
    resolved = resolve_working_dir(spec, tmp_path / "tmp" / "work", tmp_path)  # type: ignore[arg-type]
    assert resolved == real
    assert project_hash(resolved) == project_hash(Path(os.path.realpath(tmp_path / "tmp" / "work")))
