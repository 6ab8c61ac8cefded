"""The fleet as JSON: ``agentlaunch fleet --json``, a versioned contract other programs build on.

``{"version": 1, "agents": [...], "problems": [...]}``; each agent's fields are documented in docs/fleet.md and
pinned by ``tests/test_fleet_contract.py`` (a golden file and the key set): a change to them is deliberate. Fields
may be added within a version; a field removed, renamed or given another meaning is a new version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlaunch.fleet import states

if TYPE_CHECKING:  # only mypy reads these
    from collections.abc import Sequence
    from typing import Any

    from agentlaunch.fleet.model import Agent, Fleet

VERSION = 1
AGENT_FIELDS = (
    "agent",
    "label",
    "state",
    "needs_you",
    "running",
    "session_id",
    "fork_of",
    "fork_number",
    "pid",
    "working_dir",
    "provider",
    "model",
    "tmux",
    "problem",
    "stopped",
    "setup",
    "record",
    "host",
    "state_source",
)
"""Every agent object's keys, in this order (each present, null when it does not apply: ``host`` is null for this
machine's agents, the host's name of config.yaml for another's: :mod:`agentlaunch.hosts.fleet`)."""
TMUX_FIELDS = ("session", "pane", "window", "dead", "exit_status")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def agent_json(agent: Agent) -> dict[str, Any]:
    """One agent as the contract gives it."""
    data = agent.data
    pane = agent.pane
    note = agent.note
    pid = data.get("pid")
    return {
        "agent": agent.name,
        "label": agent.label,
        "state": agent.state.replace(" ", "-"),
        "needs_you": agent.needs_you,
        "running": agent.running,
        "session_id": agent.session_id,
        "fork_of": agent.fork or None,
        "fork_number": agent.number if agent.fork else None,
        "pid": pid if isinstance(pid, int) else None,
        "working_dir": agent.working_dir,
        "provider": _text(data.get("provider")),
        "model": _text(data.get("model")),
        "tmux": None
        if pane is None
        else {
            "session": pane.tmux_session,
            "pane": pane.pane_id,
            "window": pane.window_name,
            "dead": pane.dead,
            "exit_status": agent.exit_status,
        },
        "problem": agent.problem,
        "stopped": None
        if note is None
        else {"reason": _text(note.get("reason")), "at": _text(note.get("at")), "session_id": _text(note.get("session_id"))},
        "setup": agent.setup.shown() if agent.setup is not None else None,
        "record": agent.record.as_dict() if agent.record is not None else None,
        "host": None,
        "state_source": _text(data.get("state_source")) if agent.record is not None else None,  # added within v1
    }


def fleet_json(fleet: Fleet) -> dict[str, Any]:
    """The whole fleet: ``{"version": 1, "agents": [...], "problems": [...]}``, the agents most urgent first."""
    return {"version": VERSION, "agents": [agent_json(a) for a in ordered(fleet.agents)], "problems": list(fleet.problems)}


def ordered(agents: Sequence[Agent]) -> list[Agent]:
    """Who needs the person first, then the running ones, then the rest; by name and key within each."""
    return sorted(agents, key=lambda a: (0 if a.needs_you else 1 if a.running else 2, a.name, a.key))


STATES = (
    *states.STATES,
    states.STALE,
    states.DEAD,
    states.STOPPED,
    states.BUDGET_STOPPED,
    states.SETTING_UP,
    states.SETUP_FAILED,
    states.UNREADABLE,
    states.NOT_RUNNING,
    "host-unreachable",
)
"""Every ``state`` the contract gives (written with ``-`` for a space: ``budget-stopped``, ``not-running``)."""
