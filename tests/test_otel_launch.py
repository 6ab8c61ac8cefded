"""A launch with export on (AGENTLAUNCH_OTEL=1), on the offline fake provider, through a real subprocess.

Pinned: the call arrives with the store's figures (the fake provider is
unpriced: no cost anywhere, never $0); a collector that is down, answers 503
or 400, or never answers leaves the launch's exit code and answer unchanged,
the call stored and unexported, and one message on stderr; a later launch
sends what an earlier one left; bad variables give one message and no
failure; nothing of the exporter is imported before the CLI runs.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.usage.otel.queue import ExportQueue
from agentlaunch.usage.store import Store
from testbed.otlp_receiver import OtlpReceiver
from tests.support.cli_runs import run_cli

ANSWER = b'You said: "hello"'


def launch(agents_dir: Path, env: dict[str, str], prompt: str = "hello") -> subprocess.CompletedProcess[bytes]:
    return run_cli("run", "demo", prompt, "--agents-dir", str(agents_dir), env={"AGENTLAUNCH_OTEL": "1", **env})


def store(home: Path) -> Path:
    return home / "state" / "usage.sqlite3"


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_a_launchs_call_arrives_as_stored_and_unpriced_has_no_cost(agents_dir: Path, isolated_home: Path, protocol: str) -> None:
    with OtlpReceiver() as receiver:
        # An exit wait that a loaded machine cannot run out before the export (as the twenty agents' below): what is
        # pinned is what arrives; the wait's bound has tests of its own (the collector in trouble)
        done = launch(
            agents_dir,
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
                "OTEL_SERVICE_NAME": "team-agents",
                "AGENTLAUNCH_OTEL_EXIT_WAIT": "30",
            },
        )
        assert done.returncode == 0, done.stderr
        records = receiver.log_records()
        metric_names = {m.name for m in receiver.metrics()}
    assert ANSWER in done.stdout and b"telemetry" not in done.stderr
    with Store.open(store(isolated_home)) as s:
        (session,) = s.list_sessions()
        (call,) = s.calls_for_session(session.session_id)
    assert call.cost_usd is None  # the fake provider is unpriced
    (record,) = records
    a = record["attributes"]
    assert record["resource"]["service.name"] == "team-agents"
    assert a["gen_ai.conversation.id"] == session.session_id
    assert a["gen_ai.usage.input_tokens"] == call.usage.total_input
    assert a["gen_ai.usage.cache_creation.input_tokens"] == call.usage.cache_write
    assert a["gen_ai.usage.cache_read.input_tokens"] == call.usage.cache_read
    assert a["gen_ai.usage.output_tokens"] == call.usage.output
    assert a["agentlaunch.agent.name"] == "demo" and a["agentlaunch.agent.id"] == "demo"
    assert a["gen_ai.request.model"] == call.model_requested
    assert "agentlaunch.cost.usd" not in a and "agentlaunch.cost.usage" not in metric_names
    assert "gen_ai.client.token.usage" in metric_names
    with ExportQueue(store(isolated_home)) as queue:
        assert queue.pending_count() == 0


@pytest.mark.parametrize("mode", ["down", "503", "400", "hang"])
def test_a_collector_in_trouble_changes_nothing_of_the_launch_and_the_call_stays_unexported(
    agents_dir: Path, isolated_home: Path, mode: str
) -> None:
    with OtlpReceiver("ok" if mode == "down" else mode) as receiver:
        url = dead_url() if mode == "down" else receiver.url
        # a refusal (400) ends the exporter at once: the wait is long enough for it to start under load (at 0.5 s,
        # "had not started within the exit wait", once in a full run at load 10); the others use all of theirs
        wait = "20" if mode == "400" else "0.5"
        done = launch(agents_dir, {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "AGENTLAUNCH_OTEL_EXIT_WAIT": wait})
        assert done.returncode == 0, done.stderr
    assert ANSWER in done.stdout  # the answer and the exit code are those of a launch without export
    err = done.stderr.decode()
    lines = [line for line in err.splitlines() if "telemetry" in line]
    assert len(lines) == 1, err  # said once
    assert "1 call of this session not exported" in lines[0] and "agentlaunch usage export" in lines[0]
    if mode == "400":
        assert "refused" in lines[0] and "gen_ai.x is not allowed" in lines[0]
    with Store.open(store(isolated_home)) as s:
        assert len(s.calls_for_session(s.list_sessions()[0].session_id)) == 1  # stored all the same
    with ExportQueue(store(isolated_home)) as queue:
        assert queue.pending_count() == 1
        assert len(queue.claim(10)) == 1  # not left claimed: the next sender takes it at once


def test_a_later_launch_sends_what_an_earlier_one_left(agents_dir: Path, isolated_home: Path) -> None:
    down = launch(agents_dir, {"OTEL_EXPORTER_OTLP_ENDPOINT": dead_url()})
    assert down.returncode == 0 and b"not exported" in down.stderr
    with OtlpReceiver() as receiver:
        done = launch(agents_dir, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "AGENTLAUNCH_OTEL_EXIT_WAIT": "30"})
        assert done.returncode == 0, done.stderr
        uids = [r["attributes"]["log.record.uid"] for r in receiver.log_records()]
        sessions = {r["attributes"]["gen_ai.conversation.id"] for r in receiver.log_records()}
    assert len(uids) == len(set(uids)) == 2 and len(sessions) == 2
    with ExportQueue(store(isolated_home)) as queue:
        assert queue.pending_count() == 0


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_RESOURCE_ATTRIBUTES", "=nokey"),
    ],
)
def test_a_bad_variable_gives_one_message_and_never_fails_the_launch(
    agents_dir: Path, isolated_home: Path, variable: str, value: str
) -> None:
    done = launch(agents_dir, {variable: value})
    assert done.returncode == 0, done.stderr
    assert ANSWER in done.stdout
    lines = [line for line in done.stderr.decode().splitlines() if "telemetry" in line]
    assert len(lines) == 1 and variable in lines[0] and "no call was exported" in lines[0]
    with ExportQueue(store(isolated_home)) as queue:
        assert queue.pending_count() == 1


def test_twenty_agents_exporting_at_once_lose_nothing_and_send_nothing_twice(agents_dir: Path, isolated_home: Path) -> None:
    import shutil

    names = [f"agent-{i:02d}" for i in range(20)]
    for name in names:
        shutil.copytree(agents_dir / "demo", agents_dir / name)
    with OtlpReceiver() as receiver:
        env = _env({"AGENTLAUNCH_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "AGENTLAUNCH_OTEL_EXIT_WAIT": "30"})
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "agentlaunch", "run", name, "hello", "--agents-dir", str(agents_dir)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for name in names
        ]
        errors = [proc.communicate(timeout=240)[1] for proc in procs]
        assert [proc.returncode for proc in procs] == [0] * 20, errors
        records = receiver.log_records()
    assert not [e for e in errors if b"telemetry" in e], errors
    uids = [r["attributes"]["log.record.uid"] for r in records]
    assert len(uids) == len(set(uids)) == 20
    assert sorted(r["attributes"]["agentlaunch.agent.name"] for r in records) == names
    with ExportQueue(store(isolated_home)) as queue:
        assert queue.pending_count() == 0


def test_export_off_by_default_sends_nothing_and_says_nothing(agents_dir: Path, isolated_home: Path) -> None:
    with OtlpReceiver() as receiver:
        done = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert done.returncode == 0 and receiver.received == []
    assert b"telemetry" not in done.stderr


def test_nothing_of_the_exporter_is_imported_before_the_cli_runs(agents_dir: Path, isolated_home: Path) -> None:
    # build_launch wires the sink; only a launch's first prompt starts the thread that imports the exporter.
    code = f"""
