"""`n` in the deck: pick a definition from the agents directory (a list filtered as one types), or an agent without
one (a name, provider, model and folder: :mod:`agentlaunch.definitions.adhoc`), then the optional first prompt, a
worktree or not, and the tmux session (the team) it starts in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, OptionList
from textual.widgets.option_list import Option

from agentlaunch.deck.actions import Place
from agentlaunch.deck.rows import Row, Sources, definition
from agentlaunch.definitions.names import agent_names
from agentlaunch.errors import AgentlaunchError, UsageError
from agentlaunch.live.tmux import check_name


@dataclass(frozen=True)
class Choice:
    """A definition on the picker's list: its name and what it runs (``claude/claude-sonnet-4-5``) or what is wrong."""

    name: str
    about: str = ""

    def label(self) -> str:
        return f"{self.name}  {self.about}" if self.about else self.name


ADHOC = "\x00adhoc"  # the picker's option for an agent without a definition (no agent name holds a NUL)


def defined_names(folder: Path | None) -> list[str]:
    """The agents ``folder`` defines; none when it is missing or cannot be listed."""
    if folder is None or not folder.is_dir():
        return []
    try:
        return agent_names(folder)
    except AgentlaunchError:
        return []


def choices_of(sources: Sources) -> list[Choice]:
    """The agents directory's definitions, then the agents started without one (kept in the state folder)."""
    from agentlaunch.definitions.adhoc import adhoc_dir

    found = []
    for name in defined_names(sources.agents_dir):
        provider, model, problem = definition(sources, name)
        found.append(Choice(name, f"⚠ {problem}" if problem else "/".join(x for x in (provider, model) if x)))
    defined = {c.name for c in found}
    found += [Choice(n, "without a definition") for n in defined_names(adhoc_dir(sources.state_dir)) if n not in defined]
    return found


def default_session(rows: list[Row], name: str, place: Place | None) -> str:
    """The session `n` offers: the one the agent's own pane is in; else the deck's own (``place``) when it is a team's
    (agents run there, or nowhere yet); else the only one agents run in (the deck in a session of its own beside one
    team); else the deck's; empty (`tmux up`'s agentlaunch) when the deck is not on the agents' tmux server."""
    own = next((r.tmux_session for r in rows if r.agent == name and r.tmux_session and not r.fork), None)
    if own:
        return own
    sessions = {r.tmux_session for r in rows if r.tmux_session}
    if place is not None and (place.session in sessions or not sessions):
        return place.session
    if len(sessions) == 1:
        return sessions.pop()
    return place.session if place is not None else ""


@dataclass(frozen=True)
class NewAgent:
    """What the person chose: ``agentlaunch tmux up NAME [--worktree] [--session S]``, then the first prompt if any."""

    name: str
    prompt: str = ""
    worktree: bool = False
    session: str = ""  # empty: `tmux up`'s own ($AGENTLAUNCH_TMUX_SESSION, else agentlaunch)

    def up_args(self) -> list[str]:
        return [
            "tmux",
            "up",
            self.name,
            "--no-attach",
            *(["--worktree"] if self.worktree else []),
            *(["--session", self.session] if self.session else []),
        ]


@dataclass(frozen=True)
class AdHoc:
    """An agent without a definition: its name, provider, model (empty: the CLI's own), folder, and whether its
    definition is saved into the agents directory (else it is written to the state folder's ``adhoc``)."""

    name: str
    provider: str
    model: str
    folder: Path
    save: bool = False


PICKER_CSS = """
PickDefinition, StartForm { align: center middle; }
PickDefinition > Vertical, StartForm > Vertical { width: 80%; height: auto; max-height: 90%; border: round $accent; }
PickDefinition OptionList { height: auto; max-height: 12; }
StartForm #problem, AdHocForm #problem { color: $error; }
AdHocForm { align: center middle; }
AdHocForm > Vertical { width: 80%; height: auto; max-height: 90%; border: round $accent; }
"""


