"""What a launch imports: no ``dataclasses`` (its records are agentlaunch.datarecord's), and a native Claude launch
imports none of the Codex app-server route."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from agentlaunch import fsutil


def test_remove_tree_removes_a_folder_and_ignores_a_missing_one_when_told(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    fsutil.remove_tree(tmp_path / "a")
    assert not (tmp_path / "a").exists()
    fsutil.remove_tree(tmp_path / "a", ignore_errors=True)
    try:
        fsutil.remove_tree(tmp_path / "a")
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("a missing folder is an error unless ignored")


REPO = Path(__file__).resolve().parent.parent


def loaded_of(modules: list[str], wanted: set[str]) -> list[str]:
    """Which of ``wanted`` importing ``modules`` loads into a fresh interpreter (not what it held at its start)."""
    script = (
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\nheld = set(sys.modules)\n"
        f"for m in {modules!r}: __import__(m)\nprint(sorted({wanted!r} & (set(sys.modules) - held)))"
    )
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return list(ast.literal_eval(done.stdout.strip()))


def test_a_native_claude_launch_imports_none_of_codexs_app_server_route() -> None:
    modules = [
        "agentlaunch.launch.build",
        "agentlaunch.launch.native.native",
        "agentlaunch.providers.claude",
        "agentlaunch.providers.native.claude",
    ]
    codex = {
        "agentlaunch.launch.native.native_remote",
        "agentlaunch.providers.codex_appserver",
        "agentlaunch.providers.codex",
        "agentlaunch.providers.native.unix_websocket",
        "agentlaunch.providers.native.codex_remote",
    }
    assert loaded_of(modules, codex) == []
    assert loaded_of([*modules, "agentlaunch.launch.native.native_remote"], codex) == sorted(codex)  # the check sees them


def test_a_launchs_modules_import_no_dataclasses() -> None:
    """The launch path's records are agentlaunch.datarecord's: ``dataclasses`` (with ``inspect``) stays unloaded."""
    modules = [
        "agentlaunch.entry",
        "agentlaunch.launch.early.prespawn",
        "agentlaunch.launch.early.early_interface",
        "agentlaunch.launch.early.early_appserver",
        "agentlaunch.launch.early.early_turn",
        "agentlaunch.cli.user_io",
        "agentlaunch.launch.modes",
        "agentlaunch.launch.native.native",
        "agentlaunch.providers.claude",
        "agentlaunch.providers.codex",
        "agentlaunch.providers.gemini",
        "agentlaunch.providers.native.claude",
        "agentlaunch.providers.native.gemini",
        "agentlaunch.launch.native.native_remote",
    ]
    heavy = {"dataclasses", "inspect"}
    assert loaded_of(modules, heavy) == []
    assert loaded_of([*modules, "agentlaunch.live.tmux"], heavy) == sorted(heavy)  # the check sees them
