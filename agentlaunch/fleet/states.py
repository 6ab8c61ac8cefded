"""What an agent's state means, said once: the states a launch reports, "needs you", stale, stopped, dead.

Every view (the ``status`` table, ``--line``, ``--json``, the deck, ``agentlaunch fleet``) and every command
that acts on an agent asks these, never its own list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlaunch.processes import same_process

if TYPE_CHECKING:  # only mypy reads these
    from typing import Any, Protocol

    class PaneLike(Protocol):  # agentlaunch.fleet.panes.Pane
        @property
        def exit_status(self) -> int | None: ...
        @property
        def stopped(self) -> bool: ...


STATES = ("starting", "waiting", "thinking", "tool", "retrying", "asking", "stalled", "paused", "exited")
"""The states a launch reports; ``asking`` (a permission prompt or a question waits) and ``stalled`` (its turn has
heard nothing from the CLI for ``stall_timeout``) mean a person is needed; so does ``paused`` (a budget's
``on_spent: pause``: its ``state_reason`` is ``budget``, shown ``paused: budget``)."""
NEEDS_YOU = ("asking", "stalled", "paused", "retrying")
"""The one definition of "needs you": the agent blocks on the person, or cannot go on well without them (a question,
a turn that hears nothing, a spent budget, a loop of failed API calls). ``waiting`` (at its prompt) is not: nothing
is wrong. Asked through :func:`needs_you` by every view and sink: ``status``, the deck (first, in red),
``fleet --json``'s ``needs_you`` and the bell, tmux flag and notify command (:mod:`agentlaunch.live.needs_you`)."""
ANNOUNCED = ("asking", "stalled", "paused")
"""The states of :data:`NEEDS_YOU` the bell, the tmux flag and the notify command announce on a change into them:
not ``retrying`` (a retry loop usually recovers: it is shown first, in red, with no alarm)."""
TIMED = (*NEEDS_YOU, "waiting")  # the states shown with how long they have lasted
TURN_STATES = ("thinking", "tool", "asking", "retrying", "stalled")  # a turn is under way
STARTED_STATES = ("waiting", "asking", "thinking", "tool", "retrying", "stalled", "paused")  # its CLI said it is up
URGENT = frozenset(NEEDS_YOU)  # the deck shows them first, in red
ASKING = "asking"

STALE = "stale"  # a record whose agentlaunch process is gone (killed with SIGKILL, say)
STOPPED = "stopped"  # its pane is dead because `agentlaunch stop` ended it (or its note says so)
BUDGET_STOPPED = "budget stopped"  # its pane is dead because a budget ended it (exit 6)
DEAD = "dead"  # its pane is dead for another reason: its error is kept on the pane
NOT_RUNNING = "not running"  # defined, and nothing of it runs nor was stopped
UNREADABLE = "unreadable"  # a file in the status folder that is no record
SETTING_UP = "setting up"  # its worktree's setup command runs; the agent starts after it
SETUP_FAILED = "setup failed"  # its worktree's setup command failed: the agent did not start

STOPPED_OPTION = "@agentlaunch_stopped"  # the pane option `stop` sets on the pane it ends: "PID AT"
BUDGET_EXIT = 6  # agentlaunch.errors.ExitCode.BUDGET: a budget stopped the agent


def is_stale(data: dict[str, Any]) -> bool:
    """The record's agentlaunch process no longer exists (or its pid now belongs to another process).

    Whatever ``pid`` holds (``true``, ``-1``, ``2**70``, a string) it never reaches ``os.kill`` unchecked:
    anything that cannot be a running launch's pid makes the record stale.
    """
    return not same_process(data.get("pid"), data.get("pid_start") or None)


def needs_you(state: str) -> bool:
    """A state of :data:`NEEDS_YOU`, its reason after a colon or not ("paused: budget", as status says it)."""
    return state.partition(":")[0] in NEEDS_YOU


is_urgent = needs_you  # the deck's word for it


def stop_marked(mark: str, pid: int | str) -> bool:
    """Whether a pane's ``@agentlaunch_stopped`` value (``"PID AT"``) says `agentlaunch stop` ended the process the
    pane runs (or ran last), ``pid``. `stop` sets it before it signals, so no reader ever sees the pane dead and not
    yet marked; a mark left from an earlier process (the pane started again since) says nothing of this one."""
    words = mark.split()
    if not words:
        return False
    return len(words) == 1 or words[0] == str(pid)  # one word: an earlier version's mark (the time only)


def pane_state(pane: PaneLike) -> str:
    """What an agent whose pane is dead is: ``stopped`` (`agentlaunch stop`), ``budget stopped`` or ``dead``."""
    if pane.stopped:
        return STOPPED
    return BUDGET_STOPPED if pane.exit_status == BUDGET_EXIT else DEAD
