"""What every command shares: the Typer app and its one error boundary, consoles, option types."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from agentlaunch import __version__, paths
from agentlaunch.cli.user_io import err as err
from agentlaunch.cli.user_io import note_bundled, report
from agentlaunch.definitions.names import agent_names
from agentlaunch.errors import AgentlaunchError
from agentlaunch.live.lazy_console import LazyConsole

# Piped output is read by scripts and people alike: do not squeeze tables into 80 columns.
out = LazyConsole(highlight=False, width=None if sys.stdout.isatty() else 160)


class ErrorBoundary(TyperGroup):
    """The one place an AgentlaunchError becomes its message and its exit code.

    It wraps the whole command (parsing its arguments and running it) at the
    click level, so ``agentlaunch`` and a test driving ``app`` with typer's
    CliRunner get the same codes and messages; commands just raise. Anything
    else (a bug) still reaches typer's traceback.
    """

    # ctx is click's Context: typer 0.28 vendors click, older versions use it as is; either way only passed on.
    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except AgentlaunchError as exc:
            raise typer.Exit(report(exc)) from None


app = typer.Typer(
    cls=ErrorBoundary,
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


def complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of agent names."""
    try:
        explicit = ctx.params.get("agents_dir")  # while completing, typer may give the raw string
        return [n for n in agent_names(paths.agents_dir(Path(explicit) if explicit else None)) if n.startswith(incomplete)]
    except AgentlaunchError:
        return []


def note_bundled_agents(ctx: typer.Context, value: Path | None) -> Path | None:
    """Say on stderr, in one line, when no agents directory exists and the bundled examples stand in
    (:func:`agentlaunch.cli.user_io.note_bundled`); shell completion (resilient parsing) must print nothing.

    The value is passed on unchanged: each command still resolves it with ``paths.agents_dir``.
    """
    if not ctx.resilient_parsing:
        note_bundled(value)
    return value


AgentsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--agents-dir",
        envvar="AGENTLAUNCH_AGENTS_DIR",
        help="The agents directory (default: ./agents, else the XDG config dir, else the bundled examples).",
        show_default=False,
        callback=note_bundled_agents,
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
LocalOpt = Annotated[bool, typer.Option("--local", help="This machine's agents only, not those of the hosts of config.yaml.")]
HostOpt = Annotated[
    str | None,
    typer.Option(
        "--host",
        help="Run it on this host of config.yaml, over ssh (exit 11 unreachable, 12 connection dropped, 13 not ready "
        "there: docs/hosts.md).",
        show_default=False,
    ),
]


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
