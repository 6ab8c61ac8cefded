"""The deck's rows: every agent, defined, live, dead or stopped, as the fleet reads them.

Nothing here draws: :func:`gather` asks the fleet (:mod:`agentlaunch.fleet`: the status records, tmux's panes,
the stop notes and the agents defined, joined once) and adds what only the deck shows (each definition's provider
and model, the worktrees, the usage store's cost of the day) into :class:`Row` objects, and :func:`cells` turns one
row into the text of its cells at a given time. A source that cannot be read (a record that is not JSON, a
definition that fails to load, a worktree whose repository is gone) gives a row that says so; it never stops the
others from showing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch.definitions.names import agent_names
from agentlaunch.errors import AgentlaunchError
from agentlaunch.fleet import states
from agentlaunch.fleet.model import Agent, join
from agentlaunch.fleet.notes import read_note
from agentlaunch.fleet.panes import Pane, list_panes
from agentlaunch.fleet.records import folder_mtime, folder_names, read_folder
from agentlaunch.live.status_read import shown_state
from agentlaunch.live.tmux import Tmux
from agentlaunch.usage.plan_limits import limits_text
from agentlaunch.usage.warmth import cache_cell, span

if TYPE_CHECKING:
    from agentlaunch.hosts.config import Host
    from agentlaunch.worktrees.git_worktree import WorktreeState

RED_STATES = states.URGENT
"""States that need the person now: shown first, in red. Any other state a record carries is shown as it is."""
is_red = states.is_urgent
__all__ = ["folder_mtime", "is_red"]


def question(row: Row) -> str | None:
    """What an ``asking`` agent's CLI asks, as its record says it (``state_reason``: the tool and its input for Claude
    Code and Codex, what Gemini's notification said), or None."""
    reason = row.record.get("state_reason")
    return reason if row.state == "asking" and isinstance(reason, str) and reason.strip() else None


@dataclass
class Row:
    """One line of the deck."""

    key: str  # unique and stable across refreshes: the selection follows it
    agent: str
    state: str = "not running"
    provider: str = ""
    model: str = ""
    repo: str = ""
    record: dict[str, Any] = field(default_factory=dict)
    since: datetime | None = None
    pane: str | None = None
    tmux_session: str | None = None
    session_id: str | None = None
    working_dir: str | None = None
    problem: str | None = None  # what is wrong on this row, said on it
    today: float | None = None
    worktree: WorktreeState | None = None
    fork: str = ""  # a fork's row: the session it started from (its record's fork_of, or its pane's fork option)
    number: int = 0  # a fork's place among its agent's running sessions (`cx ⑂ 2`): the fleet numbers it
    flag: str = ""  # the problem in a few words, on the row; the whole of it goes to the message line
    host: str | None = None  # another host's agent: that host's name in config.yaml (None: this machine's)
    host_down: str | None = None  # its host cannot be watched now: why (the row is its last known state, greyed)

    @property
    def ident(self) -> tuple[str, str]:
        """Who this row is: the agent (``NAME@HOST`` for another host's) and its session. The selection and a confirmed
        key follow it, not the row's place, through a re-sort, a refresh, a filter, and a record that becomes a dead
        pane."""
        return self.who, self.session_id or ""

    @property
    def who(self) -> str:
        """The agent, and its host when it is another host's: ``cx``, ``cx@devbox``."""
        return self.agent if self.host is None else f"{self.agent}@{self.host}"

    @property
    def label(self) -> str:
        """The agent as the deck names it: ``cx``, or ``cx ⑂ 2`` for its fork."""
        return f"{self.agent} ⑂ {self.number}" if self.fork else self.agent

    @property
    def live(self) -> bool:
        return bool(self.record) and self.state != "stale"

    @property
    def urgency(self) -> int:
        """Sort order: who needs the person first (an agent whose host is down: with those not running)."""
        if self.host_down is not None:
            return 4
        if is_red(self.state):
            return 0
        if self.problem is not None or self.state.startswith("dead"):
            return 1
        if self.state == "waiting":
            return 2
        if self.live:
            return 3
        return 4 if self.pane or self.state != "not running" else 5


Definitions = dict[str, tuple[float, str, str, str | None]]
"""Agent name -> the mtime of its agent.yaml, its provider, model, and the problem loading it."""


