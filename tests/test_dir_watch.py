"""The inotify watch: what each event names, a file watched alone, watches removed and gone."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.dir_watch import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_IGNORED,
    IN_MODIFY,
    IN_MOVED_TO,
    DirWatch,
    open_watch,
)


@pytest.fixture
def watch() -> Iterator[DirWatch]:
    made = open_watch()
    if made is None:
        pytest.fail("inotify is not available on this Linux machine")
    yield made
    made.close()


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="aldw-") as name:
        yield Path(name)


def test_each_event_names_the_watched_folder_and_the_file(watch: DirWatch, folder: Path) -> None:
    assert watch.watch(folder, IN_CREATE | IN_MOVED_TO)
    (folder / "a.jsonl").write_text("x")
    (folder / "b.tmp").write_text("y")
    os.rename(folder / "b.tmp", folder / "b.jsonl")
    got = [(path, name, bool(mask & IN_CREATE), bool(mask & IN_MOVED_TO)) for path, name, mask in watch.events()[1]]
    assert got == [(folder, "a.jsonl", True, False), (folder, "b.tmp", True, False), (folder, "b.jsonl", False, True)]
    assert watch.events() == (False, [])  # read once
    with (folder / "a.jsonl").open("a") as f:
        f.write("more")
    assert watch.events()[1] == []  # writes are not in this mask


def test_a_file_watched_alone_reports_its_own_writes(watch: DirWatch, folder: Path) -> None:
    mine, other = folder / "mine.jsonl", folder / "other.jsonl"
    mine.write_text("")
    other.write_text("")
    assert watch.watch(mine, IN_MODIFY | IN_CLOSE_WRITE)
    with other.open("a") as f:
        f.write("not mine")
    assert watch.events()[1] == []
    with mine.open("a") as f:
        f.write("mine")
    events = watch.events()[1]
    assert events and all(path == mine and name == "" for path, name, _ in events)
    assert any(mask & IN_MODIFY for _, _, mask in events)


def test_unwatched_is_silent_and_a_removed_folder_is_forgotten(watch: DirWatch, folder: Path) -> None:
    inner = folder / "inner"
    inner.mkdir()
    assert watch.watch(folder, IN_CREATE) and watch.watch(inner, IN_CREATE)
    watch.unwatch(folder)
    assert set(watch.watched) == {inner}
    (folder / "new").write_text("")
    assert watch.events() == (True, [])  # the kernel's last word on the watch removed, left out
    (folder / "newer").write_text("")
    assert watch.events() == (False, [])
    inner.rmdir()
    events = watch.events()[1]
    assert any(path == inner and mask & IN_IGNORED for path, _, mask in events)
    assert watch.watched == {}  # gone: watch() adds it again when it is back
    inner.mkdir()
    assert watch.watch(inner, IN_CREATE)


def test_watching_a_path_again_follows_its_new_inode(watch: DirWatch, folder: Path) -> None:
    path = folder / "t.jsonl"
    path.write_text("")
    assert watch.watch(path, IN_MODIFY)
    fresh = folder / "t.tmp"
    fresh.write_text("")
    os.rename(fresh, path)  # the old inode is gone
    assert watch.watch(path, IN_MODIFY, again=True)
    watch.events()[1]
    with path.open("a") as f:
        f.write("x")
    assert [(p, bool(m & IN_MODIFY)) for p, _, m in watch.events()[1]] == [(path, True)]
    assert watch.drain() is False
