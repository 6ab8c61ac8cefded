"""State files written by someone else are input: the status reader, the delivery ledger and the store.

None of what is found there may crash or hang `run`, `status` or `status --line`
(which sits in tmux status bars), and stale records around it are still cleaned.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch import paths
from agentlaunch.definitions.deliver import deliver
from agentlaunch.errors import RefusedOverwrite, StateError
from agentlaunch.live.status import StatusRecord, line_for, one_line, read_records, status_dir
from agentlaunch.usage.store_file import connect
from tests.support.cli_runs import run_cli, run_cli_inprocess


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"agent": "demo", "state": "waiting", "pid": os.getpid(), "context": 1_000, "percent": 1.5}
    base.update(overrides)
    return base


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


IMPOSSIBLE_PIDS = [2**70, True, False, -1, 0, 1, "123", 1.5, None, [os.getpid()], {"pid": os.getpid()}, -(2**70)]


def _pid_id(value: object) -> str:
    """The test id of a value: this process's pid named, not shown (xdist's workers must collect the same ids)."""
    return repr(value).replace(repr(os.getpid()), "own-pid") if value in ([os.getpid()], {"pid": os.getpid()}) else repr(value)


@pytest.mark.parametrize("pid", IMPOSSIBLE_PIDS, ids=_pid_id)
def test_a_record_with_an_impossible_pid_is_stale_and_cleaned(tmp_path: Path, pid: object) -> None:
    (tmp_path / "1.json").write_text(json.dumps(record(pid=pid)))
    (found,) = read_records(tmp_path)
    assert found.stale and one_line(found.as_dict()).startswith("demo · stale")
    assert not (tmp_path / "1.json").exists()


def test_hostile_files_in_the_status_folder_neither_hang_nor_crash_and_stale_ones_are_cleaned(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")  # reading it plainly would wait for a writer forever
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "deep.json").write_text(deep(10_000))
    (tmp_path / "deepfield.json").write_text('{"agent": "x", "pid": 1, "usage": ' + deep(10_000) + "}")
    (tmp_path / "huge.json").write_bytes(b'{"agent": "big", "pad": "' + b"x" * (1 << 20) + b'"}')
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "types.json").write_text(
        json.dumps(
            record(agent="types", context="lots", to_compaction=10**30, percent=float("nan"), usage=[1], cost=5, state=["x"])
        )
    )
    (tmp_path / "nan.json").write_text(f'{{"agent": "nan", "pid": {os.getpid()}, "percent": NaN, "context": 1e400}}')
    (tmp_path / "gone.json").write_text(json.dumps(record(agent="gone", pid=dead_pid())))
    (tmp_path / "alive.json").write_text(json.dumps(record(agent="alive")))
    found = {r.agent: r for r in read_records(tmp_path)}
    assert sorted(found) == ["alive", "gone", "nan", "types"]
    assert found["gone"].stale and not found["alive"].stale
    assert not (tmp_path / "gone.json").exists() and (tmp_path / "alive.json").exists()
    assert one_line(found["types"].as_dict()) == "types · ?"  # every field of the wrong type left out
    assert "percent" not in found["nan"].data and "context" not in found["nan"].data
    assert (tmp_path / "fifo.json").exists()  # not a record: left alone
    assert line_for("alive", tmp_path).startswith("alive · waiting · ctx 1.5%")


def test_status_commands_with_a_hostile_status_folder(tmp_path: Path) -> None:
    folder = status_dir()
    folder.mkdir(parents=True)
    os.mkfifo(folder / "1.json")
    (folder / "2.json").write_text(deep(10_000))
    (folder / "3.json").write_text(json.dumps(record(pid=2**70)))
    (folder / "4.json").write_text(json.dumps(record(pid=True, agent="t")))
    (folder / "5.json").write_text(json.dumps(record(pid=-1, agent="m")))
    (folder / "6.json").write_text(json.dumps(record(pid=1, agent="init")))
    for args in (["status", "--line", "demo"], ["status", "--json"], ["status"], ["status", "--line", "init"]):
        result = run_cli_inprocess(*args, timeout=60)  # the timeout only catches a hang; it is not a speed check
        assert result.returncode == 0, (args, result.stderr)
        assert b"Traceback" not in result.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["1.json", "2.json"]  # the stale records were cleaned
    assert run_cli_inprocess("status", "--line", "demo").stdout == b""


def test_run_with_hostile_state_files_still_runs(agents_dir: Path, tmp_path: Path) -> None:
    state = paths.state_dir()
    (state / "status").mkdir(parents=True)
    os.mkfifo(state / "status" / "9.json")
    (state / "status" / "8.json").write_text(json.dumps(record(pid=2**70)))
    (state / "delivered.json").write_text(json.dumps({"/x/CLAUDE.md": "not an object", "/y": [1], "/z": None}))
    result = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), timeout=120)
    assert result.returncode == 0, result.stderr
    assert b"Traceback" not in result.stderr


def test_a_ledger_entry_that_is_not_an_object_is_ignored(workdir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    target = workdir / "CLAUDE.md"
    (state / "delivered.json").write_text(json.dumps({str(target): "junk", "other": [1, 2], "x": {"pid": 2**70}}))
    assert deliver(target, "agent\n", "a", state, hold=True).changed
    (state / "delivered.json").write_text(json.dumps({str(target): {"sha256": 5, "agent": [], "pid": -1, "holds": "x"}}))
    with pytest.raises(RefusedOverwrite, match="it is yours"):  # its entry's sha256 is no string: the file is the user's
        deliver(target, "other\n", "a", state)


@pytest.mark.parametrize("content", ["deep", "fifo", "directory", "huge"])
def test_a_ledger_that_cannot_be_read_is_a_state_error_without_blocking(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    from agentlaunch.definitions import deliver as deliver_module

    state = tmp_path / "state"
    state.mkdir()
    ledger = state / "delivered.json"
    if content == "deep":
        ledger.write_text(deep(10_000))
    elif content == "fifo":
        os.mkfifo(ledger)
    elif content == "directory":
        ledger.mkdir()
    else:
        monkeypatch.setattr(deliver_module, "LEDGER_LIMIT", 10)
        ledger.write_text(json.dumps({"a": {}, "b": {}}))
    with pytest.raises(StateError, match="unreadable ledger"):
        deliver(workdir / "CLAUDE.md", "x\n", "a", state)


def test_a_fifo_in_place_of_the_ledgers_lock_is_a_state_error(workdir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "delivered.json.lock")
    with pytest.raises(StateError, match="state directory is not usable"):
        deliver(workdir / "CLAUDE.md", "x\n", "a", state)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_fifo_or_directory_at_the_store_path_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "usage.sqlite3"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(StateError, match="not a usage store"):
        connect(path)
    store = paths.store_path()
    store.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(store) if kind == "fifo" else store.mkdir()
    result = run_cli_inprocess("usage", timeout=60)
    assert result.returncode == 5 and b"not a usage store" in result.stderr, result.stderr


# -- generated hostile records -------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    [
        "agent",
        "display",
        "provider",
        "model",
        "state",
        "pid",
        "pid_start",
        "context",
        "window",
        "to_compaction",
        "percent",
        "cost",
        "cost_usd",
        "calls",
        "turns",
        "usage",
        "updated",
        "started",
        "window_source",
        "stale",
        "x",
    ]
)
RECORDS = st.dictionaries(FIELDS, JSON, max_size=12)


def _check_readable(records: list[StatusRecord]) -> None:
    for r in records:
        assert isinstance(one_line(r.as_dict()), str) and isinstance(r.agent, str) and isinstance(r.state, str)
        json.dumps(r.as_dict(), allow_nan=False)  # --json output: plain JSON, no NaN
        for key in ("context", "window", "to_compaction", "calls", "turns", "pid"):
            value = r.data.get(key)
            assert value is None or (type(value) is int and abs(value) < 2**53), (key, value)
        for key in ("percent", "cost_usd"):
            value = r.data.get(key)
            assert value is None or (isinstance(value, int | float) and math.isfinite(value)), (key, value)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(RECORDS, max_size=4))
def test_the_status_reader_takes_any_json_records(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    folder = tmp_path / "generated"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for i, data in enumerate(records):
        (folder / f"{i}.json").write_text(json.dumps(data))
    found = read_records(folder)
    _check_readable(found)
    assert all(r.stale for r in found if not isinstance(r.data.get("pid"), int))
    assert all(not (folder / f"{r.path.name}").exists() for r in found if r.stale)  # stale ones cleaned
    for data in records:
        one_line(data)  # the one-line form copes even with what the reader would have left out
    line_for("demo", folder)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blobs=st.lists(st.binary(max_size=200) | JSON.map(lambda v: json.dumps(v).encode()), max_size=4))
def test_the_status_reader_takes_any_bytes(tmp_path: Path, blobs: list[bytes]) -> None:
    folder = tmp_path / "bytes"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for i, blob in enumerate(blobs):
        (folder / f"{i}.json").write_bytes(blob)
    _check_readable(read_records(folder, clean=False))


def test_fifos_in_place_of_the_launch_caches_do_not_block_run(agents_dir: Path, tmp_path: Path) -> None:
    """Every cache a launch keeps (validated memos, launch plans, prefix records, CLI versions,
    prices) is read as input: a FIFO left in its place must not block the next run."""
    first = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), timeout=120)
    assert first.returncode == 0, first.stderr
    state = paths.state_dir()
    caches = [p for p in state.rglob("*.json") if p.name != "delivered.json" and "fake-provider" not in p.parts]
    for cached in caches:
        cached.unlink()
        os.mkfifo(cached)
    assert {p.relative_to(state).parts[0] for p in caches} >= {"validated", "launch-plans", "prefix"}
    again = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), timeout=120)  # a hang fails on the timeout
    assert again.returncode == 0, again.stderr