@dataclass
class Sources:
    """Where the deck reads from (a test or the bench names its own folders and tmux server)."""

    status_dir: Path
    state_dir: Path
    agents_dir: Path | None
    store_path: Path
    tmux: Tmux | None
    definitions: Definitions = field(default_factory=dict)
    repos: dict[str, str] = field(default_factory=dict)  # working dir -> its repository's top folder
    tmux_problem: str | None = None
    hosts: tuple[Host, ...] = ()  # config.yaml's hosts: their agents are rows too (:mod:`agentlaunch.deck.host_rows`)
    hosts_problem: str | None = None  # config.yaml could not be read: why (no host then)
    panes: list[Pane] | None = None  # tmux's agent panes as last listed
    record_files: frozenset[str] = frozenset()  # the status folder's names when the panes were listed


def tmux_panes(tmux: Tmux | None) -> tuple[list[Pane], str | None]:
    """Every agent pane on the server, and what went wrong reading them (None: fine, or simply no server)."""
    listing = list_panes(tmux)
    return listing.agent_panes, listing.problem


def definition(sources: Sources, name: str) -> tuple[str, str, str | None]:
    """``name``'s provider, model and load problem as last loaded (:func:`~agentlaunch.deck.worker_reads.load_definitions`,
    in a worker thread: validating a definition imports its schemas, too slow for the first frame); blank until then."""
    entry = sources.definitions.get(name)
    return entry[1:] if entry is not None else ("", "", None)


def repo_of(sources: Sources, working_dir: str) -> str:
    """The top folder of the git repository holding ``working_dir`` (itself when none), cached."""
    if working_dir in sources.repos:
        return sources.repos[working_dir]
    top = Path(working_dir)
    for folder in (top, *top.parents):
        if (folder / ".git").exists():
            top = folder
            break
    sources.repos[working_dir] = str(top)
    return str(top)


def _since(record: dict[str, Any]) -> datetime | None:
    value = record.get("state_since")
    if not isinstance(value, str):
        return None
    with contextlib.suppress(ValueError):
        since = datetime.fromisoformat(value)
        return since if since.tzinfo is not None else None
    return None


FLAGS = {states.STALE: "process gone", states.UNREADABLE: "status record"}  # a problem's few words, on its row


def deck_state(agent: Agent) -> str:
    """The state as the deck says it: a record's as it is (``paused: budget`` as status says it), a dead pane's
    ``dead (exit N)``."""
    if agent.state == "paused" and agent.record is not None:
        return shown_state(agent.state, agent.data)
    if agent.state == states.DEAD and agent.exit_status is not None:
        return f"dead (exit {agent.exit_status})"
    return agent.state


def row_of(sources: Sources, agent: Agent, worktrees: dict[str, WorktreeState], by_agent_tree: dict[str, WorktreeState]) -> Row:
    """The deck's row of one agent of the fleet."""
    d = agent.data
    pane = agent.pane
    if agent.record is not None:
        wd = str(d.get("working_dir") or "")
        tree = worktrees.get(wd)
        repo = tree.worktree.repo if tree else (repo_of(sources, wd) if wd else "")
        return Row(
            agent.key,
            agent.name,
            deck_state(agent),
            str(d.get("provider") or ""),
            str(d.get("model") or ""),
            repo,
            d,
            _since(d),
            pane.pane_id if pane else None,
            pane.tmux_session if pane else None,
            agent.session_id,
            wd or None,
            agent.problem,
            worktree=tree,
            fork=agent.fork,
            number=agent.number,
            flag=FLAGS.get(agent.state, "") if agent.problem else "",
        )
    if pane is not None:
        return Row(
            agent.key,
            agent.name,
            deck_state(agent),
            pane=pane.pane_id,
            tmux_session=pane.tmux_session,
            session_id=agent.session_id,
            worktree=by_agent_tree.get(agent.name),
            fork=agent.fork,
            number=agent.number,
        )
    return Row(
        agent.key,
        agent.name,
        agent.state,
        problem=agent.problem,
        flag=FLAGS.get(agent.state, ""),
        worktree=None if agent.state == states.UNREADABLE else by_agent_tree.get(agent.name),
    )


