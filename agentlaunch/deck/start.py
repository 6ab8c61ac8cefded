"""How `agentlaunch deck` starts: its few options read without the full CLI (typer is a tenth of a second of the
first frame), then the app. Anything else (``--help``, a typo, no terminal) is left to the full CLI to answer."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentlaunch.live.tmux import SOCKET_ENV


def lean_options(args: list[str]) -> tuple[str | None, Path | None] | None:
    """``(socket, agents_dir)`` from ``deck [-L|--socket S] [--agents-dir D]`` in a terminal; None for anything else."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    socket, agents_dir = os.environ.get(SOCKET_ENV) or None, None
    words = iter(args)
    for word in words:
        name, eq, value = word.partition("=")
        if name not in ("-L", "--socket", "--agents-dir") or (eq and name == "-L"):
            return None
        value = value if eq else next(words, "")
        if not value or value.startswith("-"):
            return None
        if name == "--agents-dir":
            agents_dir = Path(value)
        else:
            socket = value
    return socket, agents_dir


def run_deck(socket: str | None, agents_dir: Path | None) -> None:
    """Run the deck until the person quits it."""
    from agentlaunch import paths
    from agentlaunch.deck.app import Deck, deck_sources

    Deck(deck_sources(paths.agents_dir(agents_dir), socket), socket=socket).run()
