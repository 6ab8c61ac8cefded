"""processes.which answers as shutil.which does on POSIX (it stands for it on the launch path, without shutil)."""

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
