"""The deck's rows: every agent, defined, live, dead or stopped, read from the readers the other commands use.

Nothing here draws: :func:`gather` turns status records (:func:`~agentlaunch.live.status.read_records`),
tmux's panes, the stop notes, the usage store and the worktrees into :class:`Row` objects, and
:func:`cells` turns one row into the text of its cells at a given time. A source that cannot be read
(a record that is not JSON, a definition that fails to load, a worktree whose repository is gone) gives
a row that says so; it never stops the others from showing.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch.definitions.names import agent_names
from agentlaunch.errors import AgentlaunchError
from agentlaunch.fsutil import read_regular
from agentlaunch.live.life import STOPPED_OPTION, read_note
from agentlaunch.live.status import RECORD_LIMIT, SESSION_OPTION, read_records, shown_state
from agentlaunch.live.status_read import stop_marked
from agentlaunch.live.tmux import AGENT_OPTION, FORK_OPTION, Tmux
from agentlaunch.usage.plan_limits import limits_text
from agentlaunch.usage.warmth import cache_cell, span

if TYPE_CHECKING:
    from agentlaunch.worktrees.git_worktree import WorktreeState

RED_STATES = frozenset({"asking", "stalled", "retrying", "paused"})
"""States that need the person now: shown first, in red. Any other state a record carries is shown as it is."""


def is_red(state: str) -> bool:
    """A state of :data:`RED_STATES`, its reason after a colon or not ("paused: budget", as status says it)."""
    return state.partition(":")[0] in RED_STATES


def question(row: Row) -> str | None:
    """What an ``asking`` agent's CLI asks, as its record says it (``state_reason``: the tool and its input for Claude
    Code and Codex, what Gemini's notification said), or None."""
    reason = row.record.get("state_reason")
    return reason if row.state == "asking" and isinstance(reason, str) and reason.strip() else None


BUDGET_EXIT = 6  # ExitCode.BUDGET: a budget stopped the agent
_PANE_FORMAT = "\t".join(("#{pane_id}", "#{session_name}", "#{pane_pid}", "#{" + AGENT_OPTION + "}", "#{pane_dead}",
                          "#{pane_dead_status}", "#{" + STOPPED_OPTION + "}", "#{" + SESSION_OPTION + "}",
                          "#{" + FORK_OPTION + "}"))  # fmt: skip


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
    number: int = 0  # a fork's place among its agent's running sessions (`cx ⑂ 2`): :func:`number_forks`
    flag: str = ""  # the problem in a few words, on the row; the whole of it goes to the message line

    @property
    def ident(self) -> tuple[str, str]:
        """Who this row is: the agent and its session. The selection and a confirmed key follow it, not the row's
        place, through a re-sort, a refresh, a filter, and a record that becomes a dead pane."""
        return self.agent, self.session_id or ""

    @property
    def label(self) -> str:
        """The agent as the deck names it: ``cx``, or ``cx ⑂ 2`` for its fork."""
        return f"{self.agent} ⑂ {self.number}" if self.fork else self.agent

    @property
    def live(self) -> bool:
        return bool(self.record) and self.state != "stale"

    @property
    def urgency(self) -> int:
        """Sort order: who needs the person first."""
        if is_red(self.state):
            return 0
        if self.problem is not None or self.state.startswith("dead"):
            return 1
        if self.state == "waiting":
            return 2
        if self.live:
            return 3
        return 4 if self.pane or self.state != "not running" else 5


@dataclass(frozen=True)
class PaneInfo:
    pane_id: str
    session: str
    pid: int
    agent: str
    dead: bool
    exit_status: int | None
    stopped: bool
    session_id: str
    fork: str = ""  # a fork's pane: the session it started from


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
    panes: list[PaneInfo] | None = None  # tmux's agent panes as last listed
    record_files: frozenset[str] = frozenset()  # the status folder's names when the panes were listed


def tmux_panes(tmux: Tmux | None) -> tuple[list[PaneInfo], str | None]:
    """Every agent pane on the server, and what went wrong reading them (None: fine, or simply no server)."""
    if tmux is None:
        return [], None
    try:
        proc = tmux.run("list-panes", "-a", "-F", _PANE_FORMAT, check=False)
    except OSError as exc:
        return [], f"tmux: {exc.strerror or exc}"
    if proc.returncode != 0:
        said = proc.stderr.strip()
        gone = "no server running" in said or "error connecting" in said or not said
        return [], None if gone else f"tmux: {said.splitlines()[0]}"
    found = []
    for line in proc.stdout.splitlines():
        cells = line.split("\t")
        if len(cells) != 9 or not cells[3]:
            continue
        pane_id, session, pid, agent, dead, status, stopped, sid, fork = cells
        found.append(PaneInfo(pane_id, session, int(pid) if pid.isdigit() else 0, agent, dead == "1",
                              int(status) if status.isdigit() else None, stop_marked(stopped, pid), sid, fork))  # fmt: skip
    return found, None


def why_unreadable(path: Path) -> str:
    """Why a ``*.json`` in the status folder is no status record."""
    try:
        data = json.loads(read_regular(path, RECORD_LIMIT).decode("utf-8"))
    except OSError as exc:
        return f"status record {path.name} cannot be read: {exc.strerror or exc}"
    except (ValueError, RecursionError):
        return f"status record {path.name} is not JSON"
    return "" if isinstance(data, dict) else f"status record {path.name} is not a JSON object"


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


