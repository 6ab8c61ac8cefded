"""The state folder is another user's to read only if they are root: 0700 folders, 0600 store and status files.

Session titles (first prompts), working directories and costs live there; a
permissive umask (022, the common default) must not open them to others, and
what an older agentlaunch left readable is tightened at the next launch.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.live.status import StatusWriter, status_dir
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common default umask (022), which gives new folders 0755 and new files 0644."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.usefixtures("open_umask")
def test_a_first_launch_makes_the_state_folder_and_store_private(agents_dir: Path) -> None:
    done = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert done.returncode == 0, done.stderr
    state = paths.state_dir()
    assert mode(state) == 0o700
    store_files = [p for p in state.iterdir() if p.name.startswith("usage.sqlite3")]
    assert store_files
    for path in store_files:
        assert mode(path) == 0o600, path


@pytest.mark.usefixtures("open_umask")
def test_a_launch_tightens_what_an_older_agentlaunch_left_readable(agents_dir: Path) -> None:
    state = paths.state_dir()
    state.mkdir(parents=True)
    Store.open(paths.store_path()).close()
    os.chmod(state, 0o755)
    os.chmod(paths.store_path(), 0o644)
    done = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert done.returncode == 0, done.stderr
    assert mode(state) == 0o700
    assert mode(paths.store_path()) == 0o600


@pytest.mark.usefixtures("open_umask")
def test_opening_the_store_never_loosens_a_stricter_mode(tmp_path: Path) -> None:
    path = tmp_path / "state" / "usage.sqlite3"
    Store.open(path).close()
    os.chmod(path.parent, 0o500)  # read and search only
    try:
        Store.open(path).close()
    except Exception:  # noqa: BLE001 - a read-only folder may be refused; what matters is the mode after
        pass
    finally:
        assert mode(path.parent) == 0o500
        os.chmod(path.parent, 0o700)


@pytest.mark.usefixtures("open_umask")
def test_status_records_are_private() -> None:
    writer = StatusWriter(pane_title=False)
    writer.update({"state": "working", "agent": "demo", "title": "a first prompt"})
    writer.flush()
    assert mode(status_dir()) == 0o700
    assert mode(status_dir().parent) == 0o700
    assert mode(writer.path) == 0o600
    writer.close()
