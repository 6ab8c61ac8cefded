"""A sent text in the native interface: what is typed per provider, and the door it shuts until its turn begins.

Driven in-process: a :class:`NativeRun` on a real loop with a stand-in launch and relay; requests are
:class:`SendRequest` objects that record their replies. The real CLIs' side is in tests/e2e
(test_native_claude_tui.py, test_native_codex_gemini_tui.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentlaunch.events import Text, TurnEnd
from agentlaunch.launch.control import SendRequest
from agentlaunch.launch.loop import Loop
from agentlaunch.launch.native import sends
from agentlaunch.launch.native.native import NativeRun
from agentlaunch.launch.session_state import SessionState
from agentlaunch.launch.turn_answer import TurnAnswer
from agentlaunch.providers.descriptors import DESCRIPTORS
from agentlaunch.sinks import StateChanged
from agentlaunch.usage.meter import Meter


class Recorded(SendRequest):
    """A request whose replies are kept instead of written to a socket."""

    def __init__(self, prompt: str, wait: bool = True, command: bool = False) -> None:
        super().__init__(prompt, wait, command=command)
        self.replies: list[dict[str, Any]] = []

    def _send(self, message: dict[str, Any]) -> None:
        self.replies.append(message)


class Relay:
    takes_paste = True

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        self.typed: list[str] = []
        self.last_output = 0.0

    def type_prompt(self, text: str) -> None:
        self.typed.append(text)

    def read_sources(self, arm: bool = True) -> None:
        pass


class Spec:
    name = "agent"


class Adapter:
    def __init__(self, provider: str) -> None:
        self.descriptor = DESCRIPTORS[provider]


class Launch:
    """What NativeRun's sending touches of a launch."""

    stopped = None
    paused = None
    session_id = "s1"

    class gates:  # noqa: N801 - the launch's attribute of that name (no budget applies)
        @staticmethod
        def check(launch: Any) -> None:
            pass

    def __init__(self, provider: str) -> None:
        self.loop = Loop()
        self.spec, self.adapter = Spec(), Adapter(provider)
        self.meter = Meter()
        self.state = "waiting"
        self.session_state = SessionState(self.session_id, False, 0, {}, None)  # the turns NativeRun counts
        self.notices: list[str] = []

    def notice(self, text: str) -> None:
        self.notices.append(text)

    def set_state(self, state: str, *, reason: str | None = None, always: bool = False, source: str = "") -> None:
        self.state = state

    class liveness:  # noqa: N801 - the launch's attribute of that name
        @staticmethod
        def progress() -> None:
            pass

    def emit(self, event: Any) -> None:
        pass

    def handle(self, event: Any) -> None:
        pass


class Control:
    def __init__(self) -> None:
        self.queue: list[SendRequest] = []

    def take(self) -> list[SendRequest]:
        taken, self.queue = self.queue, []
        return taken


def running(provider: str) -> tuple[NativeRun, Launch, Relay, Control]:
    launch = Launch(provider)
    run = NativeRun(launch)  # type: ignore[arg-type]
    relay, control = Relay(launch.loop), Control()
    run.relay, run.sends.control = relay, control  # type: ignore[assignment]
    run.heard = True  # the interface is up, its startup turn over
    return run, launch, relay, control


def offer(run: NativeRun, control: Control, *requests: SendRequest) -> None:
    control.queue.extend(requests)
    run.sends.on_sends()


def run_for(loop: Loop, seconds: float) -> None:
    loop.call_later(seconds, loop.stop)
    loop.run()


@pytest.mark.parametrize(
    ("provider", "text", "typed"),
    [
        ("claude", "!touch f", None),
        ("claude", "/cost", None),
        ("claude", "  /cost", None),
        ("claude", " !touch f", " !touch f"),
        ("claude", "say\n!touch f", "say\n!touch f"),
        ("claude", "#note @file ? & $x", "#note @file ? & $x"),
        ("codex", "!touch f", " !touch f "),
        ("codex", "/cost", " /cost "),
        ("codex", "use $skill", " use $skill "),
        ("gemini", "!touch f", "!touch f"),
        ("gemini", "/about", None),
        ("gemini", " /about", None),
        ("gemini", "a\n/about", "a\n/about"),
    ],
)
def test_what_is_typed_per_provider_or_refused_as_bad_input(provider: str, text: str, typed: str | None) -> None:
    run, _, relay, control = running(provider)
    request = Recorded(text)
    offer(run, control, request)
    if typed is None:
        assert relay.typed == []
        (reply,) = request.replies
        assert reply["ok"] is False and reply["bad_input"] is True and "--command" in reply["error"]
    else:
        assert relay.typed == [typed] and request.replies[0]["ok"] is True


