"""How `agentlaunch deck` starts: its few options read before Typer is imported (:func:`fast_options`), the first
read of the agents begun in a thread, then the app, imported meanwhile (Textual is most of the first frame).
Anything else (``--help``, a typo, no terminal) is left to the full CLI to answer."""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.deck.rows import Row, Sources, first_read
from agentlaunch.live.tmux import SOCKET_ENV

if TYPE_CHECKING:
    from agentlaunch.hosts.config import Host


def fast_options(args: list[str]) -> tuple[str | None, Path | None] | None:
    """``(socket, agents_dir)`` from ``deck [-L|--socket S] [--agents-dir D]`` in a terminal; None for anything else.

    A stand-in for Typer on the deck's first frame: importing typer, building the command and parsing cost 18 ms
    of CPU more than this (47 against 29 ms to the deck's start, medians of 11 on a 2-core machine, December 2026).
    ``tests/test_deck.py`` holds its reading of generated command lines to click's: where it gives one, click gives
    the same; anything else (help, a typo, ``--``, a value like an option) is Typer's to read and answer."""
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

    sources = deck_sources(paths.agents_dir(agents_dir), socket)
    first: Future[tuple[float, list[Row]]] = Future()
    threading.Thread(target=read_into, args=(first, sources), name="deck-first-read", daemon=True).start()
    from agentlaunch.deck.app import Deck  # Textual's import, while the thread waits for tmux and reads the records

    Deck(sources, socket=socket, first=first).run()


def read_into(future: Future[tuple[float, list[Row]]], sources: Sources) -> None:
    """:func:`~agentlaunch.deck.rows.first_read` into ``future`` (its error too: the deck says it on its message line)."""
    try:
        sources.hosts, sources.hosts_problem = configured_hosts()
        future.set_result(first_read(sources))
    except BaseException as exc:  # noqa: BLE001 - handed to the deck, which says it
        future.set_exception(exc)


def configured_hosts() -> tuple[tuple[Host, ...], str | None]:
    """config.yaml's hosts (read in the first read's thread, beside Textual's import), and why none when it is broken."""
    from agentlaunch.definitions.settings import load_settings
    from agentlaunch.errors import AgentlaunchError

    try:
        return load_settings().hosts, None
    except AgentlaunchError as exc:
        return (), f"hosts: {exc.message.splitlines()[0]}"


def deck_sources(agents_dir: Path | None, socket: str | None) -> Sources:
    """The deck's sources from agentlaunch's folders (the state dir's status records, store and worktrees)."""
    from agentlaunch import paths
    from agentlaunch.live.status import status_dir
    from agentlaunch.live.tmux import Tmux, TmuxMissing

    tmux: Tmux | None
    try:
        tmux = Tmux(socket)
    except TmuxMissing:
        tmux = None
    state = paths.state_dir()
    return Sources(status_dir(state), state, agents_dir, paths.store_path(), tmux)
