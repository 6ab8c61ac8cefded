""" "Needs you": the sink in process (a Launch on the fake CLI, and plain events), and the settings it reads."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentlaunch.definitions.settings import load_settings
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError
from agentlaunch.launch.session import spawn_child
from agentlaunch.launch.turn import ChildLike
from agentlaunch.live.needs_you import NeedsYou
from agentlaunch.live.status import one_line, waited
from agentlaunch.sinks import SessionClosed, StateChanged
from testbed.agent_files import write_agent
from tests.support.waits import wait_for
from tests.test_launch_inprocess import build


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def recorder(tmp_path: Path, name: str = "notified.jsonl", code: int = 0) -> list[str]:
    """A notify command that appends its stdin to a file (and exits with ``code``)."""
    out = tmp_path / name
    script = f"import sys; open({str(out)!r}, 'a').write(sys.stdin.read()); sys.exit({code})"
    return [sys.executable, "-c", script]


def notified(tmp_path: Path, name: str = "notified.jsonl") -> list[dict[str, Any]]:
    path = tmp_path / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Later:
    """The launch loop's ``call_later`` as a list: a test runs the callbacks due (:meth:`run`)."""

    def __init__(self) -> None:
        self.due: list[tuple[float, Callable[[], None], SimpleNamespace]] = []

    def __call__(self, delay: float, callback: Callable[[], None]) -> SimpleNamespace:
        timer = SimpleNamespace(cancelled=False)
        timer.cancel = lambda: setattr(timer, "cancelled", True)
        self.due.append((delay, callback, timer))
        return timer

    def run(self) -> int:
        """Run the callbacks waiting now (not those they schedule); how many ran."""
        due, self.due = self.due, []
        ran = [callback for _, callback, timer in due if not timer.cancelled]
        for callback in ran:
            callback()
        return len(ran)


def view(tmp_path: Path) -> Any:
    """What the sink reads of a launch."""
    return SimpleNamespace(
        spec=SimpleNamespace(name="demo"), session_id="s-1", working_dir=tmp_path, state="waiting", call_later=Later()
    )


def feed(sink: NeedsYou, launch: Any, *states: str) -> None:
    for state in states:
        sink.event(StateChanged(state), launch)


# -- a real launch on the fake CLI ---------------------------------------------------------


