"""The no-Linux lane: chosen tests run a second time with agentlaunch's processes stripped of Linux's primitives.

This machine has no Mac. The proxy for one is ``tests/support/no_linux/sitecustomize.py``: every Python process
started with that folder on ``PYTHONPATH`` has no ``select.epoll``, no ``os.pidfd_open``, no ``os.pipe2``, no
libc ``inotify_*`` or ``prctl`` through ctypes, and every read of ``/proc`` fails. A test in :data:`LANE` is
collected twice: as it is, and as ``NAME[no-linux]`` (or ``NAME[no-linux][PARAMS]``), whose processes (the
``python -m agentlaunch`` children, tmux's panes, each ``send``) all start with the proxy. The copy fails when
no ``agentlaunch`` process of it loaded the proxy (a test whose environment dropped ``PYTHONPATH`` would
otherwise pass without testing anything). ``AGENTLAUNCH_TEST_NO_LINUX=1`` runs every test so.

The set is chosen for coverage, not count (the CI's 8 minutes): one test per mode, each covering several.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROXY = Path(__file__).resolve().parent / "no_linux"
LOG_VAR = "AGENTLAUNCH_TEST_NO_LINUX_LOG"
"""The file each Python process started under the proxy appends its command line to (the sitecustomize)."""
SUFFIX = "no-linux"
MARK = "no_linux"

LANE = (
    # Claude Code's own interface in a tmux team: `tmux up`, `send --wait` typed and answered, asking, `tmux down`.
    "tests/e2e/test_tmux_claude.py::test_send_wait_types_into_claude_codes_interface_and_prints_the_answer_from_its_transcript",
    # A native Claude launch with a budget: the held hooks' gate (the epoll set a Mac did not have) refuses a call.
    "tests/e2e/test_budget_e2e.py::test_claude_native_no_call_follows_the_crossing_call_and_every_request_is_stored",
    # The deck's first frame, then stop and restart from it.
    "tests/e2e/test_deck_e2e.py::test_stop_b_then_r_restarts_b_not_the_agent_that_took_its_row_and_prefix_l_comes_back_to_a_deck_window",
    # Codex's interface on both routes (its own app-server, then agentlaunch's) and Gemini's, each answered.
    "tests/e2e/test_native_run_codex_gemini.py::test_codex_native_run_meters_a_tool_turn_shows_states_and_a_headless_then_a_native_turn_resume",
    "tests/e2e/test_native_run_codex_gemini.py::test_gemini_native_run_meters_a_tool_turn_shows_waiting_and_a_headless_then_a_native_turn_resume",
)


def lane_copies(items: list[pytest.Item]) -> list[pytest.Item]:
    """A ``[no-linux]`` copy of each collected test of :data:`LANE` (each of its parameters'), marked ``no_linux``."""
    copies: list[pytest.Item] = []
    for item in items:
        base = item.nodeid.split("[", 1)[0]
        if base not in LANE or not isinstance(item, pytest.Function):
            continue
        # pytest 9 makes a node's id of its original name and its parameters' id: the copy's must differ.
        original = f"{item.originalname}[{SUFFIX}]"
        name = original + item.name[len(item.originalname) :]
        copy = pytest.Function.from_parent(
            item.parent,  # type: ignore[arg-type]  # a test function's parent is its module or class
            name=name,
            callspec=getattr(item, "callspec", None),
            callobj=item.obj,
            keywords=dict(item.keywords),
            fixtureinfo=item._fixtureinfo,
            originalname=original,
        )
        copy.add_marker(MARK)
        copies.append(copy)
    return copies


class LanePlugin:
    """Adds the lane's copies first (before ``-m``/``-k`` choose and the workers' order is made)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items.extend(lane_copies(items))


def without_linux(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Every Python process started from now on in this test loads the proxy and logs its command line to ``log``."""
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", f"{PROXY}{os.pathsep}{path}" if path else str(PROXY))
    monkeypatch.setenv(LOG_VAR, str(log))


def proxied_agentlaunch(log: Path) -> list[str]:
    """The command lines of the agentlaunch processes that loaded the proxy (the log's lines naming agentlaunch)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return [line for line in lines if "agentlaunch" in line]


def lane_env() -> dict[str, str]:
    """What a test that builds its children's environment from nothing passes on for the lane (nothing outside it)."""
    return {k: os.environ[k] for k in ("PYTHONPATH", LOG_VAR) if k in os.environ}
