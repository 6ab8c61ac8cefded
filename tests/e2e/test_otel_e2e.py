"""Export on (AGENTLAUNCH_OTEL=1) with the real CLIs against the fake APIs: what the receiver decodes equals the store.

A Claude tool turn (two calls), a Codex turn and a Gemini tool turn; the
receiver on 127.0.0.1 decodes with the official opentelemetry-proto messages.
Then the collector goes down for two turns and ``agentlaunch usage export``
sends every call exactly once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi.anthropic import ApiUsage, FakeAnthropic, text_reply, tool_reply
from agentlaunch.usage.otel.queue import ExportQueue
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from testbed.otlp_receiver import OtlpReceiver
from tests.e2e.conftest import RunCli
from tests.e2e.test_run_codex_gemini import Provider, provider  # noqa: F401 (the fixture)
from tests.support.cli_runs import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
PROVIDER_NAMES = {"claude": "anthropic", "codex": "openai", "gemini": "gcp.gemini"}


EXIT_WAIT = "60"
"""The launch's wait at its exit for the export (2 s by default): what these tests read is everything sent before the
exit, and on a loaded machine (the receiver a thread of the test's process) 2 s ran out once in a full run."""


def stored_calls(home: Path) -> tuple[list[CallRecord], str]:
    with Store.open(home / "state" / "usage.sqlite3") as store:
        calls = [c for s in store.list_sessions() for c in store.calls_for_session(s.session_id)]
    with ExportQueue(home / "state" / "usage.sqlite3") as queue:
        assert queue.pending_count() == 0, "every call accepted and marked"
        return calls, queue.store_id


def assert_records_equal_the_store(receiver: OtlpReceiver, home: Path, provider_name: str, workdir: Path) -> None:
    calls, store_id = stored_calls(home)
    assert calls
    records = {r["attributes"]["log.record.uid"]: r["attributes"] for r in receiver.log_records()}
    assert len(records) == len(calls) == len(receiver.log_records())  # each once
    for call in calls:
        a = records[f"{store_id}-{call.id}"]
        u = call.usage
        expected: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": PROVIDER_NAMES[provider_name],
            "gen_ai.conversation.id": call.session_id,
            "gen_ai.usage.input_tokens": u.input + u.cache_write + u.cache_read,
            "gen_ai.usage.cache_read.input_tokens": u.cache_read,
            "gen_ai.usage.cache_creation.input_tokens": u.cache_write,
            "gen_ai.usage.output_tokens": u.output,
            "gen_ai.usage.reasoning.output_tokens": u.reasoning,
            "agentlaunch.usage.uncached_input_tokens": u.input,
            "agentlaunch.agent.name": call.agent,
            "agentlaunch.project": workdir.name,
            "agentlaunch.turn": call.turn,
        }
        for key, value in expected.items():
            assert a[key] == value, key
        if call.model_requested:
            assert a["gen_ai.request.model"] == call.model_requested
        if call.model_reported:
            assert a["gen_ai.response.model"] == call.model_reported
        if call.cost_usd is None:
            assert "agentlaunch.cost.usd" not in a
        else:
            assert a["agentlaunch.cost.usd"] == pytest.approx(call.cost_usd)
    # Metric points are cumulative (a batch sent again repeats the same totals): the latest point of each series
    # is what a backend shows, and it adds up to the store.
    token_sums: dict[str, int] = {}
    for attrs, point in receiver.latest_points("gen_ai.client.token.usage"):
        assert attrs["gen_ai.provider.name"] == PROVIDER_NAMES[provider_name]
        token_sums[attrs["gen_ai.token.type"]] = token_sums.get(attrs["gen_ai.token.type"], 0) + int(point.sum)
    assert token_sums == {"input": sum(c.usage.total_input for c in calls), "output": sum(c.usage.output for c in calls)}
    priced = [c.cost_usd for c in calls if c.cost_usd is not None]
    cost = sum(p.as_double for _a, p in receiver.latest_points("agentlaunch.cost.usage"))
    assert cost == pytest.approx(sum(priced)) if priced else not receiver.metric_points("agentlaunch.cost.usage")


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_a_claude_tool_turn_arrives_call_by_call_as_stored(
    anthropic: FakeAnthropic,
    run_claude: RunCli,
    claude_agent: str,
    isolated_home: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    protocol: str,
) -> None:
    anthropic.push(
        tool_reply("Bash", {"command": "echo hi", "description": "Print hi"}, ApiUsage(20, 3000, 10000, 30), text="Running it."),
        text_reply("It printed hi.", ApiUsage(8, 150, 13000, 9)),
    )
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("AGENTLAUNCH_OTEL", "1")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        monkeypatch.setenv("AGENTLAUNCH_OTEL_EXIT_WAIT", EXIT_WAIT)
        result = run_claude("run", claude_agent, "run echo hi")
        assert result.returncode == 0, result.stderr.decode()
        assert b"telemetry" not in result.stderr
        assert_records_equal_the_store(receiver, isolated_home, "claude", workdir)
        calls, _ = stored_calls(isolated_home)
    assert len(calls) == 2 and all(c.cost_usd is not None for c in calls)


def test_a_codex_and_a_gemini_tool_turn_arrive_as_stored(
    provider: Provider,  # noqa: F811 (the fixture imported above)
    workdir: Path,
    isolated_home: Path,
) -> None:
    (workdir / "hello.txt").write_text("hi there\n")
    provider.push_tool_turn()
    with OtlpReceiver() as receiver:
        env = {**provider.env, "AGENTLAUNCH_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        env["AGENTLAUNCH_OTEL_EXIT_WAIT"] = EXIT_WAIT
        result = run_cli("run", "planner", "read hello.txt", cwd=workdir, env=env, timeout=240)
        assert result.returncode == 0, result.stderr.decode()
        assert b"telemetry" not in result.stderr
        assert_records_equal_the_store(receiver, isolated_home, provider.name, workdir)


def test_collector_down_for_two_claude_turns_then_usage_export_sends_each_call_once(
    anthropic: FakeAnthropic,
    run_claude: RunCli,
    claude_agent: str,
    isolated_home: Path,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("AGENTLAUNCH_OTEL", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", dead)
    for text in ("first", "second"):
        anthropic.push(text_reply(text, ApiUsage(5, 100, 2000, 3)))
        result = run_claude("run", claude_agent, f"say {text}")
        assert result.returncode == 0, result.stderr.decode()
        assert b"1 call of this session not exported" in result.stderr
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        done = run_claude("usage", "export")
        assert done.returncode == 0, done.stderr.decode()
        assert b"exported 2 calls" in done.stdout
        assert_records_equal_the_store(receiver, isolated_home, "claude", workdir)
