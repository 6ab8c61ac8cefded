"""The deck's dialogs: a line of input (send, filter), a yes/no, a scrollable text (help, diff, usage); `n`'s are
in picker.py."""

from __future__ import annotations

from pathlib import Path

from rich.console import RenderableType
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

KEYS_HELP = """\
Keys
  ↑ ↓        select an agent (the preview shows its pane); the selection stays on that agent
             (its name and session) whatever the list does
  Enter      attach to its pane (how to come back: below)
  Tab        next agent that blocks on you (asking, stalled, retrying, paused, dead), then
             those that ended a turn you have not looked at since; never an idle one seen
  s          send a prompt (as `agentlaunch send`)
  a          allow what an asking agent asks, once (its question is on the message line; as
             `agentlaunch answer --allow`: only that question, never one that came since)
  D          deny it, after y naming the agent and the tool (as `agentlaunch answer --deny`)
  R          reply in words to a question (not a permission) (as `agentlaunch answer --reply`)
  x          stop it, after y (as `agentlaunch stop`: its session stays resumable)
  b          resume it after a budget paused it, after y (as `agentlaunch resume-budget`: with
             the limit still spent, one more turn; raising the limit resumes it by itself)
  r          restart it in its pane and session, after y (as `agentlaunch restart`)
  n          start an agent: pick its definition (type to filter), or one without a definition
             (provider, model, folder); then its first prompt (optional), its own worktree or
             not, the tmux session (team) it joins: the deck's own by default
  f          fork it (as `agentlaunch fork`); a fork shows as `name ⑂ 2`
  d          its worktree's diff against its base; there, M merges it into its base and
             removes it, D removes it (each after y, refused as `agentlaunch worktrees remove`)
  u          usage: per agent (7 days) and per day, with a chart
  /          filter the list (empty: all)
  ?          this help
  q          quit: every agent keeps running

A key that asks y/n names the agent; y acts on that agent (and session) even if the
list changed meanwhile, or says why it does nothing (its record gone, a new session).

Other hosts (hosts: in config.yaml): their agents are rows too, with a host column (/
and the host's name keeps its rows). On their rows Enter attaches over ssh (ssh -t HOST
tmux … attach; detach, prefix d, comes back), s x r f b a D R run there (--host HOST),
d shows the worktree's diff read there (removing it: worktrees remove AGENT --host HOST).
A host that cannot be reached greys its rows, saying why; they come back by themselves.
"""


def keys_help(back: str) -> str:
    """The help page: the keys, then what brings the person back to the deck after Enter, where it runs (``back``)."""
    return f"{KEYS_HELP}\nBack to the deck after Enter\n  {back}\n"


class Ask(ModalScreen[str | None]):
    """One line of input; Enter gives it, Escape gives None."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = "Ask { align: center middle; } Ask > Vertical { width: 80%; height: auto; border: round $accent; }"

    def __init__(self, question: str, value: str = "") -> None:
        super().__init__()
        self.question, self.value = question, value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, markup=False)  # it may quote what a CLI asks: its text, never markup
            yield Input(value=self.value, id="answer")

    def on_mount(self) -> None:
        self.query_one(Input).focus()  # at once: keys typed right after the question shows are the answer's

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """``question (y/n)``."""

    BINDINGS = [Binding("y", "answer(True)", "yes"), Binding("n,escape", "answer(False)", "no")]
    DEFAULT_CSS = "Confirm { align: center middle; } Confirm > Label { border: round $warning; padding: 0 1; }"

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        yield Label(f"{self.question} (y/n)", markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class Page(ModalScreen[str | None]):
    """A scrollable page (help, a diff, usage); Escape or q closes it, other keys are its own."""

    BINDINGS = [Binding("escape,q", "close", "close")]
    DEFAULT_CSS = "Page > VerticalScroll { border: round $accent; }"

    def __init__(self, title: str, body: RenderableType, keys: dict[str, str] | None = None) -> None:
        super().__init__()
        self.title_text, self.body, self.keys = title, body, keys or {}

    def compose(self) -> ComposeResult:
        scroll = VerticalScroll()
        scroll.border_title = self.title_text
        with scroll:
            yield Static(self.body, id="page")

    def on_key(self, event: object) -> None:
        key = getattr(event, "key", "")
        if key in self.keys:
            self.dismiss(self.keys[key])

    def action_close(self) -> None:
        self.dismiss(None)


def usage_page(path: Path) -> Page:
    """u: the usage store's last 7 days, per agent and per day (its cost)."""
    from datetime import UTC, datetime, timedelta

    from rich.console import Group
    from rich.text import Text

    from agentlaunch.usage.reports import daily_chart, report_table
    from agentlaunch.usage.store import Store

    if not path.is_file():
        return Page("usage", Text("no usage recorded yet"))
    since = datetime.now(UTC) - timedelta(days=7)
    with Store.open(path, timeout=1.0) as store:
        agents, days = store.usage_report("agent", since=since), store.usage_report("day", since=since)
    body = Group(report_table(agents, "agent", title="per agent, 7 days"), daily_chart(days, metric="cost", since=since))
    return Page("usage · q closes", body)