def gather(
    sources: Sources,
    worktrees: dict[str, WorktreeState] | None = None,
    today: dict[str, float] | None = None,
    *,
    panes_again: bool = True,
) -> list[Row]:
    """Every agent, most urgent first, then by repository and name. Without ``panes_again``, tmux's panes as last
    listed, unless a record came or went since (a record that only changed its state is in the same pane)."""
    worktrees = worktrees or {}
    files = folder_names(sources.status_dir)
    if panes_again or sources.panes is None or files != sources.record_files:
        sources.panes, sources.tmux_problem = tmux_panes(sources.tmux)
        sources.record_files = files
    records, unreadable = read_folder(sources.status_dir, clean=False)
    names: list[str] = []
    problem: Row | None = None
    if sources.agents_dir is not None:
        try:
            names = agent_names(sources.agents_dir)
        except AgentlaunchError as exc:
            problem = Row("agents-dir", "(agents)", "unreadable", problem=exc.message.splitlines()[0], flag="agents dir")
    fleet = join(records, sources.panes, unreadable=unreadable, names=names, note=lambda name: read_note(name, sources.state_dir))
    by_agent_tree = {w.worktree.agent: w for w in worktrees.values()}
    rows = [row_of(sources, agent, worktrees, by_agent_tree) for agent in fleet]
    rows += [problem] if problem is not None else []
    for name in names:
        provider, model, load_problem = definition(sources, name)
        for row in rows:
            if row.agent == name and not row.provider:
                row.provider, row.model = provider, model
            if row.key == f"def:{name}" and load_problem:
                row.problem, row.flag = load_problem, "broken definition"
    for row in rows:
        row.today = (today or {}).get(row.agent)
        if row.worktree is not None and not row.repo:
            row.repo = row.worktree.worktree.repo
    rows.sort(key=lambda r: (r.urgency, r.repo, r.agent, r.key))
    return rows


def first_read(
    sources: Sources,
    worktrees: dict[str, WorktreeState] | None = None,
    today: dict[str, float] | None = None,
    *,
    panes_again: bool = True,
) -> tuple[float, list[Row]]:
    """The status folder's mtime, then every agent as :func:`gather` reads them: a record written after the read
    changes the folder's mtime, which the deck compares (its watch just up, or on its tick without one)."""
    return folder_mtime(sources.status_dir), gather(sources, worktrees, today, panes_again=panes_again)


# -- cells ------------------------------------------------------------------------------------

COLUMNS = ("agent", "state", "provider/model", "context", "cost", "today", "cache", "plan limits", "branch", "repo")


def how_long(row: Row, now: datetime) -> str:
    """``for 3m12s``: how long the agent has been in its state."""
    if row.since is None or not row.live:
        return ""
    seconds = max((now - row.since).total_seconds(), 0)
    return f"for {int(seconds)}s" if seconds < 60 else f"for {span(seconds)}"


def context_cell(d: dict[str, Any]) -> str:
    """``41.2% · 80,210 left``: context used and the distance to compaction."""
    parts = []
    percent, context, left = d.get("percent"), d.get("context"), d.get("to_compaction")
    if isinstance(percent, int | float) and d.get("window_source") != "observed":
        parts.append(f"{percent:.1f}%")
    elif isinstance(context, int) and context:
        parts.append(f"{context:,}")
    if isinstance(left, int):
        parts.append(f"{left:,} left" if left > 0 else "compacting")
    return " · ".join(parts)


def branch_cell(state: WorktreeState | None) -> str:
    """``agentlaunch/x +2 −0 dirty``, or what git said when it cannot read the worktree."""
    if state is None:
        return ""
    if state.problem is not None:
        return f"broken: {state.problem.splitlines()[0]}"
    if not state.present:
        return f"{state.worktree.branch} (missing)"
    text = state.worktree.branch
    if state.ahead is not None and state.behind is not None:
        text += f" +{state.ahead} −{state.behind}"
    return text + (f" dirty {state.dirty}" if state.dirty else "")


PROBLEM_CELL = 24  # cells of a problem said on its row without a flag: the whole of it goes to the message line


def state_cell(row: Row, now: datetime) -> str:
    """The state, how long, and a problem in a few words: a long one (a definition's error) would widen the column
    until the table showed two columns; the whole problem is said on the message line."""
    text = row.state
    if (duration := how_long(row, now)) and row.state != "exited":
        text += f" {duration}"
    if row.host_down is not None:  # its host's own row says it already
        return text if row.state == "host unreachable" else f"{text} ⚠ host down"
    if row.problem is not None:
        short = row.flag or (row.problem if len(row.problem) <= PROBLEM_CELL else row.problem[: PROBLEM_CELL - 1] + "…")
        text += f" ⚠ {short}"
    return text


def cells(row: Row, now: datetime | None = None) -> tuple[str, ...]:
    """The text of each column (:data:`COLUMNS`) for ``row`` at ``now``."""
    now = now or datetime.now(UTC)
    d = row.record
    model = "/".join(x for x in (row.provider, row.model) if x)
    today = f"${row.today:.4f}" if row.today is not None else ""
    return (
        row.label,
        state_cell(row, now),
        model,
        context_cell(d),
        str(d.get("cost") or ""),
        today,
        cache_cell(d, now),
        limits_text(d, now) or "",
        branch_cell(row.worktree),
        Path(row.repo).name if row.repo else "",
    )
