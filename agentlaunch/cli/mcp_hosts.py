"""The MCP server's tools on a host of config.yaml (``host``): the ``--host`` commands' own bodies, their output read.

``list_agents`` reads every host's fleet as ``agentlaunch fleet`` does (:mod:`agentlaunch.hosts.fleet`: in parallel
with this machine's, a host not read one row saying why). ``start_agent``, ``send_prompt``, ``stop_agent`` and
``restart_agent`` with a ``host`` run ``tmux up``, ``send --json``, ``stop --json`` and ``restart`` there through
:mod:`agentlaunch.cli.on_host` (the host's stdout kept, never written on the server's own stdout, its protocol);
``answer_question`` runs ``answer --json`` there twice (the open question read, then answered by its id),
``usage_report`` ``usage --json`` there; ``agent_status`` reads the host's fleet (and its question when it asks).
An unknown host is the usage error naming the configured ones; a host down, :class:`~agentlaunch.errors.HostUnreachable`
saying why and that nothing ran there.
"""

from __future__ import annotations

import json
from typing import Any

from agentlaunch.cli.on_host import host_named, kept_on, send_kept
from agentlaunch.definitions.settings import load_settings
from agentlaunch.errors import AgentlaunchError, HostUnreachable, TurnFailed, UsageError
from agentlaunch.hosts import ssh
from agentlaunch.hosts.config import Host
from agentlaunch.hosts.fleet import fleet_agents, fleet_check, read_output, start_fleet_reads
from agentlaunch.hosts.remote import Seen
from agentlaunch.hosts.usage import host_rows, start_usage_reads

START_WAIT = 60.0  # seconds start_agent and restart_agent wait for an agent to come up, here or on a host
STOP_WAIT = 20.0  # seconds stop_agent waits for an agent to end (as `agentlaunch stop`)


class RefusedThere(AgentlaunchError):
    """agentlaunch on a host refused or failed the command: its ``error:`` lines and ``hint:``, named by the host."""


