"""The deck's board: the list of agents, the selected one's pane and the message line, drawn from the rows as read.

The first read of the agents may come from :mod:`agentlaunch.deck.start` (begun in a thread while Textual was
imported). The preview is the selected pane only, captured in a worker thread, redrawn only when it changed, and
fitted by :mod:`agentlaunch.deck.preview` (the pane's bottom, an asking agent's question). The list is an
:class:`~agentlaunch.deck.agent_list.AgentList`: a draw renders again only the rows whose text changed. When the rows
are read again is :mod:`agentlaunch.deck.watching`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.widgets import Footer, Static

from agentlaunch.deck.agent_list import AgentList, Line
from agentlaunch.deck.follow import Seen, line_key
from agentlaunch.deck.host_rows import HostRows, remote_capture
from agentlaunch.deck.preview import PaneShot, Preview, capture_pane
from agentlaunch.deck.rows import COLUMNS, Row, Sources, cells, first_read, is_red, question
from agentlaunch.errors import AgentlaunchError
from agentlaunch.live.tmux import Tmux
from agentlaunch.visible import visible

if TYPE_CHECKING:
    from agentlaunch.hosts.config import Host
    from agentlaunch.worktrees.git_worktree import WorktreeState

QUIET_PANE_EVERY = 3  # ticks between two captures of a selected pane that showed nothing new the last times


def style_of(row: Row) -> str:
    if row.host_down is not None:
        return "dim"  # its host cannot be watched now: its last known state, greyed
    if is_red(row.state) or row.state.startswith("dead") or row.problem is not None:
        return "bold red"
    if row.state == "waiting":
        return "yellow"
    return "" if row.live else "dim"


def texts(row: Row, now: datetime, hosts: bool) -> tuple[str, ...]:
    """The row's cells made inert, with its host (``local`` for this machine's) second when hosts are configured."""
    shown = tuple(visible(t) for t in cells(row, now))
    return (shown[0], visible(row.host or "local"), *shown[1:]) if hosts else shown


class Board(App[None]):
    """The list, the preview and the message line of `agentlaunch deck`, and the rows they show."""

    CSS = """
    #agents { height: 1fr; min-height: 3; }
    #message { height: 1; color: $warning; text-wrap: nowrap; text-overflow: ellipsis; }
    #preview { height: 2fr; border: round $panel; }
    """

    def __init__(self, sources: Sources, *, first: Future[tuple[float, list[Row]]] | None = None) -> None:
        """``first``: the first read of the agents (:func:`~agentlaunch.deck.rows.first_read`), begun before the deck."""
        super().__init__()
        self.sources, self.first = sources, first
        self.rows: list[Row] = []
        self.shown: list[Row] = []
        self.filter_text = ""
        self.worktrees: dict[str, WorktreeState] = {}
        self.today: dict[str, float] = {}
        self.folder_mtime = 0.0  # the status folder's mtime when the list was last read
        self.last_panes = 0.0
        self.preview_key: tuple[str | None, PaneShot | str, bool] = (None, "", False)
        self.gone_pane: str | None = None  # the last pane whose capture found it closed
        self.question_said: tuple[str, str] | None = None  # the row and question last said on the message line
        self.question_shown = False  # the message line holds that question (no other message came since)
        self.answered: tuple[str, str] | None = None  # the row and question answered here, until its record drops it
        self.preview_title: str | None = None
        self.capture_every, self.since_capture = 1, 0  # ticks: 1, up to QUIET_PANE_EVERY while the pane stays the same
        self.refreshes = 0  # how many times the list was read (the bench and tests count them)
        self.seen = Seen()  # when the person last looked at each agent: Tab skips an idle one already seen
        self.local_rows: list[Row] = []  # this machine's, as last read; :attr:`rows` adds the hosts' (:meth:`merged`)
        self.host_rows = HostRows(())  # the hosts' agents, from their watches (:mod:`agentlaunch.deck.watching`)
        self.remote_shown: tuple[object, ...] | None = None  # the remote row whose pane the preview shows, as captured

    def compose(self) -> ComposeResult:
        yield AgentList(COLUMNS, id="agents")
        yield Static("", id="message", markup=False)
        preview = Preview(id="preview")
        preview.border_title = "preview"
        yield preview
        yield Footer()

    def reload(self, panes_again: bool = True) -> None:
        """Read every source again (tmux's panes too, or only when a record came or went) and redraw the list."""
        self.refreshes += 1
        if panes_again:
            self.last_panes = self._now()
        first, self.first = self.first, None
        try:
            if first is not None:
                self.folder_mtime, self.local_rows = first.result()
            else:
                self.folder_mtime, self.local_rows = first_read(self.sources, self.worktrees, self.today, panes_again=panes_again)
            self.rows = self.merged()
        except Exception as exc:  # noqa: BLE001 - a bug in one read must not take the deck down: it says it instead
            self.say(f"could not read the agents: {type(exc).__name__}: {exc}")
            return
        self.draw()
        if self.sources.tmux_problem:
            self.say(self.sources.tmux_problem)

    def merged(self) -> list[Row]:
        """This machine's rows and the hosts' (most urgent first, then this machine's, then each host's in order)."""
        if not self.sources.hosts:
            return self.local_rows
        order = {name: i for i, name in enumerate(self.host_rows.hosts, 1)}
        both = self.local_rows + self.host_rows.rows()
        return sorted(both, key=lambda r: (r.urgency, order.get(r.host or "", 0)))  # stable: each one's own order kept

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    def from_thread(self, callback: Callable[..., None], *args: object) -> None:
        """Run ``callback`` on the deck's loop; nothing when the deck has closed meanwhile (a worker's late answer)."""
        with contextlib.suppress(RuntimeError, NoMatches):
            self.call_from_thread(callback, *args)

    def draw(self, preview: bool = True) -> None:
        """The list as it stands now (only the rows whose text changed are rendered again), then the preview."""
        try:
            table = self.query_one(AgentList)
        except NoMatches:  # a timer or a watch that fired while the deck closes
            return
        needle = self.filter_text.lower()
        now = datetime.now(UTC)
        taken: set[str] = set()
        hosts = bool(self.sources.hosts)
        if hosts and table.columns[1] != "host":  # hosts configured: a host column (known once config.yaml was read)
            table.columns, table.styled = (COLUMNS[0], "host", *COLUMNS[1:]), 3
        shown = [(r, Line(line_key(r, taken), texts(r, now, hosts), style_of(r), r.who)) for r in self.rows]
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
        if row is not None and (row.host_down or row.problem):
            self.say(f"{row.who}: {row.host_down or row.problem}")
        else:
            self._say_question(again=True)

    def _say_question(self, *, again: bool) -> None:
        """The selected agent's question (what its CLI asks, from its record) on the message line: when it is selected
        (``again``), and when its question changes while it is. A question no longer true (another row selected, the
        agent answered) is taken off; a message about anything else stays."""
        row = self.selected()
        asked = question(row) if row is not None else None
        key = (row.key, asked) if row is not None and asked else None
        if key is not None and key == self.answered:
            key = None  # answered here, its record not yet told: the answer's outcome stays on the line
        elif key is None and row is not None and self.answered is not None and self.answered[0] == row.key:
            self.answered = None  # its record dropped the question: a question of the same words later is new
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
        if row is None or row.host is None:
            self.remote_shown = None  # back on a remote row later: captured again
        if row is None:
            self.preview_title = "preview"
            self._set_preview("preview", "no agent yet: n starts one")
        elif row.host is not None:
            self._remote_preview(row)
            return
        elif row.pane is None or self.sources.tmux is None:
            self.preview_title = row.agent
            self._set_preview(row.agent, self._no_pane(row))
        else:
            title = self.preview_title = f"{row.agent} · tmux {row.tmux_session} {row.pane}"
            self._set_preview(title, None)
            shown = self.preview_key[1] if self.preview_key[0] == title else None
            self.capture(self.sources.tmux, row.pane, title, shown if isinstance(shown, PaneShot) else None)

    def _remote_preview(self, row: Row) -> None:
        """Another host's agent: its pane there captured over ssh when the row is selected and when its record changes
        (not on the clock: no traffic while nothing changes); why not, when its host is down or it has no pane."""
        title = self.preview_title = f"{row.who}" + (f" · tmux {row.tmux_session} {row.pane} there" if row.pane else "")
        host = self.host_rows.hosts.get(row.host or "")
        if row.pane is None or row.host_down or host is None:
            self.remote_shown = None
            self._set_preview(title, row.host_down or row.problem or f"{row.agent} runs on {row.host}: no tmux pane there")
            return
        self._set_preview(title, None)
        key = (title, row.record.get("updated"), row.state)
        if key != self.remote_shown:
            self.remote_shown = key
            shown = self.preview_key[1] if self.preview_key[0] == title else None
            self.capture_remote(host, row.pane, title, shown if isinstance(shown, PaneShot) else None)

    @work(thread=True, exclusive=True, group="preview")
    def capture_remote(self, host: Host, pane: str, title: str, shown: PaneShot | None) -> None:
        body: PaneShot | str
        try:
            body = remote_capture(host, pane, shown)
        except (OSError, AgentlaunchError) as exc:
            body = str(getattr(exc, "message", None) or exc)
        self.from_thread(self._set_preview, title, body)

    @work(thread=True, exclusive=True, group="remote-diff")
    def remote_diff(self, row: Row, then: Callable[[Row, dict[str, Any], str | None], None]) -> None:
        """d on another host's agent: its worktree's diff read there (:func:`~agentlaunch.deck.host_rows.remote_diff`),
        shown on a page whose M and D (merge, remove: run there) are handed to ``then`` with the worktree."""
        from agentlaunch.deck.host_rows import remote_diff

        host = self.host_rows.hosts.get(row.host or "")
        if host is None or row.host_down:
            self.from_thread(self.say, f"{row.who}: {row.host_down or 'its host is not in config.yaml'}")
            return
        self.from_thread(self.say, f"reading {row.who}'s worktree there…")
        tree: dict[str, Any] | None = None
        try:
            title, text, tree = remote_diff(host, row.agent)
        except AgentlaunchError as exc:
            title, text = row.who, exc.message
        if tree is None:
            self.from_thread(self._page, title, text)
            return
        found = tree  # for the page's callback
        self.from_thread(self._page, title, text, {"M": "merge", "D": "remove"}, lambda what: then(row, found, what))

    def _page(
        self, title: str, text: str, keys: dict[str, str] | None = None, then: Callable[[str | None], None] | None = None
    ) -> None:
        from rich.text import Text

        from agentlaunch.deck.screens import Page

        self.say("")
        self.push_screen(Page(title, Text(visible(text, keep_newlines=True)), keys), then)

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

    def _agents_args(self, agent: str | None = None) -> list[str]:
        """``--agents-dir`` for a command on ``agent``: the deck's, or the state folder's for an agent started without
        a definition (:mod:`agentlaunch.definitions.adhoc`)."""
        from agentlaunch.definitions.adhoc import adhoc_dir, is_adhoc

        folder = self.sources.agents_dir
        defined = folder is not None and (folder / str(agent) / "agent.yaml").is_file()
        if agent is not None and not defined and is_adhoc(self.sources.state_dir, agent):
            folder = adhoc_dir(self.sources.state_dir)
        return ["--agents-dir", str(folder)] if folder is not None else []

    def say(self, text: str) -> None:
        """One line, made inert (:func:`~agentlaunch.visible.visible`, no markup), cut with an ellipsis to fit (the CSS)."""
        self.question_shown = False
        with contextlib.suppress(NoMatches):
            self.query_one("#message", Static).update(visible(text))
