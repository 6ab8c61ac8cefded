"""Where a fleet bench's CPU went: the processes under a tmux server by kind (the server, ``agentlaunch run``, Claude
Code, clients), each one's own CPU and what it reaped (bench_fleet.py).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from bench_team_start import tree

KINDS = ("tmux server", "agentlaunch run", "agentlaunch's reaped", "claude", "claude's reaped", "tmux clients", "other")


def kind_of(pid: int, ppid_kind: str | None) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    if argv and argv[0].endswith(b"tmux"):
        return "tmux server"
    if b"agentlaunch" in argv[:3] and b"run" in argv[:5]:
        return "agentlaunch run"
    if ppid_kind in ("agentlaunch run", "tmux server", "claude"):
        return "claude"  # bare claude under the server, agentlaunch's claude, and claude's live helpers
    return "other"


def cpu_parts(table: dict[int, tuple[int, str, float, int]], server: int) -> dict[str, float]:
    """CPU seconds of the server's tree by kind: each live process's own, and the children each has reaped."""
    parts = dict.fromkeys(KINDS, 0.0)
    kinds: dict[int, str] = {}
    for pid in tree(table, server):  # parents before children (a depth-first walk from the server)
        ppid = table[pid][0]
        kind = kinds[pid] = kind_of(pid, kinds.get(ppid))
        own, reaped = own_and_reaped(pid)
        parts[kind] += own
        if kind == "agentlaunch run":
            parts["agentlaunch's reaped"] += reaped
        elif kind == "claude":
            parts["claude's reaped"] += reaped
        else:
            parts[kind] += reaped
    return parts


CLK = os.sysconf("SC_CLK_TCK")


def own_and_reaped(pid: int) -> tuple[float, float]:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0, 0.0
    rest = raw[raw.rfind(")") + 2 :].split()
    return (int(rest[11]) + int(rest[12])) / CLK, (int(rest[13]) + int(rest[14])) / CLK


def rusage_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
