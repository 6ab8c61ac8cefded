"""A mistyped telemetry variable is named, never shown: its value is often a bearer token.

Every variable that can carry a secret (the headers, the resource attributes,
an endpoint with a password) is refused with exit 3, a message naming the
variable and the entry, and none of its value; a value no HTTP header can
carry (not Latin-1, a line break) is refused the same way instead of failing
the export with a traceback.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.token_usage import Usage
from agentlaunch.usage.otel.config import OtelConfigError, read_config
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from testbed.otlp_receiver import OtlpReceiver
from tests.support.cli_runs import run_cli, run_cli_inprocess

SECRET = "s3cr3t-t0ken"
BAD = [
    ("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization Bearer {SECRET}"),  # no '='
    ("OTEL_EXPORTER_OTLP_HEADERS", f"x-team=a,Authorization: Bearer {SECRET}=1"),  # not a header name
    ("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer {SECRET}\u4e2d"),  # not Latin-1
    ("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{SECRET}%E4%B8%AD"),  # not Latin-1, percent-encoded
    ("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{SECRET}%0D%0AX-Evil: 1"),  # a line break
    ("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer {SECRET}\x7f"),  # a control character
    ("OTEL_EXPORTER_OTLP_LOGS_HEADERS", f"{SECRET}"),
    ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", f"Authorization=Bearer%ZZ{SECRET}\u00e9\u0100"),
    ("OTEL_RESOURCE_ATTRIBUTES", f"team.token {SECRET}"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://team:{SECRET}@127.0.0.1:99999"),
    ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", f"ftp://team:{SECRET}@127.0.0.1/"),
]


@pytest.mark.parametrize(("variable", "value"), BAD)
def test_the_configuration_error_names_the_variable_and_never_the_value(variable: str, value: str) -> None:
    with pytest.raises(OtelConfigError) as caught:
        read_config({variable: value})
    said = caught.value.message + (caught.value.hint or "")
    assert variable in said and SECRET not in said and "Bearer" not in said


@pytest.mark.parametrize(("variable", "value"), BAD)
def test_usage_export_exits_3_without_the_value(variable: str, value: str) -> None:
    with Store.open(paths.store_path()) as store:
        store.start_session("s1", agent="a", provider="fake", working_dir="/w")
        store.record_call(
            CallRecord(
                at=datetime.now(UTC),
                agent="a",
                provider="fake",
                session_id="s1",
                turn=1,
                model_requested="m",
                model_reported="m",
                usage=Usage(input=1, output=1),
            )
        )
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, variable: value}
        done = run_cli_inprocess("usage", "export", "--wait", "2", env=env)
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 3, err
    assert variable in err and SECRET not in err and SECRET not in done.stdout.decode() and "Traceback" not in err


def test_a_launch_with_a_bad_header_variable_runs_and_never_shows_the_value(agents_dir: Path) -> None:
    env = {"AGENTLAUNCH_OTEL": "1", "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization Bearer {SECRET}"}
    done = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=agents_dir.parent, env=env)
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode()
    assert "OTEL_EXPORTER_OTLP_HEADERS" in err and SECRET not in err and SECRET not in done.stdout.decode()
