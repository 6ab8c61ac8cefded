"""The deck's rows of other hosts: each host's agents as its watch gives them (:mod:`agentlaunch.hosts.watch`, one
long-lived ``agentlaunch fleet --watch --json`` there over its shared ssh connection), and how a key reaches them.

:class:`HostRows` keeps each host's agents (the fleet contract's objects, by their ``id``) from the lines of its
stream; :meth:`HostRows.rows` makes them deck rows with their ``host``. A host whose watch ended keeps its last rows,
greyed, each saying why (``host_down``); one never reached is one row saying why. When its watch is back its rows are
current again: the deck is not restarted, nothing is asked of the person.

A key on a remote row runs the command there: ``send``, ``stop``, ``restart``, ``fork`` as ``agentlaunch … --host NAME`` here
(the same code path as a person typing it), Enter as ``ssh -t HOST tmux … attach`` (:func:`attach_argv`).
"""

from __future__ import annotations

import json
import shlex
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentlaunch.deck.actions import CAPTURE_LIMIT
from agentlaunch.deck.preview import GEOMETRY, PaneShot, parse
from agentlaunch.deck.rows import Row
from agentlaunch.hosts import ssh

if TYPE_CHECKING:
    from agentlaunch.hosts.config import Host

UNREACHABLE = "host unreachable"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _since(record: dict[str, Any]) -> datetime | None:
    try:
        since = datetime.fromisoformat(str(record.get("state_since")))
    except ValueError:
        return None
    return since if since.tzinfo is not None else None


def remote_row(host: str, key: str, agent: dict[str, Any]) -> Row:
    """A deck row of another host's agent (an object of the fleet contract)."""
    raw_record, raw_tmux = agent.get("record"), agent.get("tmux")
    record: dict[str, Any] = raw_record if isinstance(raw_record, dict) else {}
    tmux: dict[str, Any] = raw_tmux if isinstance(raw_tmux, dict) else {}
    state = str(agent.get("state") or "?").replace("-", " ")
    if state == "dead" and isinstance(tmux.get("exit_status"), int):
        state = f"dead (exit {tmux['exit_status']})"
    number = agent.get("fork_number")
    return Row(
        f"{host}:{key}",
        str(agent.get("agent") or "?"),
        state,
        provider=_text(agent.get("provider")) or "",
        model=_text(agent.get("model")) or "",
        record={k: v for k, v in record.items() if k != "stale"},
        since=_since(record),
        pane=_text(tmux.get("pane")),
        tmux_session=_text(tmux.get("session")),
        session_id=_text(agent.get("session_id")),
        working_dir=_text(agent.get("working_dir")),
        problem=_text(agent.get("problem")),
        fork=_text(agent.get("fork_of")) or "",
        number=number if isinstance(number, int) else 0,
        host=host,
    )


class HostRows:
    """Each host's agents as its stream said them last, and why a host is down."""

    def __init__(self, hosts: tuple[Host, ...]) -> None:
        self.hosts = {h.name: h for h in hosts}
        self.agents: dict[str, dict[str, dict[str, Any]]] = {h.name: {} for h in hosts}
        self.down: dict[str, str] = {}  # host -> why its watch ended (until it is back)
        self.heard: set[str] = set()  # the hosts whose watch said synced, or ended, at least once

    def got(self, line: dict[str, Any]) -> bool:
        """One line of a host's stream (:mod:`agentlaunch.fleet.stream`); True when its rows changed."""
        host = str(line.get("host"))
        if host not in self.agents:
            return False
        mine = self.agents[host]
        back = self.down.pop(host, None) is not None
        if back:
            mine.clear()  # the host gives all its agents again: the ones it gives are those it has
        change, key = line.get("change"), str(line.get("id"))
        if change == "agent" and isinstance(line.get("agent"), dict):
            mine[key] = line["agent"]
        elif change == "gone":
            mine.pop(key, None)
        elif change == "synced":
            self.heard.add(host)
        return back or change in ("agent", "gone", "synced")

    def lost(self, host: str, problem: str) -> None:
        """The host's watch ended: its rows stay, greyed, saying ``problem`` (``host unreachable: HOST: WHY``)."""
        self.down[host] = problem
        self.heard.add(host)

    def rows(self) -> list[Row]:
        """Every host's rows, in the order of config.yaml (the deck sorts them with this machine's)."""
        found: list[Row] = []
        for host in self.hosts:
            why = self.down.get(host)
            mine = [remote_row(host, key, agent) for key, agent in self.agents[host].items()]
            if why is not None and not mine:
                mine = [Row(f"{host}:{UNREACHABLE}", host, UNREACHABLE, problem=why, flag="host down", host=host)]
            for row in mine:
                row.host_down = why
            found += mine
        return found


