"""A launch's control socket (agentlaunch.launch.control) served in-process for a test: a ControlServer in a temporary
folder on a loop a thread runs, as the launch's thread would; the test takes and answers its requests
(test_send_protocol.py, test_send_command.py).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.launch.control import ControlServer, SendRequest
from agentlaunch.launch.loop import Loop
from agentlaunch.processes import process_start
from tests.support.waits import wait_for


class ThreadServed(ControlServer):
    """A ControlServer on a loop run by a thread of its own; :meth:`close` stops that loop, then closes the server."""

    def __init__(self, path: Path, **kwargs: Any) -> None:
        loop = Loop()
        self._stop_r, self._stop_w = os.pipe()
        loop.add_reader(self._stop_r, loop.stop)
        super().__init__(path, loop, **kwargs)
        self._thread = threading.Thread(target=loop.run, daemon=True)
        self._thread.start()

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(10)
        super().close()
        self.loop.close()
        os.close(self._stop_r)
        os.close(self._stop_w)


def serve(path: Path, **kwargs: Any) -> ControlServer:
    return ThreadServed(path, **kwargs)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ControlServer]:
    made = serve(tmp_path / "control.sock")
    yield made
    made.close()


def take_one(server: ControlServer) -> SendRequest:
    return wait_for(lambda: (server.take() or [None])[0], timeout=10, what="the request")  # type: ignore[no-any-return]


def write_record(state_dir: Path, name: str, **fields: Any) -> Path:
    folder = state_dir / "status"
    folder.mkdir(parents=True, exist_ok=True)
    record = {
        "version": 1,
        "agent": name,
        "session_id": "abc123",
        "working_dir": "/w",
        "state": "waiting",
        "pid": os.getpid(),
        "pid_start": process_start(os.getpid()),
        **fields,
    }
    path = folder / f"{fields.get('pid', os.getpid())}-{name}-{fields.get('session_id', 'abc123')}.json"
    path.write_text(json.dumps(record))
    return path


def state_dir() -> Path:
    return Path(os.environ["AGENTLAUNCH_STATE_DIR"])
