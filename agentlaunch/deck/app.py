"""The deck itself: a Textual app with the list of agents, the selected one's pane, a message line and the keys.

The first read of the agents may come from :mod:`agentlaunch.deck.start` (begun in a thread while Textual was
imported). It learns of changes from the status records' folder (inotify where there is one, set up just after
the first frame; else the folder's mtime once a second), reads tmux's panes every few seconds (a pane dying
writes no record) and the worktrees, today's cost and the definitions (provider, model, a load problem) in a
worker thread every 15 s. The preview is the selected pane only, captured again once a second, redrawn only
when it changed, and fitted by :mod:`agentlaunch.deck.preview` (the pane's bottom, an asking agent's question). The list is an
:class:`~agentlaunch.deck.agent_list.AgentList`: a tick renders again only the rows whose text changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.timer import Timer
from textual.widgets import Footer, Static

from agentlaunch.deck import actions
from agentlaunch.deck.agent_list import AgentList, Line
from agentlaunch.deck.follow import Seen, current, line_key, session_args, why_not
from agentlaunch.deck.preview import PaneShot, Preview, capture_pane
from agentlaunch.deck.rows import (
    COLUMNS,
    Definitions,
    Row,
    Sources,
    cells,
    definition,
    first_read,  # fmt: skip
    folder_mtime,
    is_red,
    question,
)
from agentlaunch.deck.screens import Ask, Confirm, Page
from agentlaunch.deck.slow import load_definitions, today_costs, worktree_states
from agentlaunch.definitions.names import agent_names
from agentlaunch.errors import AgentlaunchError
from agentlaunch.live.tmux import Tmux
from agentlaunch.visible import visible

if TYPE_CHECKING:  # the picker (n) and the folder's watch (ctypes) are imported when first used, after the first frame
    from agentlaunch.deck.picker import AdHoc, Choice, NewAgent
    from agentlaunch.dir_watch import DirWatch
    from agentlaunch.worktrees.git_worktree import WorktreeState

TICK = 1.0  # seconds: countdowns, the preview's capture, the folder's mtime without inotify
PANES_EVERY = 10.0  # seconds between two reads of tmux's panes when no record changed
SLOW_EVERY = 15.0  # seconds between two reads of the worktrees, today's cost and the definitions
SETTLE = 0.1  # seconds a burst of record writes is given before the list is read again
WORKTREES_AFTER_RECORD = 2.0  # seconds: a record's change reads the worktrees again, at most this often
QUIET_PANE_EVERY = 3  # ticks between two captures of a selected pane that showed nothing new the last times


def style_of(row: Row) -> str:
    if is_red(row.state) or row.state.startswith("dead") or row.problem is not None:
        return "bold red"
    if row.state == "waiting":
        return "yellow"
    return "" if row.live else "dim"


class Deck(App[None]):
    """`agentlaunch deck`."""

    TITLE = "agentlaunch deck"
    CSS = """
    #agents { height: 1fr; min-height: 3; }
    #message { height: 1; color: $warning; text-wrap: nowrap; text-overflow: ellipsis; }
    #preview { height: 2fr; border: round $panel; }
    """
    BINDINGS = [
        Binding("tab", "next_needing", "next needing you", priority=True),
        Binding("s", "send", "send"),
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
        self, sources: Sources, *, socket: str | None = None, watch: bool = True,
        first: Future[tuple[float, list[Row]]] | None = None,
    ) -> None:  # fmt: skip
        """``first``: the first read of the agents (:func:`~agentlaunch.deck.rows.first_read`), begun before the deck."""
        super().__init__()
        self.sources, self.socket, self.use_watch, self.first = sources, socket, watch, first
        self.rows: list[Row] = []
        self.shown: list[Row] = []
        self.filter_text = ""
        self.worktrees: dict[str, WorktreeState] = {}
        self.today: dict[str, float] = {}
        self.dir_watch: DirWatch | None = None
        self.folder_mtime = 0.0  # the status folder's mtime when the list was last read
        self.pending: Timer | None = None
        self.last_panes = 0.0
        self.preview_key: tuple[str | None, PaneShot | str, bool] = (None, "", False)
        self.gone_pane: str | None = None  # the last pane whose capture found it closed
        self.question_said: tuple[str, str] | None = None  # the row and question last said on the message line
        self.question_shown = False  # the message line holds that question (no other message came since)
        self.preview_title: str | None = None
        self.capture_every, self.since_capture = 1, 0  # ticks: 1, up to QUIET_PANE_EVERY while the pane stays the same
        self.refreshes = 0  # how many times the list was read (the bench and tests count them)
        self.seen = Seen()  # when the person last looked at each agent: Tab skips an idle one already seen
        self.place: actions.Place | None | bool = False  # where the deck runs in tmux (False: not asked yet)
        self.worktrees_due: Timer | None = None
        self.worktrees_read = 0.0  # the loop's time of the last read of the worktrees

    def compose(self) -> ComposeResult:
        yield AgentList(COLUMNS, id="agents")
        yield Static("", id="message", markup=False)
        preview = Preview(id="preview")
        preview.border_title = "preview"
        yield preview
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.set_interval(TICK, self.tick)
        self.set_interval(SLOW_EVERY, self.read_slow)
        self.call_after_refresh(self.start_watch)  # the watch (ctypes' import), git, the store and the definitions:
        self.call_after_refresh(self.read_slow)  # after the first frame, not before it

    # -- reading ------------------------------------------------------------------------------

    def start_watch(self) -> None:
        """inotify on the status folder (its parent until it exists), else the folder's mtime on each tick; the list
        read again when the folder changed since it was read (a record written before the watch was up)."""
        from agentlaunch.dir_watch import open_watch

        if not self.use_watch or (watch := open_watch()) is None:
            return
        self.dir_watch = watch
        self._watch_folders()
        with contextlib.suppress(RuntimeError):  # the deck closing
            asyncio.get_running_loop().add_reader(watch.fd, self._on_watch)
        if folder_mtime(self.sources.status_dir) != self.folder_mtime:
            self.reload()

    def _watch_folders(self) -> None:
        from agentlaunch.dir_watch import GONE, MASK

        if self.dir_watch is not None and not self.dir_watch.watch(self.sources.status_dir, MASK | GONE):
            self.dir_watch.watch(self.sources.state_dir)

    def _on_watch(self) -> None:
        if self.dir_watch is not None and self.dir_watch.drain():
            self._watch_folders()
            if self.pending is None:  # a burst of writes is read once
                self.pending = self.set_timer(SETTLE, self._settled)

    def _settled(self) -> None:
        self.pending = None
        self.reload(panes_again=False)  # a state change: tmux's panes are listed again only when a record came or went
        self.worktrees_soon()  # an agent's turn changes its worktree: its branch column is not left 15 s behind

    def worktrees_soon(self) -> None:
        """Read the worktrees again in a worker thread, at most once per :data:`WORKTREES_AFTER_RECORD` (a busy team
        rewrites its records many times a second); the last change of a burst is always read."""
        if self.worktrees_due is not None:
            return
        wait = max(self.worktrees_read + WORKTREES_AFTER_RECORD - self._now(), SETTLE)  # Textual: no timer of 0 s
        self.worktrees_due = self.set_timer(wait, self._worktrees_now)

    def _worktrees_now(self) -> None:
        self.worktrees_due = None
        self.worktrees_read = self._now()  # a burst meanwhile waits for the next round
        self.read_worktrees()

    @work(thread=True, exclusive=True, group="worktrees")
    def read_worktrees(self) -> None:
        worktrees = worktree_states(self.sources.state_dir)
        self.from_thread(self._got_slow, worktrees, self.today, self.sources.definitions)

    def on_unmount(self) -> None:
        for timer in (self.pending, self.worktrees_due):
            if timer is not None:
                timer.stop()
        if self.dir_watch is not None:
            with contextlib.suppress(RuntimeError, ValueError):
                asyncio.get_running_loop().remove_reader(self.dir_watch.fd)
            self.dir_watch.close()

    def reload(self, panes_again: bool = True) -> None:
        """Read every source again (tmux's panes too, or only when a record came or went) and redraw the list."""
        self.refreshes += 1
        if panes_again:
            self.last_panes = self._now()
        first, self.first = self.first, None
        try:
            if first is not None:
                self.folder_mtime, self.rows = first.result()
            else:
                self.folder_mtime, self.rows = first_read(self.sources, self.worktrees, self.today, panes_again=panes_again)
        except Exception as exc:  # noqa: BLE001 - a bug in one read must not take the deck down: it says it instead
            self.say(f"could not read the agents: {type(exc).__name__}: {exc}")
            return
        self.draw()
        if self.sources.tmux_problem:
            self.say(self.sources.tmux_problem)

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    def tick(self) -> None:
        """Once a second: a folder that changed without inotify, tmux every few seconds, then countdowns and the preview."""
        if self.dir_watch is None and folder_mtime(self.sources.status_dir) != self.folder_mtime:
            self.reload()
            return
        if self._now() - self.last_panes >= PANES_EVERY:
            self.reload()
            return
        self.since_capture += 1
        self.draw(preview=self.since_capture >= self.capture_every)

    @work(thread=True, exclusive=True, group="slow")
    def read_slow(self) -> None:
        import agentlaunch.deck.picker  # noqa: F401 - imported here, off the loop: n's first press does not wait for it

        src = self.sources
        definitions = load_definitions(src.agents_dir, src.state_dir, dict(src.definitions))
        worktrees, today = worktree_states(src.state_dir), today_costs(src.store_path)
        self.from_thread(self._got_slow, worktrees, today, definitions)

    def from_thread(self, callback: Callable[..., None], *args: object) -> None:
        """Run ``callback`` on the deck's loop; nothing when the deck has closed meanwhile (a worker's late answer)."""
        with contextlib.suppress(RuntimeError, NoMatches):
            self.call_from_thread(callback, *args)

    def _got_slow(self, worktrees: dict[str, WorktreeState], today: dict[str, float], definitions: Definitions) -> None:
        self.worktrees_read = self._now()
        if (worktrees, today, definitions) != (self.worktrees, self.today, self.sources.definitions):
            self.say_definitions(self.sources.definitions, definitions)
            self.worktrees, self.today, self.sources.definitions = worktrees, today, definitions
            self.reload()

    def say_definitions(self, before: Definitions, after: Definitions) -> None:
        """A definition that broke (or loads again) while the deck is open, said on the message line; its row keeps
        its columns (a few words there, the whole problem here)."""
        if not before:
            return  # the first load: a broken one is said when its row is selected
        for name, (_, _, _, problem) in after.items():
            was = before.get(name, (0.0, "", "", None))[3]
            if problem is not None and problem != was:
                self.say(f"{name}: {problem}")
            elif problem is None and was is not None:
                self.say(f"{name}: its definition loads again")

    # -- drawing ------------------------------------------------------------------------------

    def draw(self, preview: bool = True) -> None:
        """The list as it stands now (only the rows whose text changed are rendered again), then the preview."""
        try:
            table = self.query_one(AgentList)
        except NoMatches:  # a timer or a watch that fired while the deck closes
            return
        needle = self.filter_text.lower()
        now = datetime.now(UTC)
        taken: set[str] = set()
        shown = [(r, Line(line_key(r, taken), tuple(visible(t) for t in cells(r, now)), style_of(r), r.agent))
                 for r in self.rows]  # fmt: skip
        if needle:
            shown = [(r, line) for r, line in shown if needle in " ".join(line.cells).lower()]
        self.shown = [r for r, _ in shown]
        table.set_lines([line for _, line in shown])
        title = f"{len(self.shown)} agents" + (f" matching {self.filter_text!r}" if needle else "")
        if table.border_title != title:
            table.border_title = title
        self.seen.look(self.selected(), now)  # its preview is in view: what it did is seen
        self._say_question(again=False)
        if preview:
            self.show_preview()

    def selected(self) -> Row | None:
        try:
            table = self.query_one(AgentList)
        except NoMatches:
            return None
        if not self.shown or table.cursor_row < 0 or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    def on_agent_list_highlighted(self, _event: AgentList.Highlighted) -> None:
        self.show_preview()
        row = self.selected()
        self.seen.look(row)
        if row is not None and row.problem:
            self.say(f"{row.agent}: {row.problem}")
        else:
            self._say_question(again=True)

    def _say_question(self, *, again: bool) -> None:
        """The selected agent's question (what its CLI asks, from its record) on the message line: when it is selected
        (``again``), and when its question changes while it is. A question no longer true (another row selected, the
        agent answered) is taken off; a message about anything else stays."""
        row = self.selected()
        asked = question(row) if row is not None else None
        key = (row.key, asked) if row is not None and asked else None
        if key is None:
            if self.question_shown:
                self.say("")
        elif row is not None and (again or key != self.question_said):
            self.say(f"⚠ {row.agent} is asking: {asked}")
            self.question_shown = True
        self.question_said = key

    def show_preview(self) -> None:
        """The selected agent's title at once; its pane's screen from a worker thread, redrawn only when it changed."""
        row = self.selected()
        self.since_capture = 0
        if row is None:
            self.preview_title = "preview"
            self._set_preview("preview", "no agent yet: n starts one")
        elif row.pane is None or self.sources.tmux is None:
            self.preview_title = row.agent
            self._set_preview(row.agent, self._no_pane(row))
        else:
            title = self.preview_title = f"{row.agent} · tmux {row.tmux_session} {row.pane}"
            self._set_preview(title, None)
            shown = self.preview_key[1] if self.preview_key[0] == title else None
            self.capture(self.sources.tmux, row.pane, title, shown if isinstance(shown, PaneShot) else None)

    @work(thread=True, exclusive=True, group="preview")
    def capture(self, tmux: Tmux, pane: str, title: str, shown: PaneShot | None = None) -> None:
        """``pane``'s screen, parsed unless it is the one ``shown`` already (a quiet pane costs one tmux call)."""
        body: PaneShot | str
        try:
            body = capture_pane(tmux, pane, shown)
        except OSError as exc:
            body = f"{exc}"
            if "can't find pane" in body:
                self.from_thread(self._set_preview, title, f"the pane {pane} has closed: the list is read again")
                self.from_thread(self._pane_gone, pane)
                return
        self.from_thread(self._set_preview, title, body)

    def _pane_gone(self, pane: str) -> None:
        """A pane closed under the preview: the list is read again at once (once per pane), not at the next listing."""
        if pane != self.gone_pane:
            self.gone_pane = pane
            self.reload()

    def _set_preview(self, title: str, body: PaneShot | str | None) -> None:
        """Show ``title`` and ``body`` (None: the title now, its body on its way); a capture for a row no longer selected
        (its title not :attr:`preview_title`) is dropped. A pane is fitted by :mod:`agentlaunch.deck.preview`'s rule."""
        try:
            preview = self.query_one("#preview", Preview)
        except NoMatches:  # a capture that came back after the deck closed
            return
        if title != self.preview_title:
            return
        if preview.border_title != visible(title):
            preview.border_title = visible(title)
        if body is None:
            return
        row = self.selected()
        asking = row is not None and row.state.partition(":")[0] == "asking"
        # a pane that shows nothing new is captured less often; a record's change or a key captures it at once
        key = (title, body, asking)
        same = key == self.preview_key
        self.capture_every = min(self.capture_every + 1, QUIET_PANE_EVERY) if same else 1
        if not same:
            self.preview_key = key
            if isinstance(body, PaneShot):
                preview.show_shot(body, asking=asking)
            else:
                preview.show_text(body)

    @staticmethod
    def _no_pane(row: Row) -> str:
        if row.problem:
            return row.problem
        if row.live:
            return f"{row.agent} runs outside tmux (pid {row.record.get('pid')}, in {row.working_dir}): no pane to show"
        return f"{row.agent} is not running: n starts it"

    def say(self, text: str) -> None:
        """One line, made inert (:func:`~agentlaunch.visible.visible`, no markup), cut with an ellipsis to fit (the CSS)."""
        self.question_shown = False
        with contextlib.suppress(NoMatches):
            self.query_one("#message", Static).update(visible(text))

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
            self.push_screen(Ask(f"send to {row.label}:"),
                             lambda text: self.on_agent(row, lambda now: self._send(now, text)) if text else None)  # fmt: skip

    def _send(self, row: Row, text: str | None) -> None:
        if text:
            args = ["send", row.agent, text] + (["--session", row.session_id] if row.session_id and row.live else [])
            self.run_command(args, f"sent to {row.label}")

    def action_stop(self) -> None:
        row = self._need_row()
        if row is not None:
            self.confirm(f"stop {row.label}?", row, self._stop)

    def _stop(self, row: Row) -> None:
        self.run_command(["stop", row.agent, *session_args(self.rows, row)], f"stopping {row.label}")

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
        self.run_command(args, f"resuming {row.label}")

    def action_restart(self) -> None:
        row = self._need_row()
        if row is not None:
            self.confirm(f"restart {row.label}?", row, self._restart)

    def _restart(self, row: Row) -> None:
        fork = ["--session", row.session_id] if row.fork and row.session_id else []  # the fork, in its own window
        self.run_command(["restart", row.agent, *fork, *self._agents_args(row.agent)], f"restarting {row.label}")

    def action_fork(self) -> None:
        row = self._need_row()
        if row is not None:
            fork = ["--session", row.session_id] if row.fork and row.session_id else []  # a fork of this fork
            self.run_command(["fork", row.agent, *fork, *self._agents_args(row.agent)], f"forking {row.label}")

    def action_new(self) -> None:
        """n: a definition from the agents directory (filtered as one types) or one without a definition, then its
        first prompt, worktree, session (the deck's own by default)."""
        from agentlaunch.deck.picker import PickDefinition

        choices = self.choices()
        if not choices:
            where = self.sources.agents_dir
            self.say((f"no agent is defined in {where}" if where else "no agents directory")
                     + ": + starts one without a definition; agentlaunch init makes definitions")  # fmt: skip
        self.push_screen(PickDefinition(choices), self._picked)

    def choices(self) -> list[Choice]:
        """The agents directory's definitions, then the agents started without one (kept in the state folder)."""
        from agentlaunch.deck.picker import Choice
        from agentlaunch.definitions.adhoc import adhoc_dir

        found = []
        for name in self._names(self.sources.agents_dir):
            provider, model, problem = definition(self.sources, name)
            found.append(Choice(name, f"⚠ {problem}" if problem else "/".join(x for x in (provider, model) if x)))
        defined = {c.name for c in found}
        found += [Choice(n, "without a definition") for n in self._names(adhoc_dir(self.sources.state_dir)) if n not in defined]
        return found

    @staticmethod
    def _names(folder: Path | None) -> list[str]:
        if folder is None or not folder.is_dir():
            return []
        try:
            return agent_names(folder)
        except AgentlaunchError:
            return []

    def _picked(self, name: str | None) -> None:
        from agentlaunch.deck.picker import ADHOC, AdHocForm, StartForm
        from agentlaunch.providers.descriptors import PROVIDERS

        if name is None:
            return
        if name.startswith(ADHOC):
            defined = self._names(self.sources.agents_dir)
            providers = PROVIDERS  # in the order people are shown them: the three CLIs, then the offline fake
            self.push_screen(AdHocForm(name[len(ADHOC) :], providers, Path.cwd(), defined, self.sources.agents_dir),
                             self._adhoc)  # fmt: skip
            return
        sessions = sorted({r.tmux_session for r in self.rows if r.tmux_session})
        self.push_screen(StartForm(name, sessions, self.default_session(name)), self._new)

    def default_session(self, name: str) -> str:
        """The session `n` offers: the one the agent's own pane is in; else the deck's own when it is a team's (agents
        run there, or nowhere yet); else the only one agents run in (the deck in a session of its own beside one
        team); else the deck's; empty (`tmux up`'s agentlaunch) when the deck is not on the agents' tmux server."""
        own = next((r.tmux_session for r in self.rows if r.agent == name and r.tmux_session and not r.fork), None)
        if own:
            return own
        sessions = {r.tmux_session for r in self.rows if r.tmux_session}
        place = self.deck_place()
        if place is not None and (place.session in sessions or not sessions):
            return place.session
        if len(sessions) == 1:
            return sessions.pop()
        return place.session if place is not None else ""

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
        from agentlaunch.usage.reports import daily_chart, report_table
        from agentlaunch.usage.store import Store

        path = self.sources.store_path
        if not path.is_file():
            self.push_screen(Page("usage", Text("no usage recorded yet")))
            return
        since = datetime.now(UTC) - timedelta(days=7)
        with Store.open(path, timeout=1.0) as store:
            agents, days = store.usage_report("agent", since=since), store.usage_report("day", since=since)
        body = Group(report_table(agents, "agent", title="per agent, 7 days"), daily_chart(days, metric="cost", since=since))
        self.push_screen(Page("usage · q closes", body))

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

    def _agents_args(self, agent: str | None = None) -> list[str]:
        """``--agents-dir`` for a command on ``agent``: the deck's, or the state folder's for an agent started without
        a definition (:mod:`agentlaunch.definitions.adhoc`)."""
        from agentlaunch.definitions.adhoc import adhoc_dir, is_adhoc

        folder = self.sources.agents_dir
        defined = folder is not None and (folder / str(agent) / "agent.yaml").is_file()
        if agent is not None and not defined and is_adhoc(self.sources.state_dir, agent):
            folder = adhoc_dir(self.sources.state_dir)
        return ["--agents-dir", str(folder)] if folder is not None else []

    def run_command(self, args: list[str], doing: str) -> None:
        """``agentlaunch ARGS`` in a worker thread; its last words on the message line."""
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

