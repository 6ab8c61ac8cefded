"""Export asked for without the ``otel`` extra: one message that says what to install, and nothing lost.

The extra's packages are installed with the tests (the test extra holds them); their absence is made here by
``None`` in ``sys.modules`` for ``google.protobuf``, which makes its import fail as a missing package does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentlaunch.usage.otel import wire
from agentlaunch.usage.otel.queue import ExportQueue
from testbed.otlp_receiver import OtlpReceiver
from tests.test_otel_export import fill, store_path

HINT = "pip install 'agentlaunch[otel]'"


@pytest.fixture
def no_extra(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The otel extra as if it were not installed (``require``'s answer is cached: cleared before and after)."""
    wire.require.cache_clear()
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    try:
        yield
    finally:
        wire.require.cache_clear()


def test_require_says_which_extra_to_install(no_extra: None) -> None:
    with pytest.raises(wire.ExtraMissing) as caught:
        wire.require()
    assert "otel extra" in caught.value.message and "google.protobuf" in caught.value.message
    assert caught.value.hint is not None and HINT in caught.value.hint


def test_usage_export_without_the_extra_exits_3_with_the_install_line_and_keeps_the_calls(
    isolated_home: Path, no_extra: None
) -> None:
    from tests.support.cli_runs import run_cli_inprocess

    fill(store_path(isolated_home), 2)
    with OtlpReceiver() as receiver:
        done = run_cli_inprocess("usage", "export", env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
        assert receiver.received == []
    err = done.stderr.decode()
    assert done.returncode == 3, err
    assert HINT in err and "Traceback" not in err
    with ExportQueue(store_path(isolated_home)) as queue:
        assert queue.pending_count() == 2 and len(queue.claim(10)) == 2  # nothing sent, nothing left claimed


def test_a_launch_without_the_extra_says_it_once_and_exports_nothing(
    isolated_home: Path, no_extra: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentlaunch.sinks import SessionClosed, StateChanged
    from agentlaunch.usage.otel.sink import OtelExportSink

    fill(store_path(isolated_home), 1, session="s-1")
    monkeypatch.setenv("AGENTLAUNCH_OTEL", "1")
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        sink = OtelExportSink(store_path(isolated_home), "demo")
        view = SimpleNamespace(session_id="s-1")
        sink.event(StateChanged("thinking"), view)  # type: ignore[arg-type]
        sink.event(SessionClosed(0), view)  # type: ignore[arg-type]
        assert receiver.received == []
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "telemetry" in line]
    assert len(lines) == 1 and HINT in lines[0] and "no call was exported" in lines[0], err
    with ExportQueue(store_path(isolated_home)) as queue:
        assert queue.pending_count() == 1