import sys
from pathlib import Path
from agentlaunch.launch.build import build_launch
from agentlaunch.launch.options import LaunchOptions
from agentlaunch.live.view import HeadlessView
launch = build_launch(LaunchOptions(agent="demo", agents_dir=Path({str(agents_dir)!r})), lambda m: [HeadlessView(m, quiet=True)])
names = [type(s).__name__ for s in launch.sinks]
loaded = sorted(m for m in sys.modules if m.startswith("agentlaunch.usage.otel.") and m != "agentlaunch.usage.otel.sink")
print(names[-1], loaded, "http.client" in sys.modules or "google.protobuf" in sys.modules)
launch.close(0)
"""
    done = subprocess.run([sys.executable, "-c", code], env=_env({"AGENTLAUNCH_OTEL": "1"}), capture_output=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == ["OtelExportSink", "[]", "False"]


def _env(extra: dict[str, str]) -> dict[str, str]:
    import os

    return {**os.environ, **extra}


def test_a_bug_in_the_exporter_is_one_line_at_the_end_never_a_traceback(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from agentlaunch.sinks import SessionClosed, StateChanged
    from agentlaunch.usage.otel import export as otel_export
    from agentlaunch.usage.otel.sink import OtelExportSink

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(otel_export.Exporter, "drain", broken)
    monkeypatch.setenv("AGENTLAUNCH_OTEL", "1")
    with Store.open(store(isolated_home)):
        pass
    sink = OtelExportSink(store(isolated_home), "demo")
    view = SimpleNamespace(session_id="s-1")
    sink.event(StateChanged("thinking"), view)  # type: ignore[arg-type]
    sink.event(SessionClosed(0), view)  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.count("agentlaunch: telemetry:") == 1 and "RuntimeError: a bug" in err and "Traceback" not in err


def test_a_chat_exports_each_call_while_the_session_goes_on(agents_dir: Path, isolated_home: Path) -> None:
    import pexpect

    from tests.support.waits import wait_for

    with OtlpReceiver() as receiver:
        env = _env({"AGENTLAUNCH_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        child = pexpect.spawn(
            sys.executable,
            ["-m", "agentlaunch", "run", "demo", "--agents-dir", str(agents_dir)],
            env=env,
            cwd=str(agents_dir.parent),
            dimensions=(40, 120),
            encoding="utf-8",
            timeout=30,
        )
        try:
            child.expect("› ")
            child.sendline("hello there")
            child.expect('You said: "hello there"')
            child.expect("› ")
            # The session is still open: the first call has already left, not saved up for the exit.
            wait_for(lambda: len(receiver.log_records()) == 1, timeout=20, what="the first call at the receiver")
            child.sendline("second")
            child.expect("turn 2.")
            child.expect("› ")
            wait_for(lambda: len(receiver.log_records()) == 2, timeout=20, what="the second call at the receiver")
            child.sendeof()
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
        turns = sorted(r["attributes"]["agentlaunch.turn"] for r in receiver.log_records())
    assert turns == [1, 2]
    assert "telemetry" not in (child.before or "")


def test_otel_true_in_config_yaml_turns_export_on_and_the_variable_wins(agents_dir: Path, isolated_home: Path) -> None:
    import os

    config = Path(os.environ["AGENTLAUNCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text("otel: true\n")
    with OtlpReceiver() as receiver:
        plain = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "AGENTLAUNCH_OTEL_EXIT_WAIT": "30"}  # as above: a loaded machine
        on = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), env=plain)
        assert on.returncode == 0, on.stderr
        assert len(receiver.log_records()) == 1
        off = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), env={**plain, "AGENTLAUNCH_OTEL": "0"})
        assert off.returncode == 0 and len(receiver.log_records()) == 1  # the variable said off: nothing more sent
    (config / "config.yaml").write_text("otel: maybe\n")
    bad = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir))
    assert bad.returncode == 3 and b"config.yaml: otel: expected true or false" in bad.stderr
