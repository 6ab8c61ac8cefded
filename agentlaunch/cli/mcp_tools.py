"""What the MCP server's tools do (``agentlaunch mcp``): the team's own commands, called as the CLI calls them.

Each tool is a method of :class:`Team` returning a JSON-able dict, or raising an
:class:`~agentlaunch.errors.AgentlaunchError` whose message says why and whose hint what would unblock it (the
server turns it into a tool error). Nothing here re-derives what a command decides: the fleet's read model
(``agentlaunch fleet``), ``tmux up``, ``send`` (:mod:`agentlaunch.launch.prompt_client`), ``stop``/``restart``,
``answer`` (:mod:`agentlaunch.launch.answer_client`) and ``usage`` do the work; this module imports no MCP SDK.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from agentlaunch.cli import mcp_hosts
from agentlaunch.cli.fleet import defined
from agentlaunch.cli.life import restart_agent, stop_one
from agentlaunch.cli.mcp_hosts import START_WAIT, STOP_WAIT
from agentlaunch.cli.tmux import bring_up
from agentlaunch.cli.usage import read_report
from agentlaunch.errors import AgentlaunchError, PromptNotTaken, TurnFailed, UsageError
from agentlaunch.fleet.contract import agent_json, ordered
from agentlaunch.fleet.model import Agent, read_fleet, sessions_of
from agentlaunch.launch.answer_client import give_answer, open_question
from agentlaunch.launch.control_request import prompt_problem
from agentlaunch.launch.prompt_client import offer_until_taken, turn_over
from agentlaunch.live.known import refuse_unknown
from agentlaunch.live.tmux import Tmux, TmuxMissing
from agentlaunch.usage.reports import parse_by, parse_since, report_records

ASKING_HINT = "answer_question {agent, answer} answers it (allow, always, deny, or a reply); agent_status shows the question"
USAGE_KEYS = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning")
DECISIONS = {
    "allow": "once",
    "allow once": "once",
    "once": "once",
    "yes": "once",
    "always": "always",
    "allow always": "always",
    "deny": "deny",
    "no": "deny",
}


class Team:
    """The team one ``agentlaunch mcp`` serves: its tmux server and session, its agents directory."""

    def __init__(
        self, *, socket: str | None, tmux_session: str | None, agents_dir: Path | None, templates_dir: Path | None
    ) -> None:
        self.socket, self.tmux_session = socket, tmux_session
        self.agents_dir, self.templates_dir = agents_dir, templates_dir

    # -- reading ---------------------------------------------------------------------------------------------

    def _fleet(self) -> tuple[list[Agent], list[str]]:
        try:
            tmux: Tmux | None = Tmux(self.socket)
        except TmuxMissing:
            tmux = None
        names, problem = defined(self.agents_dir)
        found = read_fleet(tmux=tmux, names=names)
        return ordered(found.agents), [*found.problems, *([problem] if problem else [])]

    def list_agents(self) -> dict[str, Any]:
        """Every agent (defined, running, stopped) with its state, provider and model, context, cost today, and
        whether it needs a person and why: this machine's (``host`` null), then each host's of config.yaml, read
        in parallel meanwhile as `agentlaunch fleet` reads them (a host not read: one row saying why)."""
        reads = mcp_hosts.start_reads()
        agents, problems = self._fleet()
        today = _cost_today()
        listed = [_summary(a, today.get(a.name)) | {"host": None} for a in agents]
        if reads is not None:
            far, said = reads.agents()
            listed += far
            problems += said
        return {"agents": listed, "problems": problems}

    def agent_status(self, agent: str, host: str | None = None) -> dict[str, Any]:
        """``agent`` as `agentlaunch fleet --json` gives it (each of its sessions and panes), its cost today, and
        the question it asks now, if any; with ``host``, as that host's fleet gives it."""
        if host is not None:
            return mcp_hosts.agent_status(agent, host)
        agents, problems = self._fleet()
        mine = [a for a in agents if a.name == agent]
        if not mine:
            refuse_unknown(agent, self.agents_dir)  # a name that is no agent: run's message
        asked = None
        if any(a.running and a.state == "asking" for a in mine):
            try:
                asked = open_question(agent, None, self.agents_dir)
            except (PromptNotTaken, UsageError) as exc:
                asked = {"unreadable": exc.message}
        return {
            "agent": agent,
            "sessions": [agent_json(a) for a in mine],
            "cost_today_usd": _cost_today().get(agent),
            "question": asked,
            "problems": problems,
        }

    def _state_after(self, agent: str, session_id: str | None) -> str | None:
        agents, _ = self._fleet()
        mine = [a for a in agents if a.name == agent]
        same = [a for a in mine if session_id and a.session_id == session_id] or [a for a in mine if a.running] or mine
        return same[0].state.replace(" ", "-") if same else None

    def _not_asking(self, agent: str, session_id: str | None) -> None:
        """Raise PromptNotTaken when ``agent``'s session asks a person in the middle of the turn a wait is for."""
        mine = [r for r in sessions_of(agent) if not r.stale and r.data.get("session_id") == session_id]
        if not mine or mine[0].state != "asking":
            return
        try:
            asked = open_question(agent, session_id, self.agents_dir)
            said = f"{asked.get('asks') or 'a question'} (tool {asked.get('tool')}, options {asked.get('options')})"
        except AgentlaunchError:
            said = "a question"  # answered meanwhile: the next look sees the turn go on
        raise PromptNotTaken(
            f"{agent} asks a person in the middle of this turn: {said}; the turn goes on and waits for the answer",
            hint=f"{ASKING_HINT}; the turn then goes on in the agent (agent_status shows its state)",
        )

    # -- acting ----------------------------------------------------------------------------------------------

    def start_agent(
        self, agent: str, prompt: str | None = None, worktree: bool = False, host: str | None = None
    ) -> dict[str, Any]:
        """`tmux up AGENT` (``--worktree``, ``--host``), then, with ``prompt``, that prompt handed to it as `send` does."""
        if prompt is not None and (problem := prompt_problem(prompt)) is not None:
            raise UsageError(f"prompt: {problem}")  # refused before anything starts
        if host is not None:
            up = mcp_hosts.start_agent(agent, host, worktree)
            if prompt is None:
                return up | {"state": mcp_hosts.state_after(agent, host, None)}
            sent = self.send_prompt(agent, prompt, wait=False, host=host)
            return up | {"prompt_sent": True, "session_id": sent["session_id"], "state": sent["state"]}
        tmux = Tmux(self.socket)
        kept = bring_up(
            tmux,
            [agent],
            session=self.tmux_session,
            layout=None,
            socket=self.socket,
            wait=START_WAIT,
            worktree=worktree,
            agents_dir=self.agents_dir,
            templates_dir=self.templates_dir,
        )
        if kept.failed:
            said = "; ".join(o.detail for o in kept.outcomes if not o.started) or "it did not start"
            raise TurnFailed(f"{agent} did not start: {said}", hint="agent_status shows its pane; fix it, then start_agent")
        outcome = next((o for o in kept.outcomes if o.agent == agent), None)
        result: dict[str, Any] = {
            "agent": agent,
            "started": outcome is not None,
            "already_running": agent in kept.running,
            "tmux_session": kept.session,
            "pane": outcome.pane_id if outcome is not None else None,
        }
        if prompt is not None:
            client, first = offer_until_taken(
                agent, None, (prompt, False), False, None, agents_dir=self.agents_dir, asking_hint=ASKING_HINT
            )
            client.close()
            result["prompt_sent"] = True
            result["session_id"] = first.get("session_id")
        result["state"] = self._state_after(agent, result.get("session_id"))
        return result

    def send_prompt(
        self,
        agent: str,
        prompt: str,
        session: str | None = None,
        wait: bool = True,
        timeout_s: float | None = None,
        host: str | None = None,
    ) -> dict[str, Any]:
        """`agentlaunch send AGENT PROMPT [--wait] [--timeout S] [--host NAME]`: the answer, the turn's usage and the
        state after."""
        if timeout_s is not None and not timeout_s > 0:
            raise UsageError("timeout_s must be a positive number of seconds")
        if (problem := prompt_problem(prompt)) is not None:
            raise UsageError(f"prompt: {problem}")
        if host is not None:
            done = mcp_hosts.send_prompt(agent, host, prompt, session, wait, timeout_s)
        else:
            done = self._send_here(agent, prompt, session, wait, timeout_s)
        session_id = str(done.get("session_id") or "") or None
        if not wait:
            return {"agent": agent, "host": host, "session_id": session_id, "sent": True} | {
                "state": self._state(agent, host, session_id)
            }
        code = done.get("exit_code")
        result = {
            "agent": agent,
            "host": host,
            "session_id": session_id,
            "answer": done.get("answer") if isinstance(done.get("answer"), str) else "",
            "exit_code": code,
            "error": done.get("error"),
            "usage": _usage(done),
            "state": self._state(agent, host, session_id),
        }
        if code != 0:
            raise TurnFailed(_turn_failed(agent, result), hint=_turn_hint(agent, code))
        return result

    def _send_here(self, agent: str, prompt: str, session: str | None, wait: bool, timeout_s: float | None) -> dict[str, Any]:
        """`send`'s work on this machine: the session that took the prompt and, with ``wait``, the turn's end."""
        started = time.monotonic()
        client, first = offer_until_taken(
            agent, session, (prompt, False), wait, timeout_s, agents_dir=self.agents_dir, asking_hint=ASKING_HINT
        )
        session_id = str(first.get("session_id") or "") or None
        try:
            if not wait:
                return {"session_id": session_id}
            left = None if timeout_s is None else max(timeout_s - (time.monotonic() - started), 0.001)
            done = turn_over(client, agent, left, timeout_s, watch=lambda: self._not_asking(agent, session_id))
        finally:
            client.close()
        return {**done, "session_id": session_id}

    def _state(self, agent: str, host: str | None, session_id: str | None) -> str | None:
        return mcp_hosts.state_after(agent, host, session_id) if host is not None else self._state_after(agent, session_id)

    def stop_agent(self, agent: str, host: str | None = None) -> dict[str, Any]:
        """`agentlaunch stop AGENT [--host NAME]`: its CLI ended cleanly, its conversation resumable."""
        if host is not None:
            return mcp_hosts.stop_agent(agent, host)
        done = stop_one(agent, socket=self.socket, timeout=STOP_WAIT, agents_dir=self.agents_dir)
        if not done.ended:
            raise TurnFailed(f"{agent} did not end within {STOP_WAIT:g}s", hint="stop_agent again, or agent_status")
        return {"agent": agent, "session_id": done.session_id, "stopped": True, "pane": done.pane}

    def restart_agent(self, agent: str, host: str | None = None) -> dict[str, Any]:
        """`agentlaunch restart AGENT [--host NAME]`: back in its pane, in the session it ran."""
        if host is not None:
            return mcp_hosts.restart_agent(agent, host)
        if restart_agent(
            agent,
            session=None,
            socket=self.socket,
            wait=START_WAIT,
            agents_dir=self.agents_dir,
            templates_dir=self.templates_dir,
        ):
            raise TurnFailed(f"{agent} did not start again", hint="agent_status shows its pane and why")
        return {"agent": agent, "restarted": True, "state": self._state_after(agent, None)}

    def answer_question(self, agent: str, answer: str, host: str | None = None) -> dict[str, Any]:
        """`agentlaunch answer AGENT [--host NAME]`: the open question read, then answered (a decision word, or a
        reply) by its id."""
        asked = mcp_hosts.open_question(agent, host) if host is not None else open_question(agent, None, self.agents_dir)
        decision = DECISIONS.get(answer.strip().lower())
        offered = [o for o in asked.get("options") or [] if isinstance(o, str)]
        if decision is None and "reply" not in offered:
            words = ", ".join(sorted({w for w, d in DECISIONS.items() if d in offered}))
            raise UsageError(f"{agent} asks a permission ({asked.get('tool')}): answer one of {words}, not a reply")
        which, text = str(asked.get("id")), None if decision else answer
        if host is not None:
            reply = mcp_hosts.give_answer(agent, host, which, decision or "reply", text)
        else:
            reply = give_answer(agent, which, decision or "reply", text, None, self.agents_dir)
        done = {"agent": agent, "question": asked, "answered": reply.get("answered"), "decision": reply.get("decision")}
        return done | ({"host": host} if host is not None else {})

    def usage_report(self, by: str, since: str | None = None, host: str | None = None) -> dict[str, Any]:
        """`agentlaunch usage --by BY [--since S] --json [--host NAME]` (a host's: ``since`` read here, its moment
        sent)."""
        grouping = parse_by(by)
        start = parse_since(since) if since else None
        when = start.isoformat() if start else None
        if host is not None:
            return {"by": grouping, "since": when, "rows": mcp_hosts.usage_report(host, grouping, when), "host": host}
        rows, _ = read_report(grouping, since=start)
        return {"by": grouping, "since": when, "rows": report_records(rows, grouping)}