class HostReads:
    """Every host's fleet (``fleet --json --local``) and its cost today by agent (``usage --by agent --since today
    --json``), all read at once over the hosts' connections while this machine's fleet is read."""

    def __init__(self, hosts: tuple[Host, ...]) -> None:
        self.fleets = start_fleet_reads(hosts)
        self.costs = start_usage_reads(hosts, ["--by", "agent", "--since", "today"])

    def agents(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Each host's agents as list_agents gives them (a host not read: one row saying why), and its problems."""
        rows, problems = fleet_agents(self.fleets.result())
        costs, _ = host_rows(self.costs.result(), "agent")  # a host not read: said by its fleet's row
        today: dict[tuple[object, object], object] = {(h, r.get("agent")): r.get("cost_usd") for h, r in costs}
        return [summary(row, today.get((row.get("host"), row.get("agent")))) for row in rows], problems


def start_reads() -> HostReads | None:
    """The hosts' reads, started now (None: no host in config.yaml)."""
    hosts = load_settings().hosts
    return HostReads(hosts) if hosts else None


def summary(row: dict[str, Any], cost_today: object = None) -> dict[str, Any]:
    """A host's agent of the fleet contract (or its one "host-unreachable" row) as list_agents gives an agent."""
    tmux, stopped = row.get("tmux"), row.get("stopped")
    why = row.get("problem") or (stopped.get("reason") if isinstance(stopped, dict) else None)
    return {
        "agent": row.get("agent"),
        "label": row.get("label"),
        "state": row.get("state"),
        "needs_you": row.get("needs_you"),
        "why": why if isinstance(why, str) else None,
        "running": row.get("running"),
        "provider": row.get("provider"),
        "model": row.get("model"),
        "session_id": row.get("session_id"),
        "context": None,  # not in the fleet contract
        "context_window": None,
        "session_cost": None,
        "cost_today_usd": cost_today if isinstance(cost_today, int | float) and not isinstance(cost_today, bool) else None,
        "pane": tmux.get("pane") if isinstance(tmux, dict) else None,
        "host": row.get("host"),
    }


def host_fleet(name: str) -> list[dict[str, Any]]:
    """Host ``name``'s agents (the fleet contract's objects, each with its ``host``); HostUnreachable when not read."""
    host = host_named(name)
    read = read_output(host, ssh.agentlaunch_args(host, ["fleet", "--json", "--local"], agents=True, socket=True), fleet_check)
    if read.problem is not None:
        raise HostUnreachable(read.problem, hint=f"agentlaunch hosts check {name} says what it lacks")
    return [{**a, "host": name} for a in read.data["agents"] if isinstance(a, dict)]


def agent_status(agent: str, name: str) -> dict[str, Any]:
    """``agent`` on host ``name`` as its fleet gives it (each of its sessions and panes)."""
    rows = host_fleet(name)
    mine = [a for a in rows if a.get("agent") == agent]
    if not mine:
        there = ", ".join(sorted({str(a.get("agent")) for a in rows})) or "none"
        raise UsageError(f"agent {agent!r} not found on {name} (agents there: {there})")
    return {
        "agent": agent,
        "host": name,
        "sessions": mine,
        "cost_today_usd": None,
        "question": open_question(agent, name) if any(a.get("state") == "asking" for a in mine) else None,
        "problems": [],
    }


def kept_json(name: str, args: list[str], what: str, *, agents: bool = True) -> Any:
    """``agentlaunch ARGS`` on host ``name`` (its tmux server not named: these commands take none), what its ``--json``
    printed; RefusedThere saying why when it exited otherwise than 0."""
    code, seen = kept_on(name, args, what=what, agents=agents, socket=False)
    try:
        done = json.loads(seen.out) if code == 0 else None
    except ValueError:
        done = None
    if done is None:
        raise refused(name, code, seen, hint=f"agent_status {{agent, host: {name}}} shows its state")
    return done


def open_question(agent: str, name: str) -> dict[str, Any]:
    """`answer AGENT --json --host NAME`: what ``agent`` asks on host ``name`` now (its id, tool, options)."""
    asked = kept_json(name, ["answer", agent, "--json"], "answer")
    if not isinstance(asked, dict) or not isinstance(asked.get("question"), dict):
        raise RefusedThere(f"on {name}: agentlaunch answer --json there printed no question")
    question: dict[str, Any] = asked["question"]
    return question


ANSWER_FLAGS = {"once": "--allow", "always": "--always", "deny": "--deny"}


def give_answer(agent: str, name: str, question: str, decision: str, reply: str | None) -> dict[str, Any]:
    """`answer AGENT --allow|--always|--deny|--reply TEXT --question ID --json --host NAME`: the question ``question``
    answered there (the reply one word of the command line, quoted for the host's shell), or refused saying why."""
    given = [ANSWER_FLAGS[decision]] if decision in ANSWER_FLAGS else ["--reply", reply or ""]
    done = kept_json(name, ["answer", agent, *given, "--question", question, "--json"], "answer")
    return done if isinstance(done, dict) else {}


def usage_report(name: str, by: str, since: str | None) -> list[Any]:
    """`usage --by BY [--since ISO] --json --host NAME`: the host's own store's report."""
    rows = kept_json(name, ["usage", "--by", by, *(["--since", since] if since else []), "--json"], "usage", agents=False)
    if not isinstance(rows, list):
        raise RefusedThere(f"on {name}: agentlaunch usage --json there printed no list")
    return rows


def state_after(agent: str, name: str, session_id: str | None) -> str | None:
    """``agent``'s state on host ``name`` now (its session's when given); None when the host is not read."""
    try:
        mine = [a for a in host_fleet(name) if a.get("agent") == agent]
    except AgentlaunchError:
        return None
    same = [a for a in mine if session_id and a.get("session_id") == session_id] or [a for a in mine if a.get("running")] or mine
    state = same[0].get("state") if same else None
    return state if isinstance(state, str) else None


def refused(name: str, code: int, seen: Seen, hint: str | None = None) -> RefusedThere:
    """What agentlaunch on host ``name`` said when it exited ``code``: its ``error:`` lines, else its last lines."""
    said = [line.removeprefix("error:").strip() for line in seen.tail if line.startswith("error:")]
    hints = [line.removeprefix("hint:").strip() for line in seen.tail if line.startswith("hint:")]
    text = "; ".join(said or [line.strip() for line in seen.tail[-3:] if line.strip()]) or f"exit {code}"
    if code == 3:  # no agent of that name there (or its definition is wrong): exit 3 as everywhere
        hint = "list_agents lists each host's agents with their host"
    return RefusedThere(f"on {name}: {text}", hint="; ".join(hints) or hint)


def start_agent(agent: str, name: str, worktree: bool) -> dict[str, Any]:
    """`tmux up AGENT --host NAME` (never attached): the agent started there, or left alone when it runs."""
    host: Host = host_named(name)
    already = any(a.get("running") for a in host_fleet(name) if a.get("agent") == agent)  # a host down: said here
    args = ["tmux", "up", agent, "--no-attach", "--wait", f"{START_WAIT:g}", *(["--worktree"] if worktree else [])]
    code, seen = kept_on(name, args, what="tmux up")
    if code != 0:
        raise refused(name, code, seen, hint=f"agent_status {{agent, host: {name}}} shows its pane")
    attach = ["tmux", *(["-L", host.socket] if host.socket else []), "attach"]
    return {
        "agent": agent,
        "host": name,
        "started": not already,
        "already_running": already,
        "attach": f"ssh -t {host.ssh} {' '.join(attach)}",
    }


def send_prompt(agent: str, name: str, prompt: str, session: str | None, wait: bool, timeout_s: float | None) -> dict[str, Any]:
    """`send AGENT - --json [--wait] --host NAME`: the prompt on the host command's stdin; what its ``--json`` said
    (the session, and with ``wait`` the answer, exit code, error, usage and cost)."""
    code, seen = send_kept(name, agent, prompt, wait, timeout_s, session)
    try:
        done = json.loads(seen.out) if seen.out.strip() else None
    except ValueError:
        done = None
    if not isinstance(done, dict):
        raise refused(name, code, seen, hint=f"agent_status {{agent, host: {name}}} shows its state")
    return done


def stop_agent(agent: str, name: str) -> dict[str, Any]:
    """`stop AGENT --json --host NAME`."""
    code, seen = kept_on(name, ["stop", agent, "--timeout", f"{STOP_WAIT:g}", "--json"], what="stop")
    try:
        done = json.loads(seen.out) if code == 0 else None
    except ValueError:
        done = None
    if not isinstance(done, dict):
        raise refused(name, code, seen)
    if not done.get("ended"):
        raise TurnFailed(f"{agent} on {name} did not end within {STOP_WAIT:g}s", hint="stop_agent again, or agent_status")
    return {"agent": agent, "host": name, "session_id": done.get("session_id"), "stopped": True, "pane": done.get("pane")}


def restart_agent(agent: str, name: str) -> dict[str, Any]:
    """`restart AGENT --host NAME`."""
    code, seen = kept_on(name, ["restart", agent, "--wait", f"{START_WAIT:g}"], what="restart")
    if code != 0:
        raise refused(name, code, seen, hint=f"agent_status {{agent, host: {name}}} shows its pane and why")
    return {"agent": agent, "host": name, "restarted": True, "state": state_after(agent, name, None)}
