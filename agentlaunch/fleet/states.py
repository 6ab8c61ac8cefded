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
NEEDS_YOU = ("waiting", "asking", "stalled", "paused")  # the states in which the agent waits for the person
TIMED = (*NEEDS_YOU, "retrying")  # the states shown with how long they have lasted
TURN_STATES = ("thinking", "tool", "asking", "retrying", "stalled")  # a turn is under way
STARTED_STATES = ("waiting", "asking", "thinking", "tool", "retrying", "stalled", "paused")  # its CLI said it is up
URGENT = frozenset({"asking", "stalled", "retrying", "paused"})
"""States that need the person now: the deck shows them first, in red (``retrying`` too: a loop of failed calls)."""
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


def is_urgent(state: str) -> bool:
    """A state of :data:`URGENT`, its reason after a colon or not ("paused: budget", as status says it)."""
    return state.partition(":")[0] in URGENT


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
