"""The `agentlaunch` command: parse options, call the core, map errors to exit codes.

Each module registers its commands on the one Typer app in ``common``.
"""

from __future__ import annotations

from agentlaunch.cli import definitions, doctor, run, status, tmux, usage  # noqa: F401  (registers the commands)
from agentlaunch.cli.common import app


def main() -> None:
    app()


__all__ = ["app", "main"]
