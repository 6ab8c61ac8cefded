"""A question the hooks named keeps its reason and its one announcement; the CLI's own ``blocked`` is the source only
where they are silent (agentlaunch/launch/native/cli_report.py, through NativeRun as a native launch runs it).

The order is the one measured on Claude Code 2.1.332 in tmux (a native launch with its command hooks): the hooks'
``tool``, the CLI's ``working``, its ``blocked kind=permission msg="approve Bash: …"``, and about 0.1 s later the
``PermissionRequest`` hook's ``asking`` with the tool and its input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from agentlaunch.events import Text, TurnEnd
from agentlaunch.launch.native.cli_report import INTERRUPTED, NAMED_WAIT
from agentlaunch.launch.native.native import NativeRun
from agentlaunch.launch.native.program_status import Report
from agentlaunch.live.needs_you import NeedsYou
from agentlaunch.providers.native.source import QuestionAsked
from agentlaunch.sinks import StateChanged, TurnDone
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


def turns_done(launch: Launch) -> list[object]:
    return [e for e in launch.emitted if isinstance(e, TurnDone)]


class Counting(Launch):
    """The launch as above, each event it emits kept (``emitted``: the recorder counts a turn by its TurnDone)."""

    def __init__(self) -> None:
        super().__init__()
        self.emitted: list[object] = []

    def emit(self, event: object) -> None:
        self.emitted.append(event)
        super().emit(event)


def counting() -> tuple[Counting, NativeRun]:
    launch = Counting()
    return launch, NativeRun(launch)  # type: ignore[arg-type]


def test_the_clis_done_waits_for_the_hooks_to_end_the_turn_and_ends_it_only_if_they_do_not() -> None:
    """Claude Code says done before its Stop hook: the hooks' waiting comes with the turn's last call read, and
    their failure is the row's reason; a done no source follows ends the turn after NAMED_WAIT."""
    launch, run = counting()
    run.on_items([StateChanged("thinking")])
    run.reports.on_report(Report("done", app="claude-code"))
    assert launch.state == "thinking" and run.in_turn  # not yet: the hooks end it
    run.on_items([TurnEnd(is_error=True, error="the API call failed (overloaded)"), StateChanged("waiting")])
    assert launch.told[-1] == ("waiting", "its last turn failed: the API call failed (overloaded)", "hooks")
    assert all(t.cancelled for t in launch.loop.timers)  # the done's wait ended with the hooks' waiting
    launch.loop.fire()
    assert launch.told[-1][2] == "hooks" and len(turns_done(launch)) == 1  # nothing set again by the CLI's word

    run.on_items([StateChanged("thinking")])  # a turn whose end no hook tells
    run.reports.on_report(Report("working", app="claude-code"))
    run.reports.on_report(Report("done", app="claude-code"))
    assert launch.state == "thinking"
    launch.loop.fire()  # NAMED_WAIT over: the CLI's done ends it
    assert launch.told[-1] == ("waiting", None, "cli") and not run.in_turn
    assert launch.session_state.turns == 2 and len(turns_done(launch)) == 2


def test_codexs_hooks_read_in_one_batch_after_its_done_and_idle_are_one_turn() -> None:
    """Codex 0.171 on a loaded machine (CI): its working, done and idle went through the relay before the hooks'
    UserPromptSubmit and Stop were read; their thinking then opened a second turn (a session of 3 turns said 4)."""
    launch, run = counting()
    run.on_items([StateChanged("waiting")])  # a resumed Codex: its thread's file found
    run.reports.on_report(Report("working", app="codex"))
    run.reports.on_report(Report("done", app="codex"))
    run.reports.on_report(Report("idle", app="codex"))  # after done: the same end, no interruption
    assert launch.state == "thinking" and len(launch.loop.timers) == 1
    run.on_items([StateChanged("thinking"), StateChanged("waiting")])  # the hooks' batch
    assert (launch.state, launch.state_reason, launch.session_state.state_source) == ("waiting", None, "hooks")
    launch.loop.fire()
    run.reports.on_report(Report("idle", app="codex"))
    assert launch.state_reason is None and launch.session_state.turns == 1 and len(turns_done(launch)) == 1


def test_the_interfaces_report_told_after_the_app_servers_end_of_the_turn_opens_no_turn() -> None:
    """Codex's interface on agentlaunch's app-server reports what the relay passed it: measured 4-8 ms after the
    app-server, later under load (then its working came after the turn was over)."""
    launch, run = counting()
    for state in ("thinking", "tool", "thinking", "waiting"):
        run.on_items([StateChanged(state, None, "app-server")])
    run.reports.on_report(Report("working", app="codex"))
    run.reports.on_report(Report("done", app="codex"))
    assert launch.state == "waiting" and not run.in_turn
    run.on_items([StateChanged("thinking", None, "app-server")])  # the next turn; the interface's startup idle, late
    run.reports.on_report(Report("idle", app="codex"))
    assert launch.state == "thinking" and run.in_turn  # waits for the app-server
    run.on_items([StateChanged("waiting", None, "app-server")])
    launch.loop.fire()
    assert launch.state_reason is None and launch.session_state.turns == 2 and len(turns_done(launch)) == 2


def test_the_clis_working_then_idle_that_no_source_saw_is_no_turn() -> None:
    """Codex says working, then idle, as it starts: after a resumed session's waiting it is no turn of it."""
    launch, run = counting()
    run.on_items([StateChanged("waiting")])
    run.reports.on_report(Report("working", app="codex"))
    assert launch.state == "thinking" and run.in_turn
    run.reports.on_report(Report("idle", app="codex"))
    assert (launch.state, launch.state_reason) == ("waiting", None)
    assert launch.session_state.turns == 0 and turns_done(launch) == [] and not run.in_turn
    # One a source saw and the person's Esc ended is a turn, interrupted.
    run.reports.on_report(Report("working", app="codex"))
    run.on_items([StateChanged("thinking")])
    run.reports.on_report(Report("idle", app="codex"))
    assert (launch.state, launch.state_reason) == ("waiting", INTERRUPTED) and launch.session_state.turns == 1
