"""What the commands share that needs no Typer: the error console and the one error boundary's report, the prompt,
the bundled-agents note (the deck's fast start in :mod:`agentlaunch.entry` reports through it too)."""

from __future__ import annotations

import sys
from pathlib import Path

from agentlaunch import paths
from agentlaunch.errors import AgentlaunchError, UsageError
from agentlaunch.live.lazy_console import LazyConsole
from agentlaunch.visible import for_markup

# Made on first use: a quiet headless run never imports rich (LazyConsole).
err = LazyConsole(stderr=True, highlight=False)


def report(exc: AgentlaunchError) -> int:
    """The one error boundary's answer: each line of ``exc``'s message as ``error:``, then its ``hint:``, on stderr;
    its exit code. Every command that ends on an AgentlaunchError ends here (the Typer app's ``ErrorBoundary``,
    the deck's start in :mod:`agentlaunch.entry`)."""
    for line in exc.message.splitlines():
        # A message may quote what a provider said: never markup, never an escape sequence.
        err.print(f"[bold red]error:[/] {for_markup(line)}", markup=True, soft_wrap=True)
    if exc.hint:
        err.print(f"[dim]hint:[/] {for_markup(exc.hint)}", markup=True, soft_wrap=True)
    return int(exc.exit_code)


def note_bundled(value: Path | None) -> None:
    """Say on stderr, in one line, when no agents directory was named or exists and the bundled examples stand in."""
    if value is None:
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