def _cost_today() -> dict[str, float]:
    rows, _ = read_report("agent", since=parse_since("today"))
    return {str(r.key): r.cost_usd for r in rows if r.cost_usd is not None}


def _summary(agent: Agent, cost_today: float | None) -> dict[str, Any]:
    data = agent.data
    why = data.get("state_reason") or agent.problem or (agent.note or {}).get("reason")
    return {
        "agent": agent.name,
        "label": agent.label,
        "state": agent.state.replace(" ", "-"),
        "needs_you": agent.needs_you,
        "why": why if isinstance(why, str) else None,
        "running": agent.running,
        "provider": data.get("provider"),
        "model": data.get("model"),
        "session_id": agent.session_id,
        "context": data.get("context"),
        "context_window": data.get("window"),
        "session_cost": data.get("cost"),
        "cost_today_usd": cost_today,
        "pane": agent.pane.pane_id if agent.pane is not None else None,
    }


def _usage(done: dict[str, Any]) -> dict[str, Any]:
    found = done.get("usage")
    raw: dict[str, Any] = found if isinstance(found, dict) else {}
    counts = {k: raw.get(k) for k in USAGE_KEYS if type(raw.get(k)) is int}
    cost = done.get("cost_usd")
    counts["cost_usd"] = cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    return counts


def _turn_failed(agent: str, result: dict[str, Any]) -> str:
    said = result["error"] or f"exit {result['exit_code']}"
    answer = f"; its answer so far: {result['answer']}" if result["answer"] else ""
    return f"{agent}'s turn did not finish: {said} (state after: {result['state']}){answer}"


def _turn_hint(agent: str, code: object) -> str | None:
    if code == 6:
        return f"a budget stopped {agent}: raise its budget (budget: in its agent.yaml, or config.yaml), then restart_agent"
    if code == 130:
        return "a person interrupted the turn: send_prompt again"
    return "agent_status shows its state"