def test_a_permission_prompt_is_announced_with_bell_and_notify_json(
    agents_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def factory(argv: Sequence[str], env: Mapping[str, str], cwd: Path, size: tuple[int, int]) -> ChildLike:
        return spawn_child(argv, env, cwd, size)

    sink = NeedsYou(notify=recorder(tmp_path), bell=True, pane=None, after=3600)
    launch, collected, _ = build(agents_dir, tmp_path, factory, sink, interactive=True)
    asked: list[str] = []
    try:
        launch.start()
        outcome = launch.run_turn("/tool", ask_permission=lambda r: asked.append(r.tool_name) or "once")
        assert outcome.end is not None and not outcome.end.is_error
    finally:
        launch.close(0)
    states = [e.state for e in collected.of(StateChanged)]  # type: ignore[attr-defined]
    assert "asking" in states and states.index("asking") > states.index("thinking")
    assert asked  # the person was asked while the state said so
    (payload,) = wait_for(lambda: notified(tmp_path), what="the notify command's JSON")
    assert payload == {
        "agent": "demo",
        "state": "asking",
        "session": launch.session_id,
        "working_dir": str(launch.working_dir),
        "pane": None,
        "reason": "a permission prompt or a question waits for you",
        "turn_seconds": payload["turn_seconds"],
    }
    assert isinstance(payload["turn_seconds"], float)
    assert capsys.readouterr().err.count("\a") == 1  # one bell; the quick turn's end (after=3600) rang none
    assert sink.running == []  # reaped by the session's end


# -- the rules, with plain events -------------------------------------------------------------


def test_waiting_is_announced_only_after_a_long_turn(tmp_path: Path) -> None:
    clock = Clock()
    sink = NeedsYou(notify=None, after=30, bell=False, pane=None, clock=clock)
    launch = view(tmp_path)
    feed(sink, launch, "starting", "waiting", "thinking")
    clock.t += 29
    feed(sink, launch, "waiting")
    assert sink.announced == []  # quick: the person is still looking
    feed(sink, launch, "thinking", "tool")
    clock.t += 31
    feed(sink, launch, "thinking", "waiting")
    (only,) = sink.announced
    assert only["state"] == "waiting" and only["turn_seconds"] == 31.0 and "31s" in only["reason"]


def test_the_same_state_is_not_announced_twice_within_the_debounce(tmp_path: Path) -> None:
    clock = Clock()
    sink = NeedsYou(notify=None, bell=False, pane=None, clock=clock, debounce=5)
    launch = view(tmp_path)
    feed(sink, launch, "thinking", "asking", "tool", "asking")
    clock.t += 6
    feed(sink, launch, "tool", "asking")
    assert [a["state"] for a in sink.announced] == ["asking", "asking"]


def test_a_missing_notify_command_is_reported_once_and_not_run_again(tmp_path: Path) -> None:
    reports: list[str] = []
    sink = NeedsYou(notify=[str(tmp_path / "no-such-notifier")], bell=False, pane=None, debounce=0, report=reports.append)
    launch = view(tmp_path)
    feed(sink, launch, "thinking", "asking", "tool", "asking", "tool", "asking")
    assert len(sink.announced) == 3
    assert len(reports) == 1 and "could not start" in reports[0] and "no-such-notifier" in reports[0]
    assert sink.running == []


def test_a_failing_notify_command_is_reported_once(tmp_path: Path) -> None:
    reports: list[str] = []
    sink = NeedsYou(notify=recorder(tmp_path, code=2), bell=False, pane=None, debounce=0, report=reports.append)
    launch = view(tmp_path)
    feed(sink, launch, "thinking", "asking")
    wait_for(lambda: sink.running[0][0].poll() is not None, what="the notify command to end")
    feed(sink, launch, "tool", "asking")  # reaped here: failed, reported, and not run again
    sink.event(SessionClosed(0), launch)
    assert reports == [f"notify command {sys.executable!r} failed (exit 2); not run again this session"]
    assert len(notified(tmp_path)) == 1


def test_a_hanging_notify_command_does_not_hold_the_launch_and_is_ended(tmp_path: Path) -> None:
    clock = Clock()
    reports: list[str] = []
    hang = [sys.executable, "-c", "import time; time.sleep(600)"]
    sink = NeedsYou(notify=hang, bell=False, pane=None, clock=clock, timeout=30, report=reports.append)
    launch = view(tmp_path)
    feed(sink, launch, "thinking", "asking")
    ((proc, _, _),) = sink.running
    assert proc.poll() is None  # the event returned while the command still runs: it was not waited for
    clock.t += 31
    feed(sink, launch, "tool")
    assert reports == [f"notify command {sys.executable!r} ran over 30s and was ended"]
    sink.event(SessionClosed(0), launch)
    assert proc.poll() is not None and sink.running == []


def test_a_notify_command_still_running_when_the_session_ends_is_ended_and_not_called_failed(tmp_path: Path) -> None:
    """On a loaded machine even ``python -c pass`` outlived the session's 1 s grace and was reported "failed (exit
    -9)" at the end (a full .ci/run at load 15): the session's end ended it, which is no failure of the command."""
    reports: list[str] = []
    slow = [sys.executable, "-c", "import time; time.sleep(600)"]
    sink = NeedsYou(notify=slow, bell=False, pane=None, report=reports.append)
    launch = view(tmp_path)
    feed(sink, launch, "thinking", "asking")
    ((proc, _, _),) = sink.running
    sink.close(grace=0.1)
    assert proc.poll() is not None and sink.running == [] and reports == []


def test_a_notify_command_that_never_reads_stdin_is_not_a_problem(tmp_path: Path) -> None:
    reports: list[str] = []
    sink = NeedsYou(notify=[sys.executable, "-c", "pass"], bell=False, pane=None, report=reports.append)
    launch = view(tmp_path)
    feed(sink, launch, "thinking", "asking")
    sink.event(SessionClosed(0), launch)
    assert reports == [] and sink.running == []


# -- how long it has been waiting -------------------------------------------------------------


def test_the_one_line_form_says_how_long_an_agent_waits() -> None:
    from datetime import UTC, datetime, timedelta

    since = datetime(2026, 12, 1, 11, 0, 0, tzinfo=UTC)
    record = {"agent": "demo", "state": "asking", "state_since": since.isoformat()}
    assert one_line(record, since + timedelta(seconds=75)) == "demo · ASKING: needs you · for 1m15s"
    assert one_line(record, since + timedelta(hours=2, minutes=3)) == "demo · ASKING: needs you · for 2h03m"
    assert one_line({**record, "state": "waiting"}, since + timedelta(seconds=9)) == "demo · waiting · for 9s"
    assert one_line({**record, "state": "thinking"}, since) == "demo · thinking"  # busy: no wait to report
    assert waited(record, None) == f"since {since.astimezone():%H:%M}"  # the pane title: a clock time stays true
    assert waited({**record, "state_since": "garbage"}, since) is None
    assert waited({**record, "stale": True}, since) is None


# -- settings -------------------------------------------------------------------------------


def test_notify_settings_come_from_agent_yaml_or_config_yaml(agents_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    assert load_settings(config).notify is None and load_settings(config).bell is True
    (config / "config.yaml").write_text("notify: notify-send 'agent needs you'\nnotify_after: 12\nbell: false\n")
    settings = load_settings(config)
    assert settings.notify == ("notify-send", "agent needs you") and settings.notify_after == 12.0 and not settings.bell
    write_agent(agents_dir, "pinger", {"provider": "fake", "notify": ["my-notifier", "--urgent"], "notify_after": 5})
    spec = load_agent(agents_dir, "pinger")
    assert spec.notify == ("my-notifier", "--urgent") and spec.notify_after == 5.0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("notify: []\n", "notify: the command is empty"),
        ("notify: 'unclosed \"quote'\n", "notify: cannot split"),
        ("notify_after: -1\n", "notify_after: expected seconds"),
        ("bell: maybe\n", "bell: expected true or false"),
        ("nosuch: 1\n", "nosuch: unknown key"),
        ("- a list\n", "expected a mapping"),
    ],
)
def test_a_bad_config_yaml_is_a_definition_error_naming_the_key(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(DefinitionError) as caught:
        load_settings(tmp_path)
    assert problem in str(caught.value) and "config.yaml" in str(caught.value)


def test_a_bad_notify_in_agent_yaml_is_a_definition_error(agents_dir: Path) -> None:
    write_agent(agents_dir, "bad", {"provider": "fake", "notify": [1, 2]})
    with pytest.raises(DefinitionError) as caught:
        load_agent(agents_dir, "bad")
    assert "notify" in str(caught.value)


# -- desktop notifications (notify-send) ----------------------------------------------------------


def fake_notify_send(tmp_path: Path, code: int = 0, sleep: float = 0) -> Path:
    """A ``notify-send`` in its own folder that appends its argv (JSON, a line per run) to ``notify-send.jsonl``."""
    folder = tmp_path / "desktop-bin"
    folder.mkdir(exist_ok=True)
    script = folder / "notify-send"
    out = tmp_path / "notify-send.jsonl"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys, time\ntime.sleep({sleep})\n"
        f"open({str(out)!r}, 'a').write(json.dumps(sys.argv) + '\\n')\nsys.exit({code})\n"
    )
    script.chmod(0o755)
    return script