def host_tmux(host: Host, words: list[str]) -> str:
    """``tmux WORDS`` for the host's shell, on its tmux server (its ``socket``, else the one agentlaunch uses there:
    ``$AGENTLAUNCH_TMUX_SOCKET``, else tmux's own), each word quoted."""
    server = f"-L {shlex.quote(host.socket)}" if host.socket else '${AGENTLAUNCH_TMUX_SOCKET:+-L "$AGENTLAUNCH_TMUX_SOCKET"}'
    return f"tmux {server} {shlex.join(words)}"


def attach_argv(host: Host, pane: str, session: str) -> list[str]:
    """``ssh -t HOST tmux … attach`` showing ``pane`` of ``session`` on the host's tmux server; detaching (prefix d)
    comes back."""
    words = ["select-window", "-t", pane, ";", "select-pane", "-t", pane, ";", "attach-session", "-t", f"={session}"]
    return ssh.ssh_argv(host, host_tmux(host, words), tty=True)


def remote_capture(host: Host, pane: str, shown: PaneShot | None = None) -> PaneShot:
    """:func:`~agentlaunch.deck.preview.capture_pane` of a pane on the host, over its shared connection (one round
    trip); OSError when tmux there cannot, HostUnreachable when the host is not reached."""
    words = ["capture-pane", "-e", "-p", "-t", pane, ";", "display-message", "-p", "-t", pane, GEOMETRY]
    done = ssh.run_shell(host, host_tmux(host, words), timeout=host.timeout)
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise OSError(f"tmux capture-pane on {host.name}: {said[0] if said else f'exit {done.returncode}'}")
    return shown if shown is not None and shown.raw == done.stdout else parse(done.stdout)


def on_host(args: list[str], host: str) -> list[str]:
    """``agentlaunch ARGS`` as the command run on ``host``: ``--host HOST`` added, this machine's ``--agents-dir`` left
    out (the host's own is used: ``agents_dir`` of config.yaml)."""
    kept: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--agents-dir":
            next(words, None)
        else:
            kept.append(word)
    return [*kept, "--host", host]


DIFF_TIMEOUT = 60.0  # seconds: the host's worktrees and git, over its connection
UNTRACKED_SHOWN = 20  # new files whose whole text the page shows (as this machine's diff page)


def remote_diff(host: Host, agent: str) -> tuple[str, str, dict[str, Any] | None]:
    """The title and text of ``d``'s page for ``agent``'s worktree on ``host``, and the worktree as the host's
    ``agentlaunch worktrees --json`` gives it (None when there is none): that command finds it, then one shell command
    there runs the git commands this machine's page runs (its commits against its base, what is not committed, the new
    files' text)."""
    listed = ssh.run(host, ["worktrees", "--json", "--agent", agent], timeout=DIFF_TIMEOUT)
    who = f"{agent}@{host.name}"
    last = [line for line in listed.stderr.splitlines() if line.strip()]
    try:
        trees = json.loads(listed.stdout) if listed.returncode == 0 else None
    except ValueError:
        trees = None
    if not isinstance(trees, list):
        return who, f"agentlaunch worktrees there exited {listed.returncode}" + (f": {last[-1]}" if last else ""), None
    if not trees or not isinstance(trees[0], dict):
        return who, f"{agent} has no worktree on {host.name}", None
    tree = trees[0]
    path, branch, against = str(tree.get("path")), str(tree.get("branch")), tree.get("compared_with")
    done = ssh.run_shell(host, diff_script(path, against if isinstance(against, str) else None), timeout=DIFF_TIMEOUT)
    title = f"{who} · {branch} against {against or '?'} · M merges, D removes (there) · q closes"
    return title, done.stdout[-CAPTURE_LIMIT:], tree


def diff_script(path: str, against: str | None) -> str:
    """The git commands of the diff page as one command line for the host's shell, each said before its output."""
    where = shlex.quote(path)
    base = [["log", "--oneline", f"{against}..HEAD"], ["diff", "--stat", f"{against}...HEAD"], ["diff", f"{against}...HEAD"]]
    parts = [
        f"printf '%s\\n' {shlex.quote('$ git ' + ' '.join(args))}; git -C {where} {shlex.join(args)} 2>&1; echo"
        for args in [*(base if against else []), ["status", "--short"], ["diff", "HEAD"]]
    ]
    new = f"git -C {where} ls-files --others --exclude-standard | head -n {UNTRACKED_SHOWN}"
    show = f'printf \'$ git diff --no-index -- /dev/null %s\\n\' "$f"; git -C {where} diff --no-index -- /dev/null "$f"; echo'
    parts.append(f"{new} | while IFS= read -r f; do {show}; done")
    return "; ".join(["export GIT_OPTIONAL_LOCKS=0", *parts])  # reads take no index lock (worktrees.merge.run_git)
