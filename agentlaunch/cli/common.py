"""What every command shares: the Typer app and its one error boundary, consoles, option types."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from agentlaunch import __version__, paths
from agentlaunch.definitions.spec import agent_names
from agentlaunch.errors import AgentlaunchError, UsageError
from agentlaunch.live.lazy_console import LazyConsole
from agentlaunch.visible import for_markup

# Made on first use: a quiet headless run never imports rich (LazyConsole).
err = LazyConsole(stderr=True, highlight=False)
# Piped output is read by scripts and people alike: do not squeeze tables into 80 columns.
out = LazyConsole(highlight=False, width=None if sys.stdout.isatty() else 160)


def report(exc: AgentlaunchError) -> None:
    """Print a user-facing error on stderr: each line of its message, then its hint."""
    for line in exc.message.splitlines():
        # A message may quote what a provider said: never markup, never an escape sequence.
        err.print(f"[bold red]error:[/] {for_markup(line)}", markup=True, soft_wrap=True)
    if exc.hint:
        err.print(f"[dim]hint:[/] {for_markup(exc.hint)}", markup=True, soft_wrap=True)


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
            report(exc)
            raise typer.Exit(int(exc.exit_code)) from None


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
    """Say on stderr, in one line, when no agents directory exists and the bundled examples stand in.

    The value is passed on unchanged: each command still resolves it with ``paths.agents_dir``.
    """
    if value is None and not ctx.resilient_parsing:  # resilient parsing: shell completion, which must print nothing
        found, bundled = paths.find_agents_dir()
        if bundled:
            mine = paths.user_agents_dir()
            if mine.is_relative_to(Path.home()):
                mine = "~" / mine.relative_to(Path.home())
            err.print(
                f"note: no agents directory (./agents or {mine}): using the bundled examples in {found}; "
                "create your own with `agentlaunch init`",
                markup=False,  # a path may hold [brackets]
                soft_wrap=True,
            )
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


def _version(value: bool) -> None:
    if value:
        print(f"agentlaunch {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Launch AI coding agents from one definition."""
    if ctx.invoked_subcommand == "run":
        # The early start of the next launch reads `run`'s options from its definition, never from a copy.
        from agentlaunch.launch import prespawn

        command = ctx.command.get_command(ctx, "run") if isinstance(ctx.command, TyperGroup) else None
        if command is not None:
            prespawn.note_run_options(prespawn.option_table(command.params, ctx.help_option_names))


def read_prompt(prompt: str | None, prompt_opt: str | None) -> str | None:
    """The headless prompt from the argument, -p, or stdin (``-``); None means interactive."""
    if prompt is not None and prompt_opt is not None:
        raise UsageError("give the prompt either as an argument or with -p, not both")
    value = prompt if prompt is not None else prompt_opt
    if value is None:
        return None
    if value == "-":
        data = sys.stdin.buffer.read()
        try:
            value = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"the prompt on stdin is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
            ) from None
    else:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError(f"the prompt is not valid UTF-8 (at character {exc.start})") from None
    if not value.strip():
        raise UsageError("the prompt is empty")
    return value