class PickDefinition(ModalScreen[str | None]):
    """The agents directory's definitions; typing filters them, ↑ ↓ move, Enter picks, Escape cancels."""

    # Ordinary bindings: the filter (an Input) has no use for ↑ ↓, so they reach the screen after the letters typed
    # before them (a priority binding would act at once, on the list before those letters filtered it).
    BINDINGS = [
        Binding("escape", "cancel", "cancel"),
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
    ]
    DEFAULT_CSS = PICKER_CSS

    def __init__(self, choices: list[Choice], typed: str = "") -> None:
        super().__init__()
        self.choices, self.typed = choices, typed

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("start which agent? type to filter, ↑ ↓ to choose, Enter")
            yield Input(value=self.typed, placeholder="filter", id="filter")
            yield OptionList(id="choices")

    def on_mount(self) -> None:
        self.show(self.typed)
        self.query_one("#filter", Input).focus()

    def matching(self, text: str) -> list[Choice]:
        needle = text.strip().lower()
        found = [c for c in self.choices if needle in c.label().lower()]
        return sorted(found, key=lambda c: (not c.name.lower().startswith(needle), c.name))  # a name's start first

    def show(self, text: str) -> None:
        options = self.query_one(OptionList)
        options.clear_options()
        found = self.matching(text)
        options.add_options([Option(c.label(), id=c.name) for c in found] or [Option("no definition matches", disabled=True)])
        options.add_option(Option("+ an agent without a definition: provider, model, folder", id=ADHOC))  # always there
        options.highlighted = 0 if found else None

    def on_input_changed(self, event: Input.Changed) -> None:
        self.show(event.value)

    def action_move(self, step: int) -> None:
        options = self.query_one(OptionList)
        options.action_cursor_down() if step > 0 else options.action_cursor_up()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self.pick(options.get_option_at_index(options.highlighted).id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.pick(event.option.id)

    def pick(self, name: str | None) -> None:
        if name == ADHOC:  # what was typed is the new agent's name
            self.dismiss(ADHOC + self.query_one("#filter", Input).value.strip())
        elif name is not None:
            self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Tick(Checkbox, inherit_bindings=False):
    """A checkbox Space ticks; Enter is the form's, never the box's."""

    BINDINGS = [Binding("space", "toggle_button", "tick", show=False)]


class StartForm(ModalScreen[NewAgent | None]):
    """The first prompt, a worktree or not, the tmux session; ↑ ↓ move between them, Ctrl+T ticks, Enter starts."""

    # Keys typed in a burst (a paste, send-keys) reach an input through its own queue, while a priority binding
    # acts at once: Enter as one would start the form before the prompt's last letters are in it. So Enter is the
    # input's (Submitted) or, on the box, the screen's own; only ticking (order-free) is a priority key.
    BINDINGS = [
        Binding("escape", "cancel", "cancel"),
        Binding("enter", "start", "start"),
        Binding("ctrl+t", "tick", "worktree", priority=True),
        Binding("down", "app.focus_next", show=False),
        Binding("up", "app.focus_previous", show=False),
    ]
    DEFAULT_CSS = PICKER_CSS

    def __init__(self, name: str, sessions: list[str], session: str = "") -> None:
        super().__init__()
        self.agent, self.sessions, self.session = name, sessions, session

    def compose(self) -> ComposeResult:
        running = f" (running: {', '.join(self.sessions)})" if self.sessions else ""
        with Vertical():
            keys = "↑ ↓ between the fields, Ctrl+T (or Space on it) ticks, Enter starts, Escape cancels"
            yield Label(f"start {self.agent}: {keys}", markup=False)
            yield Input(placeholder="first prompt (optional)", id="prompt")
            yield Tick(f"in its own git worktree (branch agentlaunch/{self.agent})", id="worktree")
            yield Label(f"tmux session, the team it joins{running}; empty: agentlaunch", markup=False)
            yield Input(value=self.session, placeholder="agentlaunch", id="session")
            yield Label("", id="problem", markup=False)

    def on_mount(self) -> None:
        self.query_one("#prompt", Input).focus()  # at once: keys typed right after the form shows are the prompt's

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.action_start()

    def action_tick(self) -> None:
        self.query_one("#worktree", Tick).toggle()

    def action_start(self) -> None:
        session = self.query_one("#session", Input).value.strip()
        if session:
            try:
                check_name(session, "tmux session")
            except UsageError as exc:
                self.query_one("#problem", Label).update(exc.message)
                self.query_one("#session", Input).focus()
                return
        prompt = self.query_one("#prompt", Input).value.strip()
        self.dismiss(NewAgent(self.agent, prompt, self.query_one("#worktree", Tick).value, session))

    def action_cancel(self) -> None:
        self.dismiss(None)


class AdHocForm(ModalScreen[AdHoc | None]):
    """An agent without a definition: its name, provider, model, folder, and whether to save its definition."""

    BINDINGS = [
        Binding("escape", "cancel", "cancel"),
        Binding("enter", "start", "next"),
        Binding("ctrl+t", "tick", "save", priority=True),
        Binding("down", "app.focus_next", show=False),
        Binding("up", "app.focus_previous", show=False),
    ]
    DEFAULT_CSS = PICKER_CSS

    def __init__(self, name: str, providers: tuple[str, ...], folder: Path, defined: list[str], save_to: Path | None) -> None:
        super().__init__()
        self.typed, self.providers, self.folder, self.defined, self.save_to = name, providers, folder, defined, save_to

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("an agent without a definition: ↑ ↓ between the fields, Enter goes on, Escape cancels", markup=False)
            yield Input(value=self.typed, placeholder="name (letters, digits, _ and -)", id="name")
            yield Input(value=self.providers[0], placeholder=" · ".join(self.providers), id="provider")
            yield Input(placeholder="model (empty: the CLI's own)", id="model")
            yield Input(value=str(self.folder), placeholder="the folder it works in", id="folder")
            where = f"in {self.save_to}" if self.save_to is not None else "(no agents directory)"
            yield Tick(
                f"save it as a definition {where} (else it is kept in agentlaunch's state folder)",
                id="save",
                disabled=self.save_to is None,
            )
            yield Label("", id="problem", markup=False)

    def on_mount(self) -> None:
        self.query_one("#name", Input).focus()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.action_start()

    def action_tick(self) -> None:
        if self.save_to is not None:
            self.query_one("#save", Tick).toggle()

    def action_start(self) -> None:
        values = {f: self.query_one(f"#{f}", Input).value.strip() for f in ("name", "provider", "model", "folder")}
        problem = self.problem(values)
        if problem is not None:
            field, said = problem
            self.query_one("#problem", Label).update(said)
            self.query_one(f"#{field}", Input).focus()
            return
        folder = Path(values["folder"]).expanduser()
        self.dismiss(AdHoc(values["name"], values["provider"], values["model"], folder, self.query_one("#save", Tick).value))

    def problem(self, values: dict[str, str]) -> tuple[str, str] | None:
        """The field to fix and what is wrong with it, or None."""
        name = values["name"]
        try:
            check_name(name, "agent")
        except UsageError as exc:
            return "name", exc.message
        if name in self.defined:
            return "name", f"{name} is defined already: pick it from the list (Escape, n)"
        if values["provider"] not in self.providers:
            return "provider", f"provider {values['provider']!r}: one of {', '.join(self.providers)}"
        if not Path(values["folder"]).expanduser().is_dir():
            return "folder", f"{values['folder'] or 'an empty name'} is not a folder"
        return None

    def action_cancel(self) -> None:
        self.dismiss(None)
