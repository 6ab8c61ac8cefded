"""What `tmux up`, `restart` and the MCP server's start say of each agent they start: on stderr, one line each."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from agentlaunch.cli.common import err
from agentlaunch.live.resume import turns_text
from agentlaunch.visible import for_markup

if TYPE_CHECKING:
    from agentlaunch.live.comeback import WayBack
    from agentlaunch.live.startup_wait import AgentStart
    from agentlaunch.live.tmux import UpResult
    from agentlaunch.usage.records import SessionRow


def restart_said(agent: str, row: SessionRow | None, *, fresh: bool, way: WayBack | None = None) -> str:
    """One line for a dead pane started again: in which session and where (``way``: a new worktree when its own
    was removed), or why in a new one."""
    if way is not None and not way.resumed:
        return f"{agent}: restarting in a new session {way.where()}: {way.why_new}"
    if row is not None:
        title = f" “{row.title}”" if row.title else ""
        where = way.where() if way is not None else f"in {row.working_dir}"
        return f"{agent}: restarting in its session {row.session_id[:8]}{title} ({turns_text(row)}) {where}"
    if fresh:
        return f"{agent}: restarting in a new session (--fresh)"
    return f"{agent}: its pane's session had no turn: restarting in a new session"


def said_worktrees(ways: dict[str, WayBack], started: Collection[str]) -> None:
    """After the report, for each agent ``started`` in a new worktree because its own was removed: resumed or new,
    where (the last line, which the deck shows)."""
    for agent, way in ways.items():
        if way.worktree is not None and agent in started:
            err.print(for_markup(way.summary()), markup=True, highlight=False, soft_wrap=True)


def report_up(result: UpResult, outcomes: list[AgentStart], session: str, socket: str | None) -> bool:
    """One line per agent (started, failed with its pane's error, already running), then a summary; True if any failed."""
    width = max((len(o.agent) for o in outcomes), default=0)
    width = max([width, *(len(a) for a in result.running)])
    for o in outcomes:
        if o.started:
            state = f" ({o.state})" if o.state else ""
            err.print(f"  {o.agent:<{width}}  [green]{o.detail}[/]{state}, pane {o.pane_id}", markup=True, highlight=False)
        else:
            err.print(
                f"  {o.agent:<{width}}  [bold red]{for_markup(o.detail)}[/] [dim](pane {o.pane_id} kept)[/]",
                markup=True,
                highlight=False,
                soft_wrap=True,
            )
    for name in result.running:
        err.print(f"  {name:<{width}}  already running", highlight=False)
    ok = {o.agent for o in outcomes if o.started}
    parts = []
    if started := [n for n in result.started if n in ok]:
        parts.append("started " + ", ".join(started))
    if restarted := [n for n in result.restarted if n in ok]:
        parts.append("restarted " + ", ".join(restarted))
    if result.running:
        parts.append("already running " + ", ".join(result.running))
    failed = [o.agent for o in outcomes if not o.started]
    if failed:
        parts.append("failed " + ", ".join(failed))
    where = f"tmux session {session}" + (f" (socket {socket})" if socket else "")
    err.print(f"{where}: {'; '.join(parts)}", highlight=False, soft_wrap=True)
    return bool(failed)
