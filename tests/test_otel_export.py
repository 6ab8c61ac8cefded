"""Exporting stored calls over OTLP/HTTP: against a receiver on 127.0.0.1 that decodes with the official messages.

What is pinned: every call arrives with the store's figures under the GenAI
convention's names (protobuf and JSON alike); a call is marked exported only
once accepted; a receiver that is down, answers 503 or 400, or never answers
leaves the call unexported (and a 400 is not retried); catch-up sends exactly
what is missing; many senders at once send each call once.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.token_usage import Usage
from agentlaunch.usage.otel import export as otel_export
from agentlaunch.usage.otel.config import OtelConfig, read_config
from agentlaunch.usage.otel.export import Exporter
from agentlaunch.usage.otel.queue import ExportQueue
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from testbed.otlp_receiver import OtlpReceiver
from tests.support.cli_runs import run_cli_inprocess

AT = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def fill(store_path: Path, n: int = 2, *, priced: bool = True, session: str = "sess-1") -> list[CallRecord]:
    """``n`` calls of one claude session in the store, the first priced (when ``priced``)."""
    calls = []
    with Store.open(store_path) as store:
        store.start_session(
            session, agent="reviewer", provider="claude", working_dir="/home/x/projects/shop", model="claude-sonnet-4-5"
        )
        for i in range(n):
            record = CallRecord(
                agent="reviewer",
                provider="claude",
                session_id=session,
                turn=1,
                model_requested="claude-sonnet-4-5",
                model_reported="claude-sonnet-4-5-20250929",
                usage=Usage(input=10 + i, cache_write=200, cache_read=3000, output=40 + i, reasoning=0),
                cost_usd=0.0123 if priced and i == 0 else None,
                price_key="genai-prices" if priced and i == 0 else None,
                at=AT.replace(second=i),
            )
            store.record_call(record)
            calls.append(record)
    return calls


def config_for(url: str, protocol: str = "http/protobuf", **extra: str) -> OtelConfig:
    return read_config(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2000",
            **extra,
        }
    )


def store_path(home: Path) -> Path:
    return home / "state" / "usage.sqlite3"


def no_wait(seconds: float) -> bool:
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_each_call_arrives_with_the_stores_figures_under_the_genai_names(isolated_home: Path, protocol: str) -> None:
    calls = fill(store_path(isolated_home))
    with OtlpReceiver() as receiver, ExportQueue(store_path(isolated_home)) as queue:
        config = config_for(receiver.url, protocol, OTEL_RESOURCE_ATTRIBUTES="team=infra,deployment.environment=dev")
        queue.note_agent_id("sess-1", "reviewer-v2")
        result = Exporter(queue, config, wait=no_wait).drain()
        assert result.exported == 2 and not result.stopped
        assert queue.pending_count() == 0
        records = receiver.log_records()
        store_id = queue.store_id
    assert {r["resource"]["team"] for r in records} == {"infra"}
    resource = records[0]["resource"]
    assert resource["service.name"] == "agentlaunch" and resource["host.name"] == socket.gethostname()
    assert "user.name" in resource and resource["deployment.environment"] == "dev"
    assert len(records) == 2
    for record, call, rowid in zip(sorted(records, key=lambda r: r["time"]), calls, (1, 2), strict=True):
        a = record["attributes"]
        u = call.usage
        assert record["event_name"] == "gen_ai.client.inference.operation.details"
        assert record["time"] == int(call.at.timestamp() * 1e9)
        assert a["gen_ai.provider.name"] == "anthropic" and a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == "claude-sonnet-4-5" and a["gen_ai.response.model"] == "claude-sonnet-4-5-20250929"
        assert a["gen_ai.conversation.id"] == "sess-1"
        assert a["gen_ai.usage.input_tokens"] == u.input + u.cache_write + u.cache_read  # the convention: cached included
        assert a["gen_ai.usage.cache_read.input_tokens"] == u.cache_read
        assert a["gen_ai.usage.cache_creation.input_tokens"] == u.cache_write
        assert a["agentlaunch.usage.uncached_input_tokens"] == u.input
        assert a["gen_ai.usage.output_tokens"] == u.output
        assert a["agentlaunch.agent.name"] == "reviewer" and a["agentlaunch.agent.id"] == "reviewer-v2"
        assert a["agentlaunch.project"] == "shop"
        assert a["log.record.uid"] == a["agentlaunch.call.id"] == f"{store_id}-{rowid}"
        if call.cost_usd is None:
            assert "agentlaunch.cost.usd" not in a  # unpriced: omitted, never 0
        else:
            assert a["agentlaunch.cost.usd"] == pytest.approx(call.cost_usd)
    usage = {a["gen_ai.token.type"]: p for a, p in receiver.metric_points("gen_ai.client.token.usage")}
    assert set(usage) == {"input", "output"}
    assert usage["input"].sum == sum(c.usage.total_input for c in calls) and usage["input"].count == 2
    assert usage["output"].sum == sum(c.usage.output for c in calls)
    assert list(usage["input"].explicit_bounds)[:3] == [1, 4, 16] and sum(usage["input"].bucket_counts) == 2
    kinds = {a["agentlaunch.token.type"]: p.as_int for a, p in receiver.metric_points("agentlaunch.token.usage")}
    assert kinds == {"uncached_input": 21, "cache_write": 400, "cache_read": 6000, "output": 81, "reasoning": 0}
    cost = receiver.metric_points("agentlaunch.cost.usage")
    assert [p.as_double for _a, p in cost] == [pytest.approx(0.0123)]  # the unpriced call adds nothing, not $0
    for metric in receiver.metrics():
        kind = metric.WhichOneof("data")
        assert getattr(metric, kind).aggregation_temporality == 2  # cumulative: a batch sent again changes nothing
    assert {m.name: m.unit for m in receiver.metrics()} == {
        "gen_ai.client.token.usage": "{token}",
        "agentlaunch.token.usage": "{token}",
        "agentlaunch.cost.usage": "USD",
    }


def test_an_unpriced_batch_has_no_cost_metric_at_all(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 1, priced=False)
    with OtlpReceiver() as receiver, ExportQueue(store_path(isolated_home)) as queue:
        Exporter(queue, config_for(receiver.url), wait=no_wait).drain()
        assert "agentlaunch.cost.usage" not in {m.name for m in receiver.metrics()}
        assert "agentlaunch.cost.usd" not in receiver.log_records()[0]["attributes"]


def test_headers_and_gzip_reach_the_receiver(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 1)
    with OtlpReceiver() as receiver, ExportQueue(store_path(isolated_home)) as queue:
        config = config_for(
            receiver.url,
            OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer%20abc,x-team=infra",
            OTEL_EXPORTER_OTLP_COMPRESSION="gzip",
        )
        Exporter(queue, config, wait=no_wait).drain()
        assert queue.pending_count() == 0
        headers = receiver.received[0].headers
    assert headers["Authorization"] == "Bearer abc" and headers["x-team"] == "infra"
    assert headers["Content-Encoding"] == "gzip"


@pytest.mark.parametrize("mode", ["down", "503", "400", "hang"])
def test_a_call_the_receiver_did_not_accept_stays_unexported(isolated_home: Path, mode: str) -> None:
    fill(store_path(isolated_home), 2)
    with OtlpReceiver("ok" if mode == "down" else mode) as receiver, ExportQueue(store_path(isolated_home)) as queue:
        url = f"http://127.0.0.1:{free_port()}" if mode == "down" else receiver.url
        extra = {"OTEL_EXPORTER_OTLP_TIMEOUT": "300"} if mode == "hang" else {}
        exporter = Exporter(queue, config_for(url, **extra), wait=no_wait, attempts=3)
        result = exporter.drain()
        assert result.stopped and result.exported == 0
        assert queue.pending_count() == 2
        tries = len(receiver.received)
    if mode == "down":
        assert "connection refused" in result.problem
    elif mode == "503":
        assert tries == 3  # bounded retries
        assert "503" in result.problem and "collector overloaded" in result.problem
    elif mode == "400":
        assert tries == 1  # a refusal is not retried
        assert (
            exporter.fatal and "400" in exporter.fatal and "gen_ai.x is not allowed" in exporter.fatal
        )  # the collector's message
    else:
        assert "no answer" in result.problem
    # Released: another sender can take them at once.
    with ExportQueue(store_path(isolated_home)) as other:
        assert len(other.claim(10)) == 2


def test_a_partial_success_counts_as_accepted_and_its_message_is_kept(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 1)
    with OtlpReceiver("partial") as receiver, ExportQueue(store_path(isolated_home)) as queue:
        exporter = Exporter(queue, config_for(receiver.url), wait=no_wait)
        exporter.drain()
        assert queue.pending_count() == 0  # never retried (the spec says so)
    assert any("one point was too old" in n for n in exporter.notes)


def test_down_for_two_turns_then_usage_export_sends_each_call_exactly_once(isolated_home: Path) -> None:
    path = store_path(isolated_home)
    dead = f"http://127.0.0.1:{free_port()}"
    for session in ("turn-1", "turn-2"):
        fill(path, 2, session=session)
        with ExportQueue(path) as queue:
            assert Exporter(queue, config_for(dead), wait=no_wait, attempts=1).drain().stopped
    with OtlpReceiver() as receiver:
        done = run_cli_inprocess("usage", "export", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert done.returncode == 0, done.stderr
        assert b"exported 4 calls" in done.stdout
        again = run_cli_inprocess("usage", "export", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert again.returncode == 0 and b"0 calls to export" in again.stdout
        uids = [r["attributes"]["log.record.uid"] for r in receiver.log_records()]
        histogram_calls = sum(
            p.count for a, p in receiver.metric_points("gen_ai.client.token.usage") if a["gen_ai.token.type"] == "input"
        )
    assert len(uids) == len(set(uids)) == 4
    assert histogram_calls == 4


def test_usage_export_against_a_refusing_collector_exits_1_with_its_message(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 1)
    with OtlpReceiver("400") as receiver:
        done = run_cli_inprocess("usage", "export", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    assert done.returncode == 1
    err = done.stderr.decode()
    assert "1 not exported" in err and "gen_ai.x is not allowed" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url", "is not an http:// or https:// URL"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://host:99999", "is not a URL"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "Authorization Bearer x", "is not key=value"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTLP/HTTP only"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/xml", "use http/protobuf or http/json"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon", "positive number of milliseconds"),
    ],
)
def test_usage_export_with_a_bad_variable_says_which_one(isolated_home: Path, variable: str, value: str, said: str) -> None:
    done = run_cli_inprocess("usage", "export", env={variable: value})
    assert done.returncode == 3
    err = done.stderr.decode()
    assert variable in err and said in err and "Traceback" not in err


def test_an_https_endpoint_without_its_certificate_is_a_tls_refusal_not_a_retry(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 1)
    with OtlpReceiver() as receiver, ExportQueue(store_path(isolated_home)) as queue:
        # A plain-HTTP receiver answers the TLS handshake with garbage: a TLS failure, never retried.
        url = receiver.url.replace("http://", "https://")
        exporter = Exporter(queue, config_for(url), wait=no_wait)
        result = exporter.drain()
    assert result.stopped and exporter.fatal and "TLS" in exporter.fatal


def test_twenty_senders_at_once_send_every_call_exactly_once(isolated_home: Path) -> None:
    path = store_path(isolated_home)
    with Store.open(path) as store:
        store.start_session("many", agent="a", provider="codex", working_dir="/w")
        store._bulk_insert_calls(
            [CallRecord(agent="a", provider="codex", session_id="many", usage=Usage(input=i, output=1)) for i in range(1000)]
        )
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "agentlaunch", "usage", "export"],
                env={**_environ(), **env},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for _ in range(20)
        ]
        for proc in procs:
            proc.wait(timeout=120)
        with ExportQueue(path) as queue:
            assert queue.pending_count() == 0
        uids = [r["attributes"]["log.record.uid"] for r in receiver.log_records()]
    assert len(uids) == 1000 and len(set(uids)) == 1000


def test_a_claim_left_by_a_dead_sender_is_taken_once_its_lease_ran_out(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store_path(isolated_home), 1)
    with ExportQueue(store_path(isolated_home)) as dead:
        assert len(dead.claim(10)) == 1  # and never released
    with ExportQueue(store_path(isolated_home)) as other:
        assert other.claim(10) == []
        now = time.time()
        monkeypatch.setattr(time, "time", lambda: now + 301)
        assert len(other.claim(10)) == 1


def test_backoff_grows_and_stays_bounded() -> None:
    delays = [otel_export._backoff(i) for i in range(10)]
    assert delays[1] > delays[0] * 1.1 and max(delays) <= otel_export.BACKOFF_CAP_S * 1.25


def _environ() -> dict[str, Any]:
    import os

    return dict(os.environ)


def test_the_protobuf_and_json_encodings_decode_to_the_same_official_messages(isolated_home: Path) -> None:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

    from agentlaunch.usage.otel.payload import TOKEN_BUCKETS, logs_request, metrics_request
    from agentlaunch.usage.otel.wire import to_json, to_protobuf
    from testbed.otlp_receiver import unknown_fields

    fill(store_path(isolated_home), 3)
    with ExportQueue(store_path(isolated_home)) as queue:
        batch = queue.claim(10)
        totals = queue.series_totals([p.call.id for p in batch if p.call.id is not None], TOKEN_BUCKETS)
    config = config_for("http://127.0.0.1:1")
    for name, cls, payload in (
        ("ExportMetricsServiceRequest", ExportMetricsServiceRequest, metrics_request(batch, config, totals)),
        ("ExportLogsServiceRequest", ExportLogsServiceRequest, logs_request(batch, config)),
    ):
        from_proto, from_json = cls(), cls()
        from_proto.ParseFromString(to_protobuf(name, payload))
        json_format.Parse(to_json(name, payload), from_json)  # refuses a field name it does not know
        assert not unknown_fields(from_proto)
        assert from_proto == from_json
        assert from_proto.ByteSize() > 100


def test_a_password_in_the_endpoint_never_reaches_a_message(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 1)
    port = free_port()
    done = run_cli_inprocess(
        "usage", "export", "--wait", "0.5", env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://team:s3cret@127.0.0.1:{port}"}
    )
    assert done.returncode == 1
    err = done.stderr.decode()
    assert f"127.0.0.1:{port}" in err and "connection refused" in err and "s3cret" not in err


def test_a_signal_set_to_none_is_not_sent_and_its_calls_count_as_done(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 2)
    with OtlpReceiver() as receiver, ExportQueue(store_path(isolated_home)) as queue:
        Exporter(queue, config_for(receiver.url, OTEL_LOGS_EXPORTER="none"), wait=no_wait).drain()
        assert queue.pending_count() == 0
        assert {r.path for r in receiver.received} == {"/v1/metrics"}


def test_both_signals_none_is_a_configuration_error() -> None:
    from agentlaunch.usage.otel.config import OtelConfigError

    with pytest.raises(OtelConfigError, match="both none"):
        read_config({"OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"})
    with pytest.raises(OtelConfigError, match="OTEL_LOGS_EXPORTER='console'"):
        read_config({"OTEL_LOGS_EXPORTER": "console"})


def test_a_404_says_how_to_leave_that_signal_out(isolated_home: Path) -> None:
    fill(store_path(isolated_home), 1)
    with OtlpReceiver() as receiver, ExportQueue(store_path(isolated_home)) as queue:
        config = config_for(receiver.url, OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=receiver.url + "/v1/no-logs")
        exporter = Exporter(queue, config, wait=no_wait)
        exporter.drain()
        assert queue.pending_count() == 1  # metrics accepted, logs not: not exported yet
        assert exporter.fatal and "404" in exporter.fatal and "OTEL_LOGS_EXPORTER=none" in exporter.fatal
        exporter = Exporter(queue, config_for(receiver.url), wait=no_wait)
        exporter.drain()  # the logs alone go now; the metrics are not sent twice
        assert queue.pending_count() == 0
    metric_requests = [r for r in receiver.received if r.path == "/v1/metrics"]
    assert len(metric_requests) == 1 and len(receiver.log_records()) == 1


def test_a_tls_endpoint_needs_its_certificate_and_then_accepts(isolated_home: Path, tmp_path: Path) -> None:
    import shutil

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    fill(store_path(isolated_home), 1)
    with OtlpReceiver(tls=(str(cert), str(key))) as receiver, ExportQueue(store_path(isolated_home)) as queue:
        assert receiver.url.startswith("https://")
        untrusted = Exporter(queue, config_for(receiver.url), wait=no_wait)
        result = untrusted.drain()
        assert result.stopped and untrusted.fatal and "certificate not trusted" in untrusted.fatal
        assert "OTEL_EXPORTER_OTLP_CERTIFICATE" in untrusted.fatal and queue.pending_count() == 1
        trusted = Exporter(queue, config_for(receiver.url, OTEL_EXPORTER_OTLP_CERTIFICATE=str(cert)), wait=no_wait)
        assert trusted.drain().exported == 1 and queue.pending_count() == 0
        assert len(receiver.log_records()) == 1