def live_rows(sources: Sources, panes: list[PaneInfo], worktrees: dict[str, WorktreeState]) -> list[Row]:
    """A row per status record (stale ones flagged), and one per file in the folder that is no record."""
    rows = []
    records = read_records(sources.status_dir, clean=False)
    by_pid = {p.pid: p for p in panes if not p.dead}
    for r in records:
        d = r.data
        pid = d.get("pid")
        pane = by_pid.get(pid) if isinstance(pid, int) else None
        wd = str(d.get("working_dir") or "")
        tree = worktrees.get(wd)
        state = shown_state(r.state, d) if r.state == "paused" else r.state  # "paused: budget", as status says it
        row = Row(f"live:{r.path.name}", r.agent, state, str(d.get("provider") or ""), str(d.get("model") or ""),
                  tree.worktree.repo if tree else (repo_of(sources, wd) if wd else ""), d, _since(d),
                  pane.pane_id if pane else None, pane.session if pane else None,
                  d.get("session_id") if isinstance(d.get("session_id"), str) else None, wd or None, worktree=tree,
                  fork=str(d.get("fork_of") or "") or (pane.fork if pane else ""))  # fmt: skip
        if r.stale:
            row.problem, row.flag = "its agentlaunch process is gone (stale record)", "process gone"
        rows.append(row)
    seen = {r.path.name for r in records}
    with contextlib.suppress(OSError):
        for path in sorted(sources.status_dir.iterdir()):
            ours = path.suffix == ".json" and not path.name.startswith(".") and path.name not in seen
            if ours and (why := why_unreadable(path)):
                rows.append(Row(f"bad:{path.name}", path.stem, "unreadable", problem=why, flag="status record"))
    return rows


def gather(
    sources: Sources, worktrees: dict[str, WorktreeState] | None = None, today: dict[str, float] | None = None,
    *, panes_again: bool = True,
) -> list[Row]:
    """Every agent, most urgent first, then by repository and name. Without ``panes_again``, tmux's panes as last
    listed, unless a record came or went since (a record that only changed its state is in the same pane)."""
    worktrees = worktrees or {}
    try:
        files = frozenset(os.listdir(sources.status_dir))
    except OSError:
        files = frozenset()
    if panes_again or sources.panes is None or files != sources.record_files:
        sources.panes, sources.tmux_problem = tmux_panes(sources.tmux)
        sources.record_files = files
    panes = sources.panes
    rows = live_rows(sources, panes, worktrees)
    running = {r.agent for r in rows if r.live}
    running_sessions = {r.ident for r in rows if r.live}
    by_agent_tree = {w.worktree.agent: w for w in worktrees.values()}
    for pane in panes:
        # a dead pane of an agent running elsewhere is its past; a fork's (a session of its own) shows unless it runs
        if not pane.dead or (pane.agent in running and not pane.fork) or (pane.agent, pane.session_id) in running_sessions:
            continue
        if pane.stopped:
            state = "stopped"
        elif pane.exit_status == BUDGET_EXIT:
            state = "budget stopped"
        else:
            state = "dead" + (f" (exit {pane.exit_status})" if pane.exit_status is not None else "")
        rows.append(Row(f"pane:{pane.pane_id}", pane.agent, state, pane=pane.pane_id, tmux_session=pane.session,
                        session_id=pane.session_id or None, worktree=by_agent_tree.get(pane.agent), fork=pane.fork))  # fmt: skip
    shown = {r.agent for r in rows}
    names: list[str] = []
    if sources.agents_dir is not None:
        try:
            names = agent_names(sources.agents_dir)
        except AgentlaunchError as exc:
            rows.append(Row("agents-dir", "(agents)", "unreadable", problem=exc.message.splitlines()[0], flag="agents dir"))
    for name in names:
        provider, model, problem = definition(sources, name)
        for row in rows:
            if row.agent == name and not row.provider:
                row.provider, row.model = provider, model
        if name in shown:
            continue
        note = read_note(name, sources.state_dir)
        rows.append(Row(f"def:{name}", name, "stopped" if note else "not running", provider, model, problem=problem,
                        worktree=by_agent_tree.get(name), flag="broken definition" if problem else ""))  # fmt: skip
    for row in rows:
        row.today = (today or {}).get(row.agent)
        if row.worktree is not None and not row.repo:
            row.repo = row.worktree.worktree.repo
    number_forks(rows)
    rows.sort(key=lambda r: (r.urgency, r.repo, r.agent, r.key))
    return rows


def number_forks(rows: list[Row]) -> None:
    """Give each fork its number, as `agentlaunch status` marks it (``cx ⑂ 2``): its place among its agent's running
    sessions by their start (the first is 1); a fork that does not run (a dead pane) comes after them."""
    running: dict[str, list[Row]] = {}
    for row in rows:
        if row.live:
            running.setdefault(row.agent, []).append(row)
    for mine in running.values():
        mine.sort(key=lambda r: (str(r.record.get("started") or ""), r.key))
    ended: dict[str, int] = {}
    for row in sorted((r for r in rows if r.fork), key=lambda r: _pane_order(r.pane)):
        mine = running.get(row.agent, [])
        place = next((i for i, r in enumerate(mine, 1) if r is row), None)
        if place is None:
            ended[row.agent] = ended.get(row.agent, len(mine)) + 1
            place = ended[row.agent]
        row.number = place


def _pane_order(pane: str | None) -> int:
    return int(pane[1:]) if pane and pane[1:].isdigit() else 1 << 30


def folder_mtime(folder: Path) -> float:
    """The status folder's mtime (0 when there is none): a record written, replaced or removed changes it."""
    try:
        return folder.stat().st_mtime
    except OSError:
        return 0.0


def first_read(
    sources: Sources, worktrees: dict[str, WorktreeState] | None = None, today: dict[str, float] | None = None,
    *, panes_again: bool = True,
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
    return (row.label, state_cell(row, now), model, context_cell(d), str(d.get("cost") or ""), today, cache_cell(d, now),
            limits_text(d, now) or "", branch_cell(row.worktree), Path(row.repo).name if row.repo else "")  # fmt: skip
