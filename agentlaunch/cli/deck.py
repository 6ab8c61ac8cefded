"""`agentlaunch deck`: the full-screen list of every agent (Textual, imported only here, only when it runs)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agentlaunch.cli.common import AgentsDirOpt, app
from agentlaunch.errors import UsageError
from agentlaunch.live.tmux import SOCKET_ENV

DeckSocketOpt = Annotated[
    str | None,
    typer.Option("--socket", "-L", envvar=SOCKET_ENV, help="The agents' tmux server (tmux -L).", show_default=False),
]


@app.command()
def deck(socket: DeckSocketOpt = None, agents_dir: AgentsDirOpt = None) -> None:
    """One screen for every agent: who needs you, a live preview of its pane, keys to step in.

    Lists the defined agents and the running ones (their status records, across tmux sessions
    and working directories), dead and stopped panes; asking and stalled agents first, in red.
    Enter attaches, s sends, x stops, r restarts, n starts one, d shows a worktree's diff,
    u usage, Tab the next agent that needs you, / filters, ? lists the keys, q quits (every
    agent keeps running). Exit codes: 0 quit, 2 not a terminal.

    Example: agentlaunch deck   ·   agentlaunch deck -L work
    """
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            "the deck is a full-screen terminal application: run it in a terminal", hint="for scripts: agentlaunch status --json"
        )
    from agentlaunch.deck.start import run_deck

    run_deck(socket, agents_dir)
