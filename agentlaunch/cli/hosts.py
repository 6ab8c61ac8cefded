"""`agentlaunch hosts`: the hosts of config.yaml and their state; `hosts check NAME`: what one lacks, and how to get it."""

from __future__ import annotations

import json
import threading
from typing import Annotated

import typer

from agentlaunch.cli.common import JsonOpt, app, err, out
from agentlaunch.definitions.settings import load_settings
from agentlaunch.errors import ExitCode
from agentlaunch.hosts.config import find_host
from agentlaunch.hosts.probe import HostState, probe
from agentlaunch.visible import visible

hosts_app = typer.Typer(
    help="The hosts of config.yaml (agents over SSH, docs/hosts.md): their state; `check NAME` says what one lacks.",
    no_args_is_help=False,
    invoke_without_command=True,
)
app.add_typer(hosts_app, name="hosts")

HostArg = Annotated[str, typer.Argument(help="The host's name in config.yaml.", show_default=False)]


def state_line(state: HostState) -> str:
    """``devbox · me@devbox · reachable · agentlaunch 0.1.0 · fleet contract 1`` (or why not)."""
    parts = [state.host, state.destination]
    if not state.reachable:
        parts.append(f"unreachable: {state.problem}")
    else:
        parts.append("reachable")
        parts.append(f"agentlaunch {state.agentlaunch}" if state.agentlaunch else "no agentlaunch")
        if state.contract is not None:
            parts.append(f"fleet contract {state.contract}")
        parts += [m["why"] for m in state.missing]
    return visible(" · ".join(parts))


@hosts_app.callback()
def hosts(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Each host of config.yaml with its state: reachable, agentlaunch's version and fleet contract there, or why not.

    Every host is asked at once, over its ssh connection (opened on first use, kept 10 minutes). Exit 0 (a host
    that cannot be reached is said, not an error: `hosts check NAME` gives it an exit code).

    Example: agentlaunch hosts --json | jq -r '.[] | select(.reachable | not) | .host'
    """
    if ctx.invoked_subcommand is not None:
        return
    configured = load_settings().hosts
    found: dict[str, HostState] = {}

    def ask(index: int) -> None:
        found[configured[index].name] = probe(configured[index])

    threads = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(len(configured))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    states = [found[h.name] for h in configured]
    if as_json:
        typer.echo(json.dumps([s.as_json() for s in states], indent=2, ensure_ascii=False))
        return
    if not states:
        err.print("no hosts: add hosts: to config.yaml (docs/hosts.md)", soft_wrap=True, markup=False)
    for state in states:
        out.print(state_line(state), markup=False, highlight=False, soft_wrap=True)


@hosts_app.command("check")
def check(name: HostArg, as_json: JsonOpt = False) -> None:
    """Say what host NAME lacks for agentlaunch: agentlaunch itself (or one speaking this fleet contract), tmux, the
    CLI of each agent defined there; and how to install each.

    Exit codes: 0 nothing is missing, 2 no host of that name, 3 a bad config.yaml, 11 the host cannot be reached
    (why is said), 13 something is missing there (each listed with how to install it).

    Example: agentlaunch hosts check devbox || echo "devbox is not ready"
    """
    host = find_host(load_settings().hosts, name)
    state = probe(host, full=True)
    if as_json:
        typer.echo(json.dumps(state.as_json(), indent=2, ensure_ascii=False))
    else:
        report(state)
    if not state.reachable:
        raise typer.Exit(ExitCode.HOST_UNREACHABLE)
    if state.missing:
        raise typer.Exit(ExitCode.HOST_NOT_READY)


def say(text: str) -> None:
    out.print(visible(text), markup=False, highlight=False, soft_wrap=True)


def report(state: HostState) -> None:
    """``hosts check``'s words: what is there, what is missing and how to install it."""
    if not state.reachable:
        err.print(visible(f"{state.host}: unreachable: {state.problem}"), markup=False, soft_wrap=True)
        return
    say(f"{state.host} ({state.destination}): reachable")
    if state.agentlaunch:
        say(f"  agentlaunch {state.agentlaunch}, fleet contract {state.contract if state.contract is not None else '?'}")
    if state.tmux:
        say(f"  {state.tmux}")
    for cli, path in sorted(state.clis.items()):
        say(f"  {cli}: {path}")
    for agent, provider in sorted(state.agents.items()):
        say(f"  agent {agent}: {provider}")
    for item in state.missing:
        say(f"  missing: {item['what']}: {item['why']}; {item['install']}")
    if not state.missing:
        say("  nothing missing")
