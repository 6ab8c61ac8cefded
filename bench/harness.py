"""What the Claude benches share: the real claude, a bench agent, a sealed environment, timed runs.

``find_claude`` picks the real binary (``testbed.clis.ensure_cli`` when
``AGENTLAUNCH_TEST_CLI_CACHE`` is set, else ``/tmp/al-clis``); ``sealed_env``
gives both sides of a comparison the same throwaway HOME, state, config and
bytecode directories pointed at one fake API; ``run_timed`` runs a command and
returns its wall time and the user+sys CPU of its whole process tree.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from agentlaunch.fakeapi.anthropic import claude_env  # noqa: E402
from agentlaunch.launch.reaper import become_subreaper, own_children  # noqa: E402

FALLBACK_CLAUDE = Path("/tmp/al-clis/node_modules/.bin/claude")
MODEL = "claude-sonnet-4-5"


def find_claude() -> Path:
    """The real claude binary the benches run (the pinned one from the test CLI cache)."""
    if not os.environ.get("AGENTLAUNCH_TEST_CLI_CACHE") and FALLBACK_CLAUDE.exists():
        return FALLBACK_CLAUDE
    from testbed.clis import ensure_cli

    return ensure_cli("claude")


def make_agent(agents_dir: Path, claude: Path, workdir: Path, name: str = "bench", model: str | None = MODEL) -> None:
    """A claude agent whose instructions go to CLAUDE.md in ``workdir`` (so a bare claude can read the same file);
    ``model=None`` names none (Claude Code's default)."""
    folder = agents_dir / name
    folder.mkdir(parents=True)
    config = {
        "display": "Bench Agent",
        "provider": "claude",
        "command": str(claude),
        "model": model,
        "working_dir": str(workdir),
        "startup": "Say hi.",
        "delivery": "file",  # the bare side reads the same CLAUDE.md
    }
    if model is None:
        del config["model"]
    (folder / "agent.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "soul.md").write_text("You are a terse benchmark agent.\n")
    (folder / "agent.md").write_text("Answer in one word.\n")


def sealed_env(tmp: Path, api_url: str) -> dict[str, str]:
    """The environment both sides run in: throwaway HOME and agentlaunch directories, the fake API."""
    env = dict(os.environ)
    env.update(claude_env(api_url, home=tmp / "home"))
    env["AGENTLAUNCH_STATE_DIR"] = str(tmp / "state")
    env["AGENTLAUNCH_CONFIG_DIR"] = str(tmp / "config")
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg-config")
    env["XDG_STATE_HOME"] = str(tmp / "xdg-state")
    env["XDG_CACHE_HOME"] = str(tmp / "xdg-cache")
    # An installed agentlaunch has its bytecode compiled (pip does it at install time). Run from a
    # source tree with PYTHONDONTWRITEBYTECODE=1 (set on some machines), every launch would compile
    # every module again: give the Python sides a bytecode cache of their own, filled by the warm-up.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    (tmp / "home").mkdir(exist_ok=True)
    return env


@dataclass(frozen=True)
class Timed:
    """One run: wall seconds, user+sys CPU seconds of the process and every descendant (its orphans included), and
    how many orphans it left for the bench to reap."""

    wall: float
    cpu: float
    orphans: int = 0


ORPHAN_WAIT = 30.0  # seconds a run's orphans get to end before they are killed (and the bench says so)


def reap_orphans(before: set[int]) -> int:
    """Wait for every child that was not there ``before`` (a run's orphans, which came back to this subreaper),
    and for theirs in turn; kill what is still running after ``ORPHAN_WAIT`` seconds. Returns how many ended."""
    ended = 0
    deadline = time.monotonic() + ORPHAN_WAIT
    while left := own_children() - before:
        for pid in left:
            if not ended_within(pid, deadline - time.monotonic()):
                print(f"bench: pid {pid}, left by a run, still ran after {ORPHAN_WAIT:.0f} s: killed", file=sys.stderr)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                ended += os.waitpid(pid, 0)[0] == pid
    return ended


def ended_within(pid: int, timeout: float) -> bool:
    """``pid`` has exited (a zombie counts) or exits within ``timeout`` seconds (its pidfd becomes readable)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], max(timeout, 0.0))[0])
    finally:
        os.close(fd)


def children_cpu() -> float:
    """User+sys CPU seconds of every child process this process has waited for, so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_timed(argv: Sequence[str], env: dict[str, str], cwd: Path, stdin: bytes | None = None) -> Timed:
    """Run ``argv`` to its end, ``stdin`` on its stdin (else /dev/null); exit the bench with its stderr when it fails.

    The CPU figure is the growth of RUSAGE_CHILDREN across the run: the
    process and every descendant reaped inside its tree (agentlaunch waits for
    the CLI it starts, the CLI for its own helpers), and every process the run
    left behind. A CLI may leave an orphan (``codex exec`` leaves a ``git``
    that asks github.com for Codex's plugins, about 11 ms of CPU): agentlaunch,
    a subreaper, reaps it and so counts it, while a bare CLI's orphan went to
    init, uncounted. So the bench is a subreaper too (:func:`become_subreaper`)
    and waits here for what a run left (:func:`reap_orphans`): both sides of a
    comparison count their whole tree alike. The wall time ends with the
    command itself.
    """
    subreaper = become_subreaper()  # made at the first run (later calls only say so): a bench that times none is none
    before = own_children()
    cpu0 = children_cpu()
    start = time.perf_counter()
    feed: dict[str, object] = {"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin}
    done = subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, timeout=120, **feed)  # type: ignore[call-overload]
    elapsed = time.perf_counter() - start
    orphans = reap_orphans(before) if subreaper else 0
    cpu = children_cpu() - cpu0
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode("utf-8", "replace"))
        raise SystemExit(f"{list(argv)[:3]} failed with exit code {done.returncode}")
    return Timed(elapsed, cpu, orphans)


def spread(values: Sequence[float]) -> str:
    """``median (min .. max)`` of ``values``, three decimals."""
    return f"{statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f})"


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """The first and third quartile (the middle half) of ``values``."""
    q1, _, q3 = statistics.quantiles(values, n=4)
    return q1, q3


def machine_line() -> str:
    """When and on what this run was measured: the UTC time, the load average (1, 5, 15 min) and the cores."""
    from datetime import UTC, datetime

    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load} on {os.cpu_count()} cores"
