"""``agentlaunch status --line AGENT`` and ``status --json`` before the CLI framework is imported.

:mod:`agentlaunch.entry` hands these two forms here first: they run in a tmux status bar or a prompt,
every few seconds, and answer on the standard library only (no typer, rich, pydantic nor jinja2). Any
other form of ``status`` (the table, ``--watch``, ``--help``, a misspelt or repeated option, a socket
name tmux would refuse) returns None and goes through the full CLI, which prints what it always did
and gives its usage errors. What is printed is formatted in :mod:`agentlaunch.live.status_read`, the
same functions :mod:`agentlaunch.cli.status` prints with.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agentlaunch.fleet.panes import SOCKET_ENV, LeanTmux, PaneListing
from agentlaunch.fleet.records import read_records
from agentlaunch.live.status_read import agent_line, json_rows, json_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agentlaunch.fleet.panes import Pane

SOCKET_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def parse(args: Sequence[str]) -> tuple[str, str | None, str | None] | None:
    """``("line", AGENT, SOCKET)`` or ``("json", None, SOCKET)`` for the forms answered here; None for any other.

    A stand-in for Typer, for these two forms only: `status --line` runs in a tmux status bar every few seconds, and
    the full CLI (typer, rich) printing the same took 126 ms of CPU against this path's 37 ms (`--json` with 20
    agents: 138 against 41 ms; ``bench/bench_status.py --compile``, 15 rounds, load 33 on 2 cores, 2026-12-06).
    ``tests/test_fast_paths.py`` holds its reading of generated command lines to click's: where it gives one, click
    gives the same."""
    values: dict[str, str] = {}
    as_json = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and not as_json:
            as_json = True
            continue
        name, eq, value = arg.partition("=")
        name = {"-L": "--socket"}.get(name, name) if not eq else name
        if name not in ("--line", "--socket") or name in values:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        if not value or value.startswith("-"):
            return None  # click's reading of these is the full CLI's to give
        values[name] = value
    socket = values.get("--socket", os.environ.get(SOCKET_ENV) or None)
    if socket is not None and not (len(socket) <= 64 and set(socket) <= SOCKET_CHARS):
        return None  # the full CLI says why tmux would refuse the name
    line = values.get("--line")
    if line is not None and as_json:
        return None  # a usage error, the full CLI's
    if line is not None:
        return ("line", line, socket)
    return ("json", None, socket) if as_json else None


def answer(args: Sequence[str]) -> int | None:
    """Print what ``status ARGS`` prints and return its exit status; None when the full CLI must answer."""
    if any(key.startswith("_AGENTLAUNCH_COMPLETE") for key in os.environ):
        return None
    form = parse(args)
    if form is None:
        return None
    kind, agent, socket = form
    if kind == "json" and hosts_configured():
        return None  # the hosts' rows too: the full CLI reads them
    if kind == "line" and agent is not None:
        text = agent_line(agent, lambda: dead_panes(socket))
        if text:
            print(text)
    else:
        listing = PaneListing(LeanTmux.found(socket))  # tmux answers while the records are read
        print(json_text(json_rows(read_records(), listing.result().dead)))
    return 0


def dead_panes(socket: str | None) -> list[Pane]:
    """The agents whose tmux pane died or was stopped (the fleet's listing); none without tmux."""
    return PaneListing(LeanTmux.found(socket)).result().dead


def hosts_configured() -> bool:
    """Whether config.yaml may name hosts (the word ``hosts`` anywhere in it: a block ``hosts:``, a flow or JSON
    ``{"hosts": …}`` too; a comment naming it only costs the full CLI): then ``status --json`` reads them too."""
    from agentlaunch.fleet.records import config_folder
    from agentlaunch.fsutil import read_regular

    try:
        data = read_regular(os.path.join(config_folder(), "config.yaml"), 1 << 20)
    except FileNotFoundError:
        return False
    except Exception:  # a config.yaml that cannot be read: the full CLI says why
        return True
    return b"hosts" in data
