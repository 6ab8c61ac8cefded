"""What stands for shutil on the launch path (processes.which, transport.window_size) answers as shutil does on POSIX."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from agentlaunch.processes import which


def test_which_finds_what_shutil_which_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second, folder = tmp_path / "a", tmp_path / "b", tmp_path / "b" / "tool-dir"
    for place in (first, second, folder):
        place.mkdir(parents=True, exist_ok=True)
    (first / "tool").write_text("")  # not executable: skipped
    (second / "tool").write_text("#!/bin/sh\n")
    (second / "tool").chmod(0o755)
    (first / "tool-dir").mkdir()  # a directory of that name: skipped
    path = os.pathsep.join([str(first), "", str(second), str(first)])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", path)
    for command in ("tool", "tool-dir", "missing", str(second / "tool"), str(first / "tool"), "b/tool", ""):
        assert which(command) == shutil.which(command), command
        assert which(command, path=str(first)) == shutil.which(command, path=str(first)), command
    assert which("tool") == str(second / "tool")
    assert which("tool", path="") is None
    monkeypatch.delenv("PATH")
    assert which("sh") == shutil.which("sh")


@pytest.mark.parametrize(("columns", "lines"), [(None, None), ("120", "40"), ("100", None), ("0", "-3"), (" 90", "x")])
def test_window_size_without_a_terminal_is_shutil_s_terminal_size(
    columns: str | None, lines: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transport.window_size off a terminal answers as shutil.get_terminal_size((80, 24)) would (without shutil)."""
    from agentlaunch.launch.transport import window_size

    for name, value in (("COLUMNS", columns), ("LINES", lines)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    with open(os.devnull, "rb") as not_a_terminal:
        expected = shutil.get_terminal_size((80, 24))
        assert window_size(not_a_terminal.fileno()) == (expected.columns, expected.lines)
