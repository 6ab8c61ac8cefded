"""Spawning a provider CLI: stdin a pipe, stdout and stderr on a PTY in raw mode.

Claude Code refuses a terminal on stdin in ``-p`` mode, but its output must
not be block-buffered, so the child gets a pipe to read user turns from and
the slave side of a PTY (its controlling terminal, so window-size changes
reach it as SIGWINCH) to write to. A reader thread splits the master side
into lines; ``EIO`` on the master is end of file on Linux.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import queue
import select
import shutil
import signal
import struct
import subprocess
import termios
import threading
import tty
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agentlaunch.errors import ProviderMissing

MAX_LINE = 64 * 1024 * 1024  # a longer line is dropped (and reported), never held
READ_SIZE = 65536
EOF = None  # marks the end of the child's output in the line queue


class LongLineDropped(NamedTuple):  # not a dataclass: this module loads before the CLI is prespawned
    size: int


def window_size(fd: int = 0) -> tuple[int, int]:
    """(columns, rows) of the terminal on ``fd``, or of the environment's idea of one."""
    size = shutil.get_terminal_size((80, 24))
    try:
        rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
        if rows and cols:
            return cols, rows
    except OSError:
        pass
    return size.columns, size.lines


def set_window_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def resolve_command(command: str) -> str:
    """The absolute path of ``command``, or ProviderMissing with an install hint."""
    found = shutil.which(command)
    if found is None:
        path = Path(command)
        if path.exists() and not os.access(path, os.X_OK):
            raise ProviderMissing(f"{command}: provider CLI is not executable")
        raise ProviderMissing(f"{command}: provider CLI not found on PATH")
    return found


class Child:
    """A running provider CLI process and the lines it prints.

    ``lines`` yields decoded lines (without line ends) until the child's
    output ends; a line past ``MAX_LINE`` bytes is dropped and reported as a
    :class:`LongLineDropped` item instead.
    """

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, *, size: tuple[int, int] = (80, 24), stdin_pipe: bool = True
    ) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no \n -> \r\n translation, no echo
        set_window_size(master, *size)

        def become_tty_owner() -> None:  # runs in the child, after setsid
            with contextlib.suppress(OSError):
                fcntl.ioctl(1, termios.TIOCSCTTY, 0)

        try:
            self.proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                preexec_fn=become_tty_owner,
            )
        except FileNotFoundError:
            os.close(master)
            os.close(slave)
            raise ProviderMissing(f"{argv[0]}: provider CLI not found") from None
        except PermissionError:
            os.close(master)
            os.close(slave)
            raise ProviderMissing(f"{argv[0]}: provider CLI is not executable") from None
        os.close(slave)
        self.master = master
        self.queue: queue.Queue[str | LongLineDropped | None] = queue.Queue()
        self._ended = False
        self._reader = threading.Thread(target=self._read_loop, name="child-reader", daemon=True)
        self._reader.start()
        self._stdin_lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_loop(self) -> None:
        buf = bytearray()
        dropping = 0
        while True:
            try:
                chunk = os.read(self.master, READ_SIZE)
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.EBADF):
                    break
                raise
            if not chunk:
                break
            start = 0
            while True:
                nl = chunk.find(b"\n", start)
                if nl < 0:
                    break
                piece = chunk[start:nl]
                start = nl + 1
                if dropping:
                    self.queue.put(LongLineDropped(dropping + len(piece)))
                    dropping = 0
                    continue
                buf += piece
                self.queue.put(buf.decode("utf-8", "replace").rstrip("\r"))
                buf = bytearray()
            rest = chunk[start:]
            if dropping:
                dropping += len(rest)
            else:
                buf += rest
                if len(buf) > MAX_LINE:
                    dropping = len(buf)
                    buf = bytearray()
        if buf:
            self.queue.put(buf.decode("utf-8", "replace").rstrip("\r"))
        elif dropping:
            self.queue.put(LongLineDropped(dropping))
        self.queue.put(EOF)

    def send_json(self, obj: Any) -> None:
        """Write one JSON line to the child's stdin; BrokenPipeError means it is gone."""
        self.send_bytes((json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self._stdin_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def close_stdin(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def resize(self, cols: int, rows: int) -> None:
        """Tell the child's terminal its new size; the kernel sends it SIGWINCH."""
        with contextlib.suppress(OSError):
            set_window_size(self.master, cols, rows)

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop(self, grace: float = 3.0) -> int:
        """End the child: close stdin, then SIGTERM, then SIGKILL; return its exit code."""
        self.close_stdin()
        try:
            return self.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        self.signal_group(signal.SIGTERM)
        try:
            return self.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.signal_group(signal.SIGKILL)
            return self.proc.wait()

    def wait(self, timeout: float | None = None) -> int:
        """The child's exit code once it has exited; raises subprocess.TimeoutExpired after ``timeout`` seconds.

        With a timeout, ``Popen.wait`` polls with sleeps of up to 50 ms; a pidfd
        (Linux) wakes the moment the child exits, which every headless turn
        would otherwise pay at its end.
        """
        if timeout is None or self.proc.returncode is not None:
            return self.proc.wait(timeout=timeout)
        try:
            pidfd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):  # not Linux, or already reaped
            return self.proc.wait(timeout=timeout)
        try:
            if not select.select([pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.proc.args, timeout)
        finally:
            os.close(pidfd)
        return self.proc.wait()

    def close(self) -> None:
        """Release the PTY once the reader has seen the end of the output."""
        self._reader.join(timeout=2)
        with contextlib.suppress(OSError):
            os.close(self.master)

    def next_line(self, timeout: float | None = None) -> str | LongLineDropped | None:
        """The next output line; None at the end of output (and on every call after). Raises queue.Empty on timeout."""
        # The reader puts EOF once; a caller that drains again after seeing it must not block forever.
        if self._ended:
            return EOF
        item = self.queue.get(timeout=timeout)
        if item is EOF:
            self._ended = True
        return item
