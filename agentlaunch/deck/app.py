"""The deck itself: `agentlaunch deck`'s keys and what they run, on the board kept current
(:mod:`agentlaunch.deck.board`, :mod:`agentlaunch.deck.watching`).

A key acts on the selected agent's row as the list stands when it runs (a dialog's answer may come long after the row
was chosen: :mod:`agentlaunch.deck.follow`); agentlaunch's own commands run as subprocesses in worker threads
(:mod:`agentlaunch.deck.actions`), their last words on the message line.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.binding import Binding

from agentlaunch.deck import actions
from agentlaunch.deck.agent_list import AgentList
from agentlaunch.deck.answering import answer_row
from agentlaunch.deck.follow import current, session_args, why_not
from agentlaunch.deck.host_rows import attach_argv, on_host
from agentlaunch.deck.rows import Row, Sources, question
from agentlaunch.deck.screens import Ask, Confirm, Page
from agentlaunch.deck.watching import WatchedBoard
from agentlaunch.errors import AgentlaunchError
from agentlaunch.visible import visible

if TYPE_CHECKING:  # the picker (n) is imported when first used, after the first frame
    from agentlaunch.deck.picker import AdHoc, NewAgent
    from agentlaunch.worktrees.git_worktree import WorktreeState


class Deck(WatchedBoard):
    """`agentlaunch deck`."""

    TITLE = "agentlaunch deck"
    BINDINGS = [
        Binding("tab", "next_needing", "next needing you", priority=True),
        Binding("s", "send", "send"),
        Binding("a", "allow", "allow"),
        Binding("D", "deny", "deny"),
        Binding("R", "reply", "reply"),
        Binding("x", "stop", "stop"),
        Binding("b", "resume_budget", "resume budget"),
        Binding("r", "restart", "restart"),
        Binding("n", "new", "new"),
        Binding("f", "fork", "fork"),
        Binding("d", "diff", "diff"),
        Binding("u", "usage", "usage"),
        Binding("slash", "filter", "filter"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        sources: Sources,
        *,
        socket: str | None = None,
        watch: bool = True,
        first: Future[tuple[float, list[Row]]] | None = None,
    ) -> None:
        """``socket``: the agents' tmux server's socket name, for the commands a key runs."""
        super().__init__(sources, watch=watch, first=first)
        self.socket = socket
        self.place: actions.Place | None | bool = False  # where the deck runs in tmux (False: not asked yet)

    # -- keys ---------------------------------------------------------------------------------

    def _need_row(self) -> Row | None:
        row = self.selected()
        if row is None:
            self.say("no agent selected")
        return row

    def on_agent_list_selected(self, _event: AgentList.Selected) -> None:
        self.action_attach()

    def action_attach(self) -> None:
        row = self._need_row()
        if row is None:
            return
        tmux = self.sources.tmux
        if row.host is not None:
            self._attach_remote(row)
            return
        if row.pane is None or tmux is None or row.tmux_session is None:
            self.say(f"{row.agent} has no tmux pane to attach to")
            return
        if actions.same_server(tmux):
            back = actions.way_back(self.deck_place(), actions.place_of(tmux, row.pane))
            done = actions.switch_to(tmux, row.pane)
            self.seen.look(row)
            self.say(f"back from {row.label}: {back}" if done.ok else f"attach failed: {done.said}")
        elif os.environ.get("TMUX"):
            self.say("the deck runs in another tmux server: start it there, or outside tmux, to attach")
        else:
            self._attach_outside(actions.attach_argv(tmux, row.pane, row.tmux_session))

    def _attach_remote(self, row: Row) -> None:
        """Enter on another host's agent: ``ssh -t HOST tmux … attach`` in this terminal, the deck suspended meanwhile."""
        host = self.host_rows.hosts.get(row.host or "")
        if row.host_down or host is None or row.pane is None or row.tmux_session is None:
            self.say(f"{row.who}: {row.host_down or 'no tmux pane there to attach to'}")
            return
        self.seen.look(row)
        self._attach_outside(attach_argv(host, row.pane, row.tmux_session))

    def _attach_outside(self, argv: list[str]) -> None:
        try:
            with self.suspend():
                subprocess.call(argv)
        except Exception as exc:  # noqa: BLE001 - textual's SuspendNotSupported (headless, a test's harness) and the like
            self.say(f"cannot attach from here ({type(exc).__name__}): {' '.join(argv)}")
        self.reload()

    def deck_place(self) -> actions.Place | None:
        """Where the deck runs on the agents' tmux server (its session and window), asked once; None outside it."""
        if self.place is False:
            self.place = actions.deck_place(self.sources.tmux) if self.sources.tmux is not None else None
        return self.place if isinstance(self.place, actions.Place) else None

    def action_next_needing(self) -> None:
        """Tab: the next agent that blocks on the person, then one that ended a turn not looked at since (wrapping)."""
        found = self.seen.next_for_tab(self.shown, self.selected())
        if found is None:
            self.say("no agent needs you")
            return
        self.query_one(AgentList).move_cursor(row=next(i for i, r in enumerate(self.shown) if r is found))

    def confirm(self, question: str, chosen: Row, act: Callable[[Row], None]) -> None:
        """Ask ``question`` (it names the agent); on y, ``act`` on that agent and session as the list stands then."""
        self.push_screen(Confirm(question), lambda yes: self.on_agent(chosen, act) if yes else None)

    def on_agent(self, chosen: Row, act: Callable[[Row], None]) -> None:
        """``act`` on the row of ``chosen``'s agent and session, the list read again first (a dialog's answer may
        come long after the row was chosen); when it is gone, nothing is done and the message line says why."""
        self.reload()
        now = current(self.rows, chosen)
        if now is None:
            self.say(why_not(self.rows, chosen))
            return
        act(now)

    def action_send(self) -> None:
        row = self._need_row()
        if row is not None:
            self.push_screen(
                Ask(f"send to {row.label}:"), lambda text: self.on_agent(row, lambda now: self._send(now, text)) if text else None
            )

    def _send(self, row: Row, text: str | None) -> None:
        if text:
            args = ["send", row.agent, text] + (["--session", row.session_id] if row.session_id and row.live else [])
            self.run_command(args, f"sent to {row.label}", row.host)

    def _asking(self) -> tuple[Row, str] | None:
        row = self._need_row()
        asked = question(row) if row is not None else None
        if row is not None and asked is None:
            self.say(f"{row.agent} asks nothing now ({row.state})")
        return (row, asked) if row is not None and asked is not None else None

    def action_allow(self) -> None:
        if (asking := self._asking()) is not None:
            self._answer(asking[0], asking[1], "once")

    def action_deny(self) -> None:
        if (asking := self._asking()) is not None:
            row, asked = asking
            self.confirm(f"deny {row.label}'s {visible(asked)}?", row, lambda now: self._answer(now, asked, "deny"))

    def action_reply(self) -> None:
        if (asking := self._asking()) is not None:
            row, asked = asking
            reply = lambda text: self.on_agent(row, lambda now: self._answer(now, asked, "reply", text)) if text else None  # noqa: E731
            self.push_screen(Ask(f"reply to {row.label} ({visible(asked)}):"), reply)

    def _answer(self, row: Row, asked: str, decision: str, text: str | None = None) -> None:
        session = row.session_id if row.session_id and row.live else None

        def job() -> actions.Outcome:
            done = answer_row(row.host, row.agent, session, asked, decision, text)
            self.answered = (row.key, asked) if done.ok else self.answered  # its outcome stays said (board)
            return done

        self._in_thread(job, f"answering {row.label if row.host is None else row.who}")

    def action_stop(self) -> None:
        row = self._need_row()
        if row is not None:
            self.confirm(f"stop {row.label}?", row, self._stop)

    def _stop(self, row: Row) -> None:
        self.run_command(["stop", row.agent, *session_args(self.rows, row)], f"stopping {row.label}", row.host)

    def action_resume_budget(self) -> None:
        row = self._need_row()
        if row is None:
            return
        if not row.state.startswith("paused"):
            self.say(f"{row.agent} is not paused by a budget ({row.state})")
            return
        self.confirm(f"resume {row.label}? with its limit still spent it gets one more turn", row, self._resume_budget)

    def _resume_budget(self, row: Row) -> None:
        args = ["resume-budget", row.agent] + (["--session", row.session_id] if row.session_id and row.live else [])
        self.run_command(args, f"resuming {row.label}", row.host)

    def action_restart(self) -> None:
        row = self._need_row()
        if row is not None:
            self.confirm(f"restart {row.label}?", row, self._restart)

    def _restart(self, row: Row) -> None:
        fork = ["--session", row.session_id] if row.fork and row.session_id else []  # the fork, in its own window
        self.run_command(["restart", row.agent, *fork, *self._agents_args(row.agent)], f"restarting {row.label}", row.host)

    def action_fork(self) -> None:
        row = self._need_row()
        if row is not None:
            fork = ["--session", row.session_id] if row.fork and row.session_id else []  # a fork of this fork
            self.run_command(["fork", row.agent, *fork, *self._agents_args(row.agent)], f"forking {row.label}", row.host)

    def action_new(self) -> None:
        """n: a definition from the agents directory (filtered as one types) or one without a definition, then its
        first prompt, worktree, session (the deck's own by default)."""
        from agentlaunch.deck.picker import PickDefinition, choices_of

        choices = choices_of(self.sources)
        if not choices:
            where = self.sources.agents_dir
            self.say(
                (f"no agent is defined in {where}" if where else "no agents directory")
                + ": + starts one without a definition; agentlaunch init makes definitions"
            )
        self.push_screen(PickDefinition(choices), self._picked)

    def _picked(self, name: str | None) -> None:
        from agentlaunch.deck.picker import ADHOC, AdHocForm, StartForm, default_session, defined_names
        from agentlaunch.providers.descriptors import PROVIDERS

        if name is None:
            return
        if name.startswith(ADHOC):
            defined = defined_names(self.sources.agents_dir)
            providers = PROVIDERS  # in the order people are shown them: the three CLIs, then the offline fake
            self.push_screen(AdHocForm(name[len(ADHOC) :], providers, Path.cwd(), defined, self.sources.agents_dir), self._adhoc)
            return
        sessions = sorted({r.tmux_session for r in self.rows if r.tmux_session})
        self.push_screen(StartForm(name, sessions, default_session(self.rows, name, self.deck_place())), self._new)

    def _adhoc(self, adhoc: AdHoc | None) -> None:
        """Write the agent's definition (the state folder's, or the agents directory's when saving was asked), then
        ask for its first prompt, worktree and session as for any agent."""
        from agentlaunch.definitions.adhoc import adhoc_dir, write_definition

        if adhoc is None:
            return
        save = adhoc.save and self.sources.agents_dir is not None
        folder = self.sources.agents_dir if save and self.sources.agents_dir else adhoc_dir(self.sources.state_dir)
        try:
            path = write_definition(folder, adhoc.name, adhoc.provider, adhoc.model, adhoc.folder, private=not save)
        except (AgentlaunchError, OSError) as exc:
            self.say(f"{adhoc.name}: {getattr(exc, 'message', None) or exc}")
            return
        self.say(f"{adhoc.name}: definition written to {path}")
        self._picked(adhoc.name)

    def _new(self, new: NewAgent | None) -> None:
        if new is None:
            return
        args = [*new.up_args(), *self._agents_args(new.name)]

        def start() -> actions.Outcome:
            done = actions.agentlaunch(args, self.socket)
            if done.ok and new.prompt:
                return actions.agentlaunch(["send", new.name, new.prompt], self.socket)
            return done

        self._in_thread(start, f"starting {new.name}")

    def action_diff(self) -> None:
        row = self._need_row()
        if row is None:
            return
        if row.host is not None:  # another host's: read there, in a worker thread
            self.remote_diff(row, self._after_remote_diff)
            return
        tree = row.worktree
        if tree is None:
            self.say(f"{row.agent} has no worktree")
            return
        if tree.problem is not None:
            text = f"git cannot read this worktree: {tree.problem}"
        else:
            text = actions.worktree_diff(tree.worktree.path, tree.compared_with) if tree.present else "the worktree is missing"
        title = f"{row.label} · {tree.worktree.branch} against {tree.compared_with or '?'} · M merges, D removes · q closes"
        keys = {"D": "remove", "M": "merge"}
        self.push_screen(Page(title, Text(visible(text, keep_newlines=True)), keys), lambda what: self._after_diff(row, what))

    def _after_diff(self, row: Row, what: str | None) -> None:
        tree = row.worktree
        if tree is None or what is None:
            return
        if what == "remove":
            self.confirm(f"remove {row.label}'s worktree {tree.worktree.path}?", row, lambda now: self._remove(now, tree))
        elif row.live:
            self.say(f"{row.agent} is running in its worktree: stop it (x) before merging")
        else:
            question = f"merge {row.label}'s worktree ({tree.worktree.branch}) into {tree.compared_with} and remove it?"
            self.confirm(question, row, lambda now: self._merge(now, tree))

    def _after_remote_diff(self, row: Row, tree: dict[str, Any], what: str | None) -> None:
        """M or D on a remote row's diff page: ``agentlaunch worktrees merge|remove AGENT --repo REPO --host HOST``
        (the host's agentlaunch refuses where work would be lost, or while an agent runs there)."""
        if what not in ("merge", "remove"):
            return
        if what == "merge" and row.live:
            self.say(f"{row.agent} is running in its worktree: stop it (x) before merging")
            return
        where = f"{row.label}'s worktree on {row.host}"
        merging = f"merge {where} ({tree.get('branch')}) into {tree.get('compared_with')} and remove it?"
        question = merging if what == "merge" else f"remove {where} ({tree.get('path')})?"
        args, doing = ["worktrees", what, row.agent, "--repo", str(tree.get("repo"))], f"{what[:-1]}ing {where}"
        self.confirm(question, row, lambda now: self.run_command(args, doing, now.host))

    def _remove(self, row: Row, tree: WorktreeState) -> None:
        self.run_command(self._remove_args(row, tree), f"removing {row.label}'s worktree")

    @staticmethod
    def _remove_args(row: Row, tree: WorktreeState) -> list[str]:
        return ["worktrees", "remove", row.agent, "--repo", tree.worktree.repo]

    def _merge(self, row: Row, tree: WorktreeState) -> None:
        """Merge, then remove the worktree through `agentlaunch worktrees remove` (which refuses if anything would be
        lost); refused when the agent runs again (started meanwhile, after the question)."""
        if row.live:
            self.say(f"{row.label} is running in its worktree again: stop it (x) before merging (nothing merged)")
            return
        remove = self._remove_args(row, tree)

        def job() -> actions.Outcome:
            w = tree.worktree
            merged = actions.merge_worktree(w.repo, w.path, w.branch, tree.compared_with)
            if not merged.ok:
                return merged
            removed = actions.agentlaunch(remove, self.socket)
            return actions.Outcome(removed.code, f"{merged.said}; " + (removed.said if not removed.ok else "worktree removed"))

        self._in_thread(job, f"merging {row.label}'s worktree")

    def action_usage(self) -> None:
        from agentlaunch.deck.screens import usage_page

        self.push_screen(usage_page(self.sources.store_path))

    def action_filter(self) -> None:
        self.push_screen(Ask("filter (empty: all):", self.filter_text), self._filter)

    def _filter(self, text: str | None) -> None:
        if text is not None:
            self.filter_text = text.strip()
            self.draw()

    def action_help(self) -> None:
        from agentlaunch.deck.screens import keys_help

        place = self.deck_place()
        team = place is not None and any(r.tmux_session == place.session for r in self.rows)
        back = actions.ways_back(place, inside=bool(os.environ.get("TMUX")), team=team)
        self.push_screen(Page("keys · q closes", Text(keys_help(back))))

    # -- commands -----------------------------------------------------------------------------

    def run_command(self, args: list[str], doing: str, host: str | None = None) -> None:
        """``agentlaunch ARGS`` in a worker thread (``--host HOST`` for another host's agent: there, with its own agents
        directory); its last words on the message line."""
        args = on_host(args, host) if host is not None else args
        self._in_thread(lambda: actions.agentlaunch(args, self.socket), doing or f"agentlaunch {args[0]} {args[1]}…")

    def _in_thread(self, job: Callable[[], actions.Outcome], doing: str) -> None:
        self.say(f"{doing}…")

        def run() -> None:
            done = job()
            self.from_thread(self._done, done)

        self.run_worker(run, thread=True, group="commands")

    def _done(self, done: actions.Outcome) -> None:
        self.say(done.said if done.ok else f"failed (exit {done.code}): {done.said}")
        self.reload()
        self.read_slow()  # a merge, a removed or new worktree, a new definition: on the rows now, not in up to 15 s
