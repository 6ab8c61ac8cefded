"""Spawning a provider CLI: stdin a pipe, stdout and stderr on a PTY in raw mode.

Claude Code refuses a terminal on stdin in ``-p`` mode, but its output must
not be block-buffered, so the child gets a pipe to read user turns from and
the slave side of a PTY (its controlling terminal, so window-size changes
reach it as SIGWINCH) to write to. Both ends on agentlaunch's side are
non-blocking: the launch's one select loop (:mod:`agentlaunch.launch.loop`)
reads the master when it is readable and writes stdin when it can take more,
so no thread sits in a read. ``EIO`` on the master is end of file on Linux.
The CLI's exit is a file descriptor too (a pidfd, where the kernel has them).

Stdlib only and cheap to import: the entry point spawns a CLI from here
before anything heavier is loaded (see :mod:`agentlaunch.launch.early.prespawn`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import termios
import time
import tty
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentlaunch.launch.output_lines import Line, LineSplitter
from agentlaunch.platform_support import pidfd

READ_SIZE = 65536
READS_PER_WAKE = 16  # chunks read per readable event before the loop looks at its other sources again
EOF = None  # what next_line returns once the child's output has ended


def _env_size(name: str) -> int:
    try:
        return max(int(os.environ[name]), 0)
    except (KeyError, ValueError):
        return 0


def window_size(fd: int = 0) -> tuple[int, int]:
    """(columns, rows) of the terminal on ``fd``, or of the environment's idea of one."""
    try:
        rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
        if rows and cols:
            return cols, rows
    except OSError:
        pass
    import shutil  # here: a terminal answers above

    size = shutil.get_terminal_size((80, 24))
    return size.columns, size.lines


def set_window_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