def desktop_runs(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "notify-send.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_notify_send_shows_asking_and_each_later_stall_once_per_change(tmp_path: Path) -> None:
    clock = Clock()
    fake = fake_notify_send(tmp_path)
    sink = NeedsYou(notify=None, bell=False, pane=None, clock=clock, desktop=str(fake), after=30, timeout=10_000)
    launch = view(tmp_path)
    feed(sink, launch, "thinking", "asking", "asking")  # the same state twice: one change
    clock.t += 60
    feed(sink, launch, "asking")  # said again after the debounce: still no change, nothing shown
    feed(sink, launch, "tool", "stalled")
    clock.t += 10
    feed(sink, launch, "thinking", "stalled", "stalled")  # stalled again, after progress: a second change
    clock.t += 10
    feed(sink, launch, "waiting")  # the turn took over 30 s: your turn (normal urgency)
    runs = wait_for(lambda: len(r := desktop_runs(tmp_path)) >= 4 and r, what="four notify-send runs")
    sink.event(SessionClosed(0), launch)  # collects them
    assert sink.running == [] and len(desktop_runs(tmp_path)) == 4
    runs.sort(key=lambda r: ["demo needs you", "demo stalled", "demo waiting"].index(r[4]))  # they run side by side
    head = [str(fake), "--app-name=agentlaunch"]
    assert [r[:5] for r in runs] == [
        [*head, "--urgency=critical", "--", "demo needs you"],
        [*head, "--urgency=critical", "--", "demo stalled"],
        [*head, "--urgency=critical", "--", "demo stalled"],
        [*head, "--urgency=normal", "--", "demo waiting"],
    ]
    assert runs[0][5] == f"a permission prompt or a question waits for you\n{tmp_path}"
    assert runs[1][5].startswith("its turn has heard nothing from the CLI")
    assert [p["state"] for p in sink.announced] == ["asking", "stalled", "stalled", "waiting"]


def test_notify_send_never_holds_the_launch_and_a_failing_one_is_dropped_silently(tmp_path: Path) -> None:
    clock = Clock()
    reports: list[str] = []
    slow = fake_notify_send(tmp_path, sleep=600)
    sink = NeedsYou(notify=None, bell=False, pane=None, clock=clock, desktop=str(slow), report=reports.append)
    feed(sink, view(tmp_path), "thinking", "asking")
    ((proc, _, desktop),) = sink.running
    assert desktop and proc.poll() is None  # the event returned while notify-send still runs
    sink.event(SessionClosed(0), view(tmp_path))
    assert proc.poll() is not None and sink.running == [] and reports == []

    failing = fake_notify_send(tmp_path, code=1)  # no notification daemon, say
    sink = NeedsYou(notify=None, bell=False, pane=None, clock=clock, desktop=str(failing), debounce=0, report=reports.append)
    feed(sink, view(tmp_path), "thinking", "asking")
    wait_for(lambda: sink.running[0][0].poll() is not None, what="notify-send to fail")
    feed(sink, view(tmp_path), "thinking", "asking", "thinking", "asking")
    sink.close()
    assert len(desktop_runs(tmp_path)) == 1 and reports == []  # not run again; nothing said (the bell still rings)


def test_a_notify_command_replaces_notify_send_and_the_setting_turns_it_off(tmp_path: Path, agents_dir: Path) -> None:
    from agentlaunch.definitions.settings import Settings
    from agentlaunch.launch.build import needs_you_sink
    from agentlaunch.live.needs_you import desktop_notifier

    fake = fake_notify_send(tmp_path)
    env = {"PATH": str(fake.parent), "DISPLAY": ":99"}
    assert desktop_notifier(True, env) == str(fake)
    assert desktop_notifier(False, env) is None  # desktop_notify: false
    assert desktop_notifier(True, {"PATH": str(fake.parent)}) is None  # no desktop session (ssh, a console)
    assert desktop_notifier(True, {"PATH": str(tmp_path), "WAYLAND_DISPLAY": "wayland-0"}) is None  # none on PATH

    spec = load_agent(agents_dir, "demo")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
        patch.setenv("DISPLAY", ":99")
        assert needs_you_sink(spec, Settings()).desktop == str(fake)  # type: ignore[attr-defined]
        assert needs_you_sink(spec, Settings(desktop_notify=False)).desktop is None  # type: ignore[attr-defined]
        configured = needs_you_sink(spec, Settings(notify=("my-notifier",)))
        assert configured.desktop is None and configured.notify == ["my-notifier"]  # type: ignore[attr-defined]

    (tmp_path / "config.yaml").write_text("desktop_notify: false\n")
    assert load_settings(tmp_path).desktop_notify is False and load_settings(tmp_path / "none").desktop_notify is True
    (tmp_path / "config.yaml").write_text("desktop_notify: sometimes\n")
    with pytest.raises(DefinitionError, match="config.yaml: desktop_notify: expected true or false"):
        load_settings(tmp_path)


def test_a_chat_waiting_on_a_permission_prompt_shows_one_desktop_notification(tmp_path: Path, agents_dir: Path) -> None:
    import pexpect

    fake = fake_notify_send(tmp_path)
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}", "DISPLAY": ":99"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agentlaunch", "run", "demo", "--agents-dir", str(agents_dir)],
        env=env,
        cwd=str(tmp_path),
        dimensions=(40, 120),
        encoding="utf-8",
        timeout=30,
    )
    try:
        child.expect("› ")
        child.sendline("/tool")
        child.expect(r"\[n\] deny: ")
        (argv,) = wait_for(lambda: desktop_runs(tmp_path), what="notify-send's run")
        assert argv[:5] == [str(fake), "--app-name=agentlaunch", "--urgency=critical", "--", "demo needs you"]
        assert argv[5].startswith("a permission prompt or a question waits for you\n")  # and the working directory
        child.sendline("y")
        child.expect("The tool was allowed.")
        child.expect("› ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0 and len(desktop_runs(tmp_path)) == 1


def test_an_interactive_launch_flags_the_pane_before_its_status_record_names_the_state(
    agents_dir: Path, isolated_home: Path
) -> None:
    # A reader that sees "stalled" or "asking" in `status` finds the pane's flag already up (the sinks run in order).
    from agentlaunch.launch.build import build_launch
    from agentlaunch.launch.options import LaunchOptions
    from agentlaunch.live.status import StatusWriter

    launch = build_launch(LaunchOptions(agent="demo", agents_dir=agents_dir, interactive=True), lambda meter: [])
    try:
        kinds = [type(sink) for sink in launch.sinks]
        assert kinds.index(NeedsYou) < kinds.index(StatusWriter), kinds
    finally:
        launch.close(0)


def test_one_place_decides_needs_you_and_the_alarms_are_its_states_but_retrying() -> None:
    from agentlaunch.fleet import states
    from agentlaunch.live.needs_you import ALARMS

    assert set(ALARMS) == set(states.ANNOUNCED) == set(states.NEEDS_YOU) - {"retrying"}
    assert states.needs_you("paused: budget") and states.needs_you("retrying") and not states.needs_you("waiting")
    assert frozenset(states.NEEDS_YOU) == states.URGENT
