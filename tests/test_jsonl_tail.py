"""The incremental JSON-lines reader behind the native sources (Codex, Gemini): any growth, any junk, bounded memory."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlaunch.providers.native.jsonl_tail import JsonlTail

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
junk = st.sampled_from([b"", b"  ", b"not json", b"{broken", b"\xff\xfe", b"{" * 3000, b'{"a": [' * 200])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.one_of(objects.map(lambda o: ("obj", o)), junk.map(lambda j: ("junk", j))), max_size=15),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=10),
)
def test_any_growth_gives_each_object_once_in_order(
    tmp_path_factory: pytest.TempPathFactory, lines: list[tuple[str, Any]], cuts: list[int]
) -> None:
    path = tmp_path_factory.mktemp("tail") / "log.jsonl"
    data = b"".join((json.dumps(v).encode() if k == "obj" else v) + b"\n" for k, v in lines)
    tail = JsonlTail(path)
    got = tail.read()  # missing file
    with path.open("wb") as fh:
        for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
            fh.seek(0, 2)
            fh.write(data[fh.tell() : cut])
            fh.flush()
            got += tail.read()
    assert got == [v for k, v in lines if k == "obj"]


def test_a_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": ')
    tail = JsonlTail(path)
    assert tail.read() == [{"a": 1}]
    with path.open("ab") as fh:
        fh.write(b"2}\n")
    assert tail.read() == [{"b": 2}]


def test_lines_longer_than_the_limit_are_skipped_and_not_held(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"big": "' + b"x" * 5000)
    tail = JsonlTail(path, max_line=1000)
    assert tail.read() == []
    assert len(tail._partial) == 0
    with path.open("ab") as fh:
        fh.write(b'"}\n{"after": true}\n' + b'{"big2": "' + b"y" * 2000 + b'"}\n{"last": 1}\n')
    assert tail.read() == [{"after": True}, {"last": 1}]


def test_truncation_and_replacement_read_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    tail = JsonlTail(path)
    assert tail.read() == [{"n": 1}, {"n": 2}]
    path.write_bytes(b'{"n": 3}\n')
    assert tail.read() == [{"n": 3}]
    new = tmp_path / "new.jsonl"
    new.write_bytes(b'{"n": 4}\n{"n": 5}\n{"n": 6}\n')
    os.replace(new, path)
    assert tail.read() == [{"n": 4}, {"n": 5}, {"n": 6}]
    assert tail.restarts == 2


def test_a_start_offset_skips_what_is_there(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"old": 1}\n')
    tail = JsonlTail(path, start_at_end=True)
    with path.open("ab") as fh:
        fh.write(b'{"new": 1}\n')
    assert tail.read() == [{"new": 1}]


def test_a_folder_or_unreadable_path_reads_nothing(tmp_path: Path) -> None:
    assert JsonlTail(tmp_path).read() == []
    assert JsonlTail(tmp_path / "missing" / "x.jsonl").read() == []