class Child:
    """A running provider CLI process, its PTY output as lines, its stdin, and its exit.

    The master side (``master``) and stdin (``stdin_fd``) are non-blocking.
    :meth:`read_available` returns the lines that have arrived; after the
    output has ended ``eof`` is true. :meth:`send_bytes` queues what the
    child's stdin cannot take at once; :meth:`flush_stdin` writes more of it
    whenever the loop finds stdin writable. ``pidfd`` becomes readable when
    the process exits (None where the kernel has no pidfds: then SIGCHLD
    tells, and :meth:`poll` confirms).
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        *,
        size: tuple[int, int] = (80, 24),
        stdin_pipe: bool = True,
        terminal: list[Any] | None = None,
    ) -> None:
        """``terminal``: run the CLI's own interface, stdin on the PTY too, which starts with these settings
        (the user's terminal's, as ``termios.tcgetattr`` gave them); its output is then read as bytes."""
        master, slave = os.openpty()
        self.interface = terminal is not None
        if terminal is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(slave, termios.TCSANOW, terminal)
        else:
            tty.setraw(slave)  # no \n -> \r\n translation, no echo
        set_window_size(master, *size)
        if terminal is not None:
            stdin: Any = slave
        else:
            stdin = subprocess.PIPE if stdin_pipe else subprocess.DEVNULL

        def become_tty_owner() -> None:  # runs in the child, after setsid
            with contextlib.suppress(OSError):
                fcntl.ioctl(1, termios.TIOCSCTTY, 0)

        try:
            self.proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=stdin,
                stdout=slave,
                stderr=slave,
                start_new_session=True,
                preexec_fn=become_tty_owner,
            )
        except FileNotFoundError:
            from agentlaunch.errors import ProviderMissing  # its IntEnum: not before the early start's spawn

            os.close(master)
            os.close(slave)
            raise ProviderMissing(f"{argv[0]}: provider CLI not found") from None
        except PermissionError:
            from agentlaunch.errors import ProviderMissing

            os.close(master)
            os.close(slave)
            raise ProviderMissing(f"{argv[0]}: provider CLI is not executable") from None
        # The CLI's terminal by name, to tell whether the CLI has read what was typed (:attr:`keys_unread`).
        self._terminal_path = _tty_name(slave) if terminal is not None else None
        os.close(slave)
        _nonblocking(master)
        self.master = master
        self.stdin_fd: int | None = self.proc.stdin.fileno() if self.proc.stdin is not None else None
        if self.stdin_fd is not None:
            _nonblocking(self.stdin_fd)
        self.pidfd: int | None = pidfd(self.proc.pid)  # None (not Linux, an old kernel): SIGCHLD tells instead
        self.eof = False
        self._lines = LineSplitter()
        self._ready: deque[Line] = deque()  # lines read but not taken yet
        self._outbox = bytearray()
        self._close_when_flushed = False
        self._keys = bytearray()  # bytes for the CLI's terminal that it has not taken yet (its own interface)

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- output -------------------------------------------------------------
    def read_available(self) -> list[Line]:
        """The lines that have arrived (none when nothing has); sets ``eof`` once the output has ended."""
        items = list(self._ready)
        self._ready.clear()
        for _ in range(READS_PER_WAKE):
            if self.eof:
                break
            try:
                chunk = os.read(self.master, READ_SIZE)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno not in (errno.EIO, errno.EBADF):
                    raise
                chunk = b""
            if not chunk:
                self.eof = True
                items += self._lines.end()
                break
            items += self._lines.feed(chunk)
        return items

    def read_bytes(self) -> bytes:
        """What the CLI's interface wrote since the last call, as it wrote it (b"" when nothing came, or at the end:
        then ``eof`` is set). One read: the relay passes each chunk on before it reads the next."""
        if self.eof:
            return b""
        try:
            chunk = os.read(self.master, READ_SIZE)
        except BlockingIOError:
            return b""
        except OSError as exc:
            if exc.errno not in (errno.EIO, errno.EBADF):
                raise
            chunk = b""
        if not chunk:
            self.eof = True
        return chunk

    def send_keys(self, data: bytes) -> None:
        """Queue bytes typed at the user's terminal for the CLI's (written now as far as the PTY takes them)."""
        self._keys += data
        self.flush_keys()

    @property
    def keys_waiting(self) -> int:
        """Bytes queued for the CLI's terminal that it could not take yet."""
        return len(self._keys)

    @property
    def keys_unread(self) -> int:
        """Bytes the CLI's terminal holds that the CLI has not read yet (0 where that cannot be told).

        Written keys are not read keys: a CLI busy elsewhere reads them late, while it may still draw.
        """
        if self._terminal_path is None:
            return 0
        try:
            fd = os.open(self._terminal_path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return 0
        try:
            return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])
        except OSError:
            return 0
        finally:
            os.close(fd)

    def flush_keys(self) -> None:
        """Write what the PTY takes now; a CLI that is gone gets nothing more."""
        while self._keys and not self.eof:
            try:
                written = os.write(self.master, self._keys)
            except BlockingIOError:
                return
            except OSError:  # EIO: the CLI's side is closed; its exit tells the relay the rest
                self._keys.clear()
                return
            del self._keys[:written]

    def unread(self, items: Sequence[Line]) -> None:
        """Put back lines a turn did not use (they came after its end): the next read returns them first."""
        self._ready.extendleft(reversed(items))

    def next_line(self, timeout: float | None = None) -> Line | None:
        """The next output line, waiting for it; None (EOF) once the output has ended; TimeoutError after ``timeout``.

        For callers without a loop (tests, one-shot tools); the launch itself reads through its loop.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ready:
            if self.eof:
                return EOF
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not select.select([self.master], [], [], left)[0]:
                raise TimeoutError(f"no output from pid {self.pid} within {timeout}s")
            self._ready.extend(self.read_available())
        return self._ready.popleft()

    # -- input --------------------------------------------------------------
    def send_json(self, obj: Any) -> None:
        """Queue one JSON line for the child's stdin (written now as far as the pipe takes it)."""
        self.send_bytes((json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))

    def send_bytes(self, data: bytes) -> None:
        if self.stdin_fd is None:
            return
        self._outbox += data
        self.flush_stdin()

    @property
    def wants_write(self) -> bool:
        """Stdin has queued bytes the pipe could not take yet."""
        return self.stdin_fd is not None and bool(self._outbox)

    def flush_stdin(self) -> None:
        """Write what the pipe takes now; a child that closed its stdin (it is gone) gets nothing more."""
        while self._outbox and self.stdin_fd is not None:
            try:
                written = os.write(self.stdin_fd, self._outbox)
            except BlockingIOError:
                return
            except OSError:  # EPIPE: the CLI closed stdin or exited; its exit tells the loop the rest
                self._outbox.clear()
                self.close_stdin()
                return
            del self._outbox[:written]
        if self._close_when_flushed:
            self.close_stdin()

    def close_stdin(self, *, after_flush: bool = False) -> None:
        """Close the child's stdin (it sees EOF); with ``after_flush``, once what is queued is written."""
        if after_flush and self._outbox:
            self._close_when_flushed = True
            return
        self._outbox.clear()
        self.stdin_fd = None
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    # -- the process ----------------------------------------------------------
    def resize(self, cols: int, rows: int) -> None:
        """Tell the child's terminal its new size; the kernel sends it SIGWINCH."""
        with contextlib.suppress(OSError):
            set_window_size(self.master, cols, rows)

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def poll(self) -> int | None:
        """The exit code once the child has exited (it is reaped then), else None."""
        return self.proc.poll()

    def stop(self, grace: float = 3.0) -> int:
        """End the child: close stdin, then SIGTERM, then SIGKILL; return its exit code.

        A CLI running its own interface reads no pipe to close: it gets SIGHUP first, as when a terminal closes.
        """
        self.close_stdin()
        if self.interface and self.proc.poll() is None:
            self.signal_group(signal.SIGHUP)
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

        With a timeout, ``Popen.wait`` polls with sleeps of up to 50 ms; the
        pidfd wakes the moment the child exits.
        """
        if timeout is None or self.proc.returncode is not None or self.pidfd is None:
            return self.proc.wait(timeout=timeout)
        if not select.select([self.pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(self.proc.args, timeout)
        return self.proc.wait()

    def close(self) -> None:
        """Release the PTY, stdin and the pidfd (the process itself is :meth:`stop`'s)."""
        self.close_stdin()
        for fd in (self.master, self.pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.pidfd = None
        self.eof = True


def _tty_name(fd: int) -> str | None:
    try:
        return os.ttyname(fd)
    except OSError:
        return None
