"""A question the hooks named keeps its reason and its one announcement; the CLI's own ``blocked`` is the source only
where they are silent (agentlaunch/launch/native/cli_report.py, through NativeRun as a native launch runs it).

The order is the one measured on Claude Code 2.1.332 in tmux (a native launch with its command hooks): the hooks'
``tool``, the CLI's ``working``, its ``blocked kind=permission msg="approve Bash: …"``, and about 0.1 s later the
``PermissionRequest`` hook's ``asking`` with the tool and its input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from agentlaunch.events import Text
from agentlaunch.launch.native.cli_report import INTERRUPTED, NAMED_WAIT
from agentlaunch.launch.native.native import NativeRun
from agentlaunch.launch.native.program_status import Report
from agentlaunch.live.needs_you import NeedsYou
from agentlaunch.providers.native.source import QuestionAsked
from agentlaunch.sinks import StateChanged
from tests.test_program_status import RunLaunch

BLOCKED = Report("blocked", app="claude-code", kind="permission", msg="approve Bash: touch x.txt")


class Timer:
    def __init__(self, delay: float, then: Callable[[], None]) -> None:
        self.delay, self.then, self.cancelled = delay, then, False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    def __init__(self) -> None:
        self.timers: list[Timer] = []

    def call_later(self, delay: float, then: Callable[[], None]) -> Timer:
        self.timers.append(Timer(delay, then))
        return self.timers[-1]

    def fire(self) -> None:
        """Every timer due runs (the wait is over), as the loop runs them."""
        due, self.timers = [t for t in self.timers if not t.cancelled], []
        for timer in due:
            timer.then()


class Launch(RunLaunch):
    """What NativeRun touches of a launch, its state kept and emitted as the launch does (``told``: each
    StateChanged) to the notify sink (its ``announced``: what the bell and the notify command were given)."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = Loop()
        self.spec = SimpleNamespace(name="asker")
        self.session_id, self.working_dir = "s1", Path("/work")
        self.sink = NeedsYou(notify=["true"], bell=False, pane="", desktop=None, debounce=0.0)
        self.sink._spawn = lambda payload: None  # type: ignore[method-assign]  # what it would run: in announced

    def set_state(self, state: str, *, always: bool = False, reason: str | None = None, source: str = "agentlaunch") -> None:
        before = len(self.told)
        super().set_state(state, always=always, reason=reason, source=source)
        if len(self.told) > before:
            self.emit(StateChanged(state, reason, source))

    def emit(self, event: object) -> None:
        self.sink.event(event, self)  # type: ignore[arg-type]


def in_a_tool() -> tuple[Launch, NativeRun]:
    launch = Launch()
    run = NativeRun(launch)  # type: ignore[arg-type]
    run.on_items([StateChanged("thinking"), StateChanged("tool")])
    run.reports.on_report(Report("working", app="claude-code", msg="Making a file"))
    return launch, run


def askings(launch: Launch) -> list[tuple[str, str | None, str]]:
    """Each change into asking, or to another question (a record's refresh, the same state said again, is none)."""
    changes, before = [], None
    for told in launch.told:
        if told[0] == "asking" and told[:2] != before:
            changes.append(told)
        before = told[:2]
    return changes


def announced(launch: Launch) -> list[tuple[str, str, bool]]:
    """What the notify command was given: the state, the reason, and whether it carries the question's answers."""
    return [(said["state"], said["reason"], "answer" in said) for said in launch.sink.announced]


def hooks_ask(run: NativeRun) -> None:
    """The PermissionRequest hook's report, as Claude's source gives it: the held question, then the asking state."""
    question = QuestionAsked("Bash", {"command": "touch x.txt"}, ("once", "deny"), lambda decision, text: True)
    run.on_items([question, StateChanged("asking", "Bash: touch x.txt")])


