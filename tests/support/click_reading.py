"""What click makes of a command line: the one reading the CLI's fast paths (agentlaunch.entry) are held to."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer.main

from agentlaunch.cli import load_commands


def click_reading(args: Sequence[str]) -> dict[str, Any] | None:
    """The parameters the command ``args`` name would be called with, as the CLI's click group parses ``args``
    (options, arguments, environment variables, types); None when click refuses them or answers itself (help,
    a usage error). The command itself is not run."""
    group = typer.main.get_command(load_commands(list(args)))
    command = group.commands[args[0]]  # type: ignore[attr-defined]
    called: list[dict[str, Any]] = []
    real = command.callback
    command.callback = lambda **params: called.append(params)
    try:
        group.main(list(args), prog_name="agentlaunch", standalone_mode=False)
    except Exception:  # noqa: BLE001 - click's usage errors (its vendored copy's classes, in typer 0.28)
        return None
    finally:
        command.callback = real
    return called[0] if called else None
