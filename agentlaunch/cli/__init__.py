"""The `agentlaunch` command: parse options, call the core, map errors to exit codes.

Each module registers its commands on the one Typer app in ``common``. A launch
imports only the module of the command it runs (``agentlaunch run`` never pays
for the doctor, tmux or usage reports); help and completion load them all.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

# Command name -> the module under agentlaunch.cli that registers it.
COMMAND_MODULES = {
    "list": "definitions",
    "validate": "definitions",
    "render": "definitions",
    "init": "definitions",
    "run": "run",
    "sessions": "run",
    "usage": "usage",
    "status": "status",
    "fleet": "fleet",
    "hosts": "hosts",
    "doctor": "doctor",
    "tmux": "tmux",
    "worktrees": "worktrees",
    "send": "send",
    "resume-budget": "send",
    "answer": "answer",
    "stop": "life",
    "restart": "life",
    "fork": "life",
    "deck": "deck",
    "mcp": "mcp",
    "acp": "acp",
}


def load_commands(args: Sequence[str] | None = None) -> typer.Typer:
    """The app with the command named in ``args`` registered, or every command when none is named."""
    command = next((a for a in args or () if not a.startswith("-")), None)
    completing = any(key.startswith("_AGENTLAUNCH_COMPLETE") for key in os.environ)
    if command in COMMAND_MODULES and not completing:
        modules = [COMMAND_MODULES[command]]
    elif command is None and list(args or ()) == ["--version"]:
        modules = []  # the app's own eager option: no command is looked at (0.5 s of imports saved)
    else:
        modules = sorted(set(COMMAND_MODULES.values()))
    for module in modules:
        importlib.import_module(f"agentlaunch.cli.{module}")
    from agentlaunch.cli.common import app

    return app


def main() -> None:
    load_commands(sys.argv[1:])(prog_name="agentlaunch")


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole app, for callers that drive it directly (tests, embedding)
        return load_commands()
    raise AttributeError(name)


__all__ = ["COMMAND_MODULES", "load_commands", "main"]