def test_the_hooks_question_after_the_clis_blocked_is_the_one_asking_with_its_reason() -> None:
    launch, run = in_a_tool()
    run.reports.on_report(BLOCKED)
    assert launch.state == "tool" and [t.delay for t in launch.loop.timers] == [NAMED_WAIT]  # waits for the hook
    assert launch.session_state.cli_report is not None and launch.session_state.cli_report["state"] == "blocked"
    hooks_ask(run)
    assert launch.loop.timers[0].cancelled  # named: the wait is over
    run.reports.on_report(BLOCKED)  # said again while the dialog is up
    run.reports.on_report(Report("working", app="claude-code"))  # and working, around the slower hook
    launch.loop.fire()
    assert askings(launch) == [("asking", "Bash: touch x.txt", "hooks")]
    assert announced(launch) == [("asking", "Bash: touch x.txt", True)]  # once, with its answers
    assert (launch.state, launch.state_reason, launch.session_state.state_source) == ("asking", "Bash: touch x.txt", "hooks")


def test_a_blocked_no_hook_names_is_asking_on_the_clis_word_once_the_wait_is_over() -> None:
    launch, run = in_a_tool()
    run.reports.on_report(BLOCKED)
    run.reports.on_report(BLOCKED)  # the same report again does not start the wait anew
    assert len(launch.loop.timers) == 1
    launch.loop.fire()
    assert askings(launch) == [("asking", "permission: approve Bash: touch x.txt", "cli")]
    assert announced(launch) == [("asking", "permission: approve Bash: touch x.txt", False)]
    disagreement = launch.session_state.disagreement
    assert disagreement is not None and (disagreement["cli"], disagreement["state"]) == ("blocked", "tool")
    # A hook naming it late gives the row its reason, and the notify command the question's answers (told again)
    hooks_ask(run)
    assert askings(launch)[-1] == ("asking", "Bash: touch x.txt", "hooks")
    assert announced(launch)[1:] == [("asking", "Bash: touch x.txt", True)]
    run.reports.on_report(Report("working", app="claude-code"))  # allowed in the pane: the CLI works on
    assert launch.state == "asking"  # the hooks' question stays until they say otherwise


def test_a_dialog_the_cli_closed_before_the_wait_was_over_never_asks() -> None:
    launch, run = in_a_tool()
    run.reports.on_report(BLOCKED)
    run.reports.on_report(Report("working", app="claude-code"))  # allowed in the pane at once
    assert launch.loop.timers[0].cancelled
    launch.loop.fire()
    assert askings(launch) == [] and launch.state == "tool"


def test_esc_out_of_a_question_the_hooks_named_ends_it_by_the_clis_idle() -> None:
    launch, run = in_a_tool()
    hooks_ask(run)
    run.reports.on_report(BLOCKED)
    assert launch.loop.timers == []  # named already: nothing waits
    run.reports.on_report(Report("idle", app="claude-code"))
    assert (launch.state, launch.session_state.state_source) == ("waiting", "cli") and not run.in_turn
    assert launch.state_reason == INTERRUPTED  # not done: the question was left, not answered


def test_a_login_the_cli_says_expired_asks_at_once() -> None:
    launch, run = in_a_tool()
    run.reports.on_report(Report("blocked", app="codex", kind="auth", msg="Sign in again"))
    assert askings(launch) == [("asking", "login: Sign in again", "cli")] and launch.loop.timers == []


def test_history_read_between_the_clis_working_and_the_hooks_prompt_is_no_part_of_the_answer() -> None:
    # Measured (a resumed Claude Code in a new worktree): its `working` comes before the UserPromptSubmit hook, whose
    # batch reads the transcript the hook names, the last session's answer in it.
    launch = Launch()
    run = NativeRun(launch)  # type: ignore[arg-type]
    run.on_items([StateChanged("waiting")])
    run.reports.on_report(Report("working", app="claude-code"))
    assert run.in_turn
    run.on_items([Text("It was PLUM."), StateChanged("thinking")])
    run.on_items([Text("Still PLUM."), StateChanged("tool"), StateChanged("thinking")])  # a later thinking: kept
    assert run.answer.text == "Still PLUM."
