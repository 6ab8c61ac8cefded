"""What every command shares: the Typer app, consoles, option types, error printing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from agentlaunch import __version__, paths
from agentlaunch.definitions.spec import agent_names
from agentlaunch.errors import AgentlaunchError
from agentlaunch.visible import for_markup

err = Console(stderr=True, highlight=False)
# Piped output is read by scripts and people alike: do not squeeze tables into 80 columns.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)

app = typer.Typer(
    name="agentlaunch",
    help=(
        "Launch AI coding agents (Claude Code, Codex CLI, Gemini CLI) from one agent definition, "
        "with cache-friendly instructions and live token and cost counters.\n\n"
        'Example: agentlaunch run demo "hello"'
    ),
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def fail(exc: AgentlaunchError) -> NoReturn:
    """Print a user-facing error and exit with its code."""
    # A message may quote what a provider said: never markup, never an escape sequence.
    for line in exc.message.splitlines():
        err.print(f"[bold red]error:[/] {for_markup(line)}", markup=True, soft_wrap=True)
    if exc.hint:
        err.print(f"[dim]hint:[/] {for_markup(exc.hint)}", markup=True, soft_wrap=True)
    raise typer.Exit(int(exc.exit_code))


def complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of agent names."""
    try:
        explicit = ctx.params.get("agents_dir")  # while completing, typer may give the raw string
        return [n for n in agent_names(paths.agents_dir(Path(explicit) if explicit else None)) if n.startswith(incomplete)]
    except AgentlaunchError:
        return []


AgentsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--agents-dir",
        envvar="AGENTLAUNCH_AGENTS_DIR",
        help="The agents directory (default: ./agents, else the XDG config dir).",
        show_default=False,
    ),
]
AgentArg = Annotated[str, typer.Argument(help="The agent's folder name.", autocompletion=complete_agent)]
TemplatesOpt = Annotated[
    Path | None,
    typer.Option(
        "--templates-dir",
        envvar="AGENTLAUNCH_TEMPLATES_DIR",
        help="Your own templates (instructions.md.j2, startup.md.j2), before the defaults.",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output on stdout.")]


def _version(value: bool) -> None:
    if value:
        print(f"agentlaunch {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Launch AI coding agents from one definition."""
