"""A tailed file truncated and refilled in place, to the same size or beyond, between two reads.

The inode stays and the size does not shrink, so size alone misses it: the
bytes just before the offset, and the file's first bytes, are compared too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlaunch.providers.native.jsonl_tail import JsonlTail


def rewrite_in_place(path: Path, data: bytes) -> None:
    """Truncate and refill the same inode (what `> file` in a shell, or an editor saving in place, does)."""
    with open(path, "r+b") as fh:
        fh.truncate(0)
        fh.write(data)


@pytest.mark.parametrize(
    "refill",
    [b'{"n": 3}\n{"n": 4}\n', b'{"n": 3}\n{"n": 4}\n{"n": 5}\n'],
    ids=["same-size", "larger"],
)
def test_a_file_truncated_and_refilled_in_place_is_read_again_from_its_start(tmp_path: Path, refill: bytes) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    tail = JsonlTail(path)
    assert tail.read() == [{"n": 1}, {"n": 2}]
    inode = path.stat().st_ino
    rewrite_in_place(path, refill)
    assert path.stat().st_ino == inode
    assert tail.read() == [{"n": n} for n in range(3, 3 + refill.count(b"\n"))]
    assert tail.restarts == 1


def test_a_refill_that_keeps_the_start_but_changes_the_last_line_read_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    tail = JsonlTail(path)
    assert tail.read() == [{"n": 1}, {"n": 2}]
    rewrite_in_place(path, b'{"n": 1}\n{"n": 7}\n{"n": 8}\n')
    assert tail.read() == [{"n": 1}, {"n": 7}, {"n": 8}]


def test_appending_is_not_taken_for_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n')
    tail = JsonlTail(path)
    assert tail.read() == [{"n": 1}]
    for n in range(2, 50):
        with open(path, "ab") as fh:
            fh.write(b'{"n": %d}\n' % n + b" " * (n * 37 % 300))  # lines of many lengths: marks across reads
        assert tail.read() == [{"n": n}]
    assert tail.restarts == 0


def test_start_at_end_then_a_rewrite_in_place_is_read_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    tail = JsonlTail(path, start_at_end=True)
    assert tail.read() == []
    rewrite_in_place(path, b'{"n": 5}\n{"n": 6}\n')
    assert tail.read() == [{"n": 5}, {"n": 6}]
