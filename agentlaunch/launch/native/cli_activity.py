"""Whether a CLI that has not reported yet is still working on its start, or sits idle on a screen of its own.

A CLI's interface reports that it is up with a hook or its session file; until then its launch is ``starting``.
One that has said nothing after ``ready_timeout`` used to be taken for ``asking`` (a dialog, a login, a trust
prompt) at once, but on a loaded machine a CLI can simply take longer to start: twenty Claude Codes started
together on two cores each get a tenth of a core. The two look different from outside: a CLI waiting on the
person uses next to no CPU (Claude Code 2.1.332 on its trust dialog: 0-60 ms a second, mostly none), one still
starting keeps using what the machine gives it, or waits in the run queue for more. So past ``ready_timeout`` the
launch looks once a second at the CLI's process tree (read from ``/proc``, as the reaper follows it): its CPU
time since the last look, and whether any of its processes is runnable now. Only a tree that used less than
:data:`BUSY_CPU` and is not runnable is taken for ``asking``.
"""

from __future__ import annotations

import os

from agentlaunch.launch.reaper import descendants
from agentlaunch.processes import stat_fields

BUSY_CPU = 0.02
"""CPU seconds between two looks (one second apart) from which a silent CLI is still starting: 2 % of a core, the
share one runnable process of 100 gets on two cores. Claude Code on its trust dialog used none in most seconds."""

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Activity:
    """What a CLI's process tree had used at one look: its CPU seconds (the processes' own and what they reaped),
    and whether any of them was runnable (running, or waiting in the run queue for a core)."""

    __slots__ = ("cpu", "runnable")

    def __init__(self, cpu: float, runnable: bool) -> None:
        self.cpu, self.runnable = cpu, runnable

    def __repr__(self) -> str:
        return f"Activity(cpu={self.cpu:.2f}, runnable={self.runnable})"


def activity(root: int) -> Activity | None:
    """``root``'s tree at this moment; None when ``root`` is gone or ``/proc`` cannot tell (no ``/proc``, no
    ``children`` files: then the CLI alone is read)."""
    tree = descendants(root)
    pids = list(tree) if tree else [root]
    ticks, runnable, seen = 0, False, False
    for pid in pids:
        fields = stat_fields(pid)
        if fields is None or len(fields) < 15:
            continue
        try:
            # After the command name: state (0), ..., utime (11), stime (12), cutime (13), cstime (14).
            ticks += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        except ValueError:
            continue
        seen = True
        runnable = runnable or fields[0] == "R"
    return Activity(ticks / _TICK, runnable) if seen else None


def still_starting(last: Activity | None, now: Activity | None) -> bool:
    """Whether a silent CLI looks busy starting between two looks: runnable now, or it used :data:`BUSY_CPU` since.

    Without a previous look (the first, at ``ready_timeout``) it is given one more; a tree that cannot be read is
    not starting (the launch's own handling of an ended CLI says the rest)."""
    if now is None:
        return False
    if last is None or now.runnable:
        return True
    return now.cpu - last.cpu >= BUSY_CPU
