"""What the deck's keys do outside itself: agentlaunch's own commands, tmux, git.

``send``, ``stop``, ``restart``, ``tmux up``, ``fork`` and ``worktrees remove`` run as
``python -m agentlaunch …``: the very code path a person typing them takes, with its
refusals and exit codes. They run in a worker thread, never on the deck's event loop.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from agentlaunch.live.tmux import SOCKET_ENV, Tmux
from agentlaunch.visible import visible
from agentlaunch.worktrees.merge import run_git

COMMAND_TIMEOUT = 120.0  # seconds: a stop waits up to 20 s, a restart up to 30 s for the agent to start
CAPTURE_LIMIT = 1 << 20


@dataclass(frozen=True)
class Outcome:
    code: int
    said: str  # one line: what the command said last (its error, or its report)

    @property
    def ok(self) -> bool:
        return self.code == 0


def agentlaunch(args: list[str], socket: str | None, cwd: Path | None = None) -> Outcome:
    """Run ``agentlaunch ARGS`` (this Python's) with the deck's tmux server, and say how it went."""
    env = dict(os.environ)
    if socket:
        env[SOCKET_ENV] = socket
    env.pop("TMUX_PANE", None)  # the deck's own pane is not the agent's
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "agentlaunch", *args],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=COMMAND_TIMEOUT,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Outcome(124, f"agentlaunch {args[0]} did not finish within {COMMAND_TIMEOUT:g}s")
    except OSError as exc:
        return Outcome(127, f"agentlaunch {args[0]}: {exc.strerror or exc}")
    lines = [line.strip() for line in (proc.stderr + "\n" + proc.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    said = (errors or lines or [f"agentlaunch {args[0]}: exit {proc.returncode}"])[-1 if not errors else 0]
    return Outcome(proc.returncode, visible(said))


def same_server(tmux: Tmux, environ: dict[str, str] | None = None) -> bool:
    """The deck runs in a pane of the agents' own tmux server (switch-client reaches them)."""
    inside = (environ if environ is not None else dict(os.environ)).get("TMUX", "")
    if not inside:
        return False
    proc = tmux.run("display-message", "-p", "#{socket_path}", check=False)
    return proc.returncode == 0 and proc.stdout.strip() == inside.split(",")[0]


def switch_to(tmux: Tmux, pane: str) -> Outcome:
    """Inside the agents' tmux: show ``pane`` in this client (:func:`way_back` says which key comes back)."""
    proc = tmux.run("switch-client", "-t", pane, check=False)
    return Outcome(proc.returncode, proc.stderr.strip() or "")


@dataclass(frozen=True)
class Place:
    """Where a pane is on the tmux server: its session and window."""

    session: str
    window: str


def place_of(tmux: Tmux, pane: str) -> Place | None:
    """``pane``'s session and window, or None when tmux does not know it."""
    proc = tmux.run("display-message", "-p", "-t", pane, "#{session_name}\t#{window_id}", check=False)
    session, _, window = proc.stdout.strip().partition("\t")
    return Place(session, window) if proc.returncode == 0 and session and window else None


def deck_place(tmux: Tmux, environ: dict[str, str] | None = None) -> Place | None:
    """The deck's own session and window when it runs in a pane of the agents' tmux server, else None."""
    env = environ if environ is not None else dict(os.environ)
    pane = env.get("TMUX_PANE", "")
    if not pane or not same_server(tmux, env):
        return None
    return place_of(tmux, pane)


def way_back(deck: Place | None, agent: Place | None) -> str:
    """The tmux key that brings the client back to the deck after Enter switched it to ``agent``'s pane: the last
    pane (the deck in the agent's window), the last window (a window of the agent's session, the team's own), the
    last session (the deck in a session of its own)."""
    if deck is None or agent is None:
        return "prefix L (last session)"
    if deck == agent:
        return "prefix ; (last pane)"
    if deck.session == agent.session:
        return "prefix l (last window)"
    return "prefix L (last session)"


def ways_back(deck: Place | None, inside: bool, team: bool) -> str:
    """What brings the person back to the deck after Enter, said for where the deck runs (the help page); ``team``:
    agents run in the deck's own session."""
    if deck is not None and not team:
        return f"the deck runs in tmux session {deck.session}, the agents in others: prefix L (last session) comes back"
    if deck is not None:
        return (
            f"the deck is a window of tmux session {deck.session}: from an agent of that session prefix l (last "
            "window) comes back, from an agent in another session prefix L (last session)"
        )
    if inside:
        return "the deck runs in another tmux server than the agents: Enter cannot reach them from here"
    return "outside tmux Enter attaches: prefix d (detach) comes back"


def attach_argv(tmux: Tmux, pane: str, session: str) -> list[str]:
    """Outside tmux: attach to ``pane``'s session with it selected (detach, prefix d, comes back to the deck)."""
    return tmux.command("select-window", "-t", pane, ";", "select-pane", "-t", pane, ";", "attach-session", "-t", f"={session}")


UNTRACKED_SHOWN = 20  # new files whose whole text the diff page shows (the rest are named by git status)


def worktree_diff(path: str, against: str | None) -> str:
    """The worktree's changes: its commits against its base (``base...HEAD``), what is not committed yet, and the
    text of the new files git does not track yet (an agent's new file is most of its work; ``git diff`` omits it)."""
    parts = []
    base = [["log", "--oneline", f"{against}..HEAD"], ["diff", "--stat", f"{against}...HEAD"], ["diff", f"{against}...HEAD"]]
    for args in (base if against else []) + [["status", "--short"], ["diff", "HEAD"]]:
        parts.append(f"$ git {' '.join(args)}\n{_git_said(path, args)}")
    listed = _git_said(path, ["ls-files", "-z", "--others", "--exclude-standard"], ok_only=True)
    for name in [n for n in listed.split("\0") if n][:UNTRACKED_SHOWN]:
        args = ["diff", "--no-index", "--", "/dev/null", name]
        parts.append(f"$ git {' '.join(args)}\n{_git_said(path, args)}")
    return "\n\n".join(parts)


def _git_said(path: str, args: list[str], ok_only: bool = False) -> str:
    """What ``git -C PATH ARGS`` printed (its error when it printed nothing else), or why it could not run;
    ``ok_only``: its output when it succeeded, else nothing."""
    try:
        proc = run_git(path, *args, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "" if ok_only else str(exc)
    if ok_only:
        return proc.stdout if proc.returncode == 0 else ""
    return (proc.stdout or proc.stderr).rstrip()[:CAPTURE_LIMIT]


def merge_worktree(repo: str, path: str, branch: str, base: str | None) -> Outcome:
    """Merge a finished worktree's branch into its base in the main work tree
    (:func:`~agentlaunch.worktrees.merge.merge_branch`): refused (exit 4) where work could be lost, a merge git cannot
    finish aborted (exit 1)."""
    from agentlaunch.worktrees.merge import merge_branch

    return Outcome(*merge_branch(repo, path, branch, base))