def test_a_command_is_typed_as_it_is_and_done_once_the_cli_is_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sends, "COMMAND_MIN", 0.05)
    monkeypatch.setattr(sends, "COMMAND_QUIET", 0.05)
    for provider in ("claude", "codex", "gemini"):
        run, launch, relay, control = running(provider)
        command = Recorded("/cost", command=True)
        offer(run, control, command)
        assert relay.typed == ["/cost"]
        later = Recorded("after it")
        offer(run, control, later)
        assert later.replies[0]["ok"] is False and "has not started yet" in later.replies[0]["error"]  # the door, shut
        run_for(launch.loop, 0.5)
        assert command.replies[-1]["done"] is True and command.replies[-1]["exit_code"] == 0  # no turn: done, answer ""
        again = Recorded("after it")
        offer(run, control, again)
        assert again.replies[0]["ok"] is True  # the door, open again


def test_a_sent_text_that_opens_no_turn_is_released_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sends, "NO_TURN_WAIT", 0.1)
    run, launch, relay, control = running("claude")
    waited, fired = Recorded("lost in a menu"), Recorded("fire and forget", wait=False)
    offer(run, control, waited)
    run_for(launch.loop, 0.5)
    (_, done) = waited.replies
    assert done["done"] is True and done["exit_code"] == 1 and "began no turn within 0.1s" in done["error"]
    offer(run, control, fired)  # the door opened again
    assert fired.replies[0]["ok"] is True
    run_for(launch.loop, 0.5)
    assert any("began no turn" in n for n in launch.notices)  # without --wait, the launch reports it
    assert relay.typed == ["lost in a menu", "fire and forget"]


def test_a_sent_text_whose_turn_begins_is_answered_at_its_end_and_not_released(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sends, "NO_TURN_WAIT", 0.1)
    monkeypatch.setattr(sends, "ANSWER_GRACE", 0.01)
    run, launch, _, control = running("claude")
    request = Recorded("hello")
    offer(run, control, request)
    run.on_items([StateChanged("thinking")])
    run_for(launch.loop, 0.3)  # past NO_TURN_WAIT: the turn began, nothing is released
    assert len(request.replies) == 1
    run.on_items([StateChanged("waiting")])
    run_for(launch.loop, 0.1)
    assert request.replies[-1]["done"] is True and request.replies[-1]["exit_code"] == 0


def test_a_turn_whose_last_message_the_cli_reported_is_answered_at_once_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's Stop hook carries the turn's last message: the answer goes back with the waiting, no grace read,
    and ends with that message even when the transcript has not given it (or anything) yet."""
    monkeypatch.setattr(sends, "ANSWER_GRACE", 60.0)  # a grace read would not come within this test
    run, launch, _, control = running("claude")
    request = Recorded("hello")
    offer(run, control, request)
    run.on_items([StateChanged("thinking"), Text("Writing.")])
    run.on_items([TurnEnd(result="Done."), StateChanged("waiting")])
    assert request.replies[-1]["done"] is True and request.replies[-1]["exit_code"] == 0
    assert request.replies[-1]["answer"] == "Writing.\n\nDone."


@pytest.mark.parametrize(
    ("texts", "last", "answer"),
    [
        (["Writing.", "Done."], "Done.", "Writing.\n\nDone."),  # the transcript had it: not twice
        (["Writing."], "Done.", "Writing.\n\nDone."),  # the transcript lags: the CLI's word ends it
        ([], "Done.", "Done."),  # no transcript at all
        (["Done."], None, "Done."),  # a CLI that does not say (Codex, Gemini): the transcript's text as before
        (["Line one\n"], "Line two", "Line one\nLine two"),
    ],
)
def test_the_answer_ends_with_the_last_message_the_cli_reported(texts: list[str], last: str | None, answer: str) -> None:
    turn = TurnAnswer()
    for text in texts:
        turn.add(Text(text))
    turn.last_message = last
    assert turn.text == answer
    turn.start()
    assert turn.text == "" and turn.last_message is None
