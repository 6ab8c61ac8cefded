"""Linux's own primitives are touched in one module, ``agentlaunch/platform_support.py``, and each has its fallback.

The scan reads every module of ``agentlaunch/`` with ``ast`` (docstrings left out: they may name what they do not
use) and fails with the ``file:line`` of each use elsewhere: ``select.epoll`` (and its ``EPOLL*`` flags),
``os.pidfd_open``, libc's inotify calls, ``prctl``, and any string naming ``/proc``."""

from __future__ import annotations

import ast
import os
import signal
from pathlib import Path

import pytest

from agentlaunch import platform_support
from tests.conftest import REPO

PACKAGE = REPO / "agentlaunch"
OWNER = "agentlaunch/platform_support.py"
LINUX_NAMES = frozenset(
    {"epoll", "pidfd_open", "prctl", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch"}
)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (a module's, a class's, a function's, an attribute's)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            found |= {
                id(stmt.value)
                for stmt in body
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
            }
    return found


def linux_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """The line and what of each use of a Linux-only primitive in ``tree``."""
    docs = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        name = ""
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.alias):
            name = node.name.rsplit(".", 1)[-1]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if "/proc" in node.value or node.value in LINUX_NAMES:
                found.append((getattr(node, "lineno", 0), repr(node.value)))
            continue
        if name in LINUX_NAMES or name.startswith("EPOLL"):
            found.append((getattr(node, "lineno", 0), name))
    return found


def test_the_scan_finds_each_kind_of_use() -> None:
    source = """
import select, os
from select import epoll
'''a docstring may say /proc and epoll'''
def f(pid):
    '''/proc/PID/stat'''
    select.epoll().register(0, select.EPOLLIN)
    os.pidfd_open(pid)
    getattr(os, "pidfd_open")
    libc.prctl(36, 1)
    libc.inotify_add_watch(3, b"/", 2)
    open(f"/proc/{pid}/stat")
"""
    found = {what for _, what in linux_uses(ast.parse(source))}
    assert found == {"epoll", "EPOLLIN", "pidfd_open", "'pidfd_open'", "prctl", "inotify_add_watch", "'/proc/'"}


def test_no_module_but_the_platform_module_touches_linux_primitives() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel != OWNER:
            found += [f"{rel}:{line}: {what}" for line, what in linux_uses(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == [], "use agentlaunch/platform_support.py (and its fallback) instead"


def test_each_primitive_has_its_fallback_where_the_system_has_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    assert platform_support.pidfd(os.getpid()) is None
    monkeypatch.setattr(platform_support, "LINUX", False)
    assert platform_support.become_child_subreaper() is False
    assert platform_support.parent_death_signal(signal.SIGTERM) is None
    assert platform_support.inotify_open() is None
    monkeypatch.setattr(platform_support, "PROC", str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError):
        platform_support.proc_text("self", "status")
    with pytest.raises(FileNotFoundError):
        platform_support.proc_names()


def test_without_proc_a_zombie_is_told_by_ps_and_is_no_running_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tmux may reap a pane's process late: `tmux down` and `stop` must not wait for a zombie (macOS has no /proc)."""
    import subprocess

    from agentlaunch.processes import process_running
    from tests.support.waits import wait_for

    monkeypatch.setattr(platform_support, "PROC", str(tmp_path / "none"))
    assert platform_support.process_state(os.getpid()) in ("R", "S")
    child = subprocess.Popen(["sh", "-c", "exit 0"])  # not waited for: a zombie once it exits
    try:
        wait_for(lambda: platform_support.process_state(child.pid) == "Z", timeout=30, what="the child to exit")
        assert not process_running(child.pid)
    finally:
        child.wait()
    assert platform_support.process_state(child.pid) is None and not process_running(child.pid)
