"""Running the real Claude Code TUI offline: a temp HOME seeded like a set-up user's, and leaving it as its user does
(the screen to read it: :mod:`testbed.pty_screen`).

Claude Code's interactive interface talks to ``api.anthropic.com`` and asks
first-run questions unless its ``~/.claude.json`` says that onboarding is
done, the API key was approved and the working folder is trusted. A real
user's home already holds these; :func:`seed_home` writes them, so the TUI
runs against the fake API on 127.0.0.1 (see provider-interfaces.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from testbed.pty_screen import Screen

API_KEY = "sk-ant-fake-0123456789abcdefghij"
"""The key the tests hand to Claude Code; approved in the seeded home (it shows its last 20 characters)."""


def seed_home(home: Path, working_dirs: list[Path], key: str = API_KEY, config_dir: Path | None = None) -> Path:
    """Write ``~/.claude.json`` (or ``$CLAUDE_CONFIG_DIR/.claude.json``) as a set-up user's; returns its path."""
    target_dir = config_dir if config_dir is not None else home
    target_dir.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": "2.1.332",
        "numStartups": 5,
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "bypassPermissionsModeAccepted": False,
        "projects": {
            str(d.resolve()): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True, "allowedTools": []}
            for d in working_dirs
        },
    }
    path = target_dir / ".claude.json"
    path.write_text(json.dumps(state, indent=2))
    return path


def tui_env(base_url: str, home: Path, extra: Mapping[str, str] | None = None, key: str = API_KEY) -> dict[str, str]:
    """The environment for the TUI: PATH from ours, HOME the seeded one, the fake API, no other traffic."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH")}
    env.update(
        {
            "HOME": str(home),
            "TERM": "xterm-256color",
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    )
    env.update(extra or {})
    return env


def quit_with_ctrl_c(screen: Screen, pump: Callable[[], None] | None = None, attempts: int = 3) -> None:
    """Leave Claude Code's interface as its user does: Ctrl-C, then Ctrl-C again once it says "again to exit".

    Under load the first Ctrl-C can be taken by something else (a turn it interrupts, a hint that timed out before
    the second came): the pair is tried again. ``pump`` reads whatever else must be read meanwhile (a hook socket).
    """
    step = pump or screen.pump
    for _ in range(attempts):
        screen.child.send("\x03")
        end = time.monotonic() + 10
        while time.monotonic() < end and "again to exit" not in screen.text() and screen.child.isalive():
            step()
        screen.child.send("\x03")
        end = time.monotonic() + 20
        while time.monotonic() < end and screen.child.isalive():
            step()
        if not screen.child.isalive():
            return
    raise AssertionError(f"the interface did not exit after {attempts} double Ctrl-C:\n{screen.text()}")
