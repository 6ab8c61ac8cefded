"""The user's terminal while a provider's own interface runs in it: raw mode, and getting it back.

:func:`raw_terminal` puts the terminal in raw mode (every key, Ctrl-C and
Ctrl-Z included, reaches the relay as bytes) and gives the saved settings back
on every way out, exceptions and signals included. A CLI that exits normally
undoes what it switched on (the alternate screen, mouse reports, bracketed
paste); one that crashes or is killed does not, so :class:`ScreenModes`
follows the mode switches in the CLI's output and :meth:`ScreenModes.reset`
says what to send to switch off what is still on.

:class:`ScreenModes` also knows whether the output stands between two escape
sequences and two characters (:attr:`ScreenModes.at_boundary`): only there may
agentlaunch add bytes of its own (a bell, a title) without breaking the CLI's.

Stdlib only.
"""

from __future__ import annotations

import contextlib
import os
import re
import termios
import tty
from collections.abc import Iterator
from typing import Any

MIN_COLS, MIN_ROWS = 20, 5
"""The smallest terminal a provider's interface is started in (they draw boxes and a prompt line)."""

# DEC private modes a TUI switches on and must switch off again, with the sequence that does it.
# 1049/1047/47: alternate screen; 25: the cursor (hidden when *off*); 1000-1006, 1015: mouse reports;
# 2004: bracketed paste; 1004: focus events; 2026: synchronized output.
_OFF_WHEN_SET = (47, 1047, 1049, 1000, 1001, 1002, 1003, 1005, 1006, 1015, 1004, 2004, 2026)
_PRIVATE_MODE = re.compile(rb"\x1b\[\?([0-9;]+)([hl])")
_KITTY_PUSH = re.compile(rb"\x1b\[>[0-9]*u")  # kitty keyboard protocol: push flags
_KITTY_POP = re.compile(rb"\x1b\[<[0-9]*u")
_MODIFY_KEYS = re.compile(rb"\x1b\[>4;([0-9]+)m")  # xterm modifyOtherKeys
TAIL_LIMIT = 64  # bytes of an unfinished escape sequence kept to scan with the next chunk


class ScreenModes:
    """The terminal modes the CLI's output switched on and not off yet, and where the output stands."""

    def __init__(self) -> None:
        self.on: set[int] = set()
        self.cursor_hidden = False
        self.kitty_depth = 0
        self.modify_keys = False
        self._tail = b""  # an escape sequence cut by the chunk's end
        self._in_string = False  # inside an OSC/DCS/APC string, which may run over many chunks
        self._utf8_open = False

    def feed(self, chunk: bytes) -> None:
        """Follow one chunk of the CLI's output (cheap when it holds no escape: the common case)."""
        if not chunk:
            return
        data = self._tail + chunk if self._tail else chunk
        if b"\x1b" in data:
            for match in _PRIVATE_MODE.finditer(data):
                on = match.group(2) == b"h"
                for part in match.group(1).split(b";"):
                    self._mode(int(part) if part.isdigit() else -1, on)
            self.kitty_depth += len(_KITTY_PUSH.findall(data))
            self.kitty_depth = max(self.kitty_depth - len(_KITTY_POP.findall(data)), 0)
            for match in _MODIFY_KEYS.finditer(data):
                self.modify_keys = match.group(1) != b"0"
        self._tail = b""
        self._track_boundary(data)

    def _mode(self, mode: int, on: bool) -> None:
        if mode == 25:
            self.cursor_hidden = not on
        elif mode in _OFF_WHEN_SET:
            (self.on.add if on else self.on.discard)(mode)

    def _track_boundary(self, data: bytes) -> None:
        last = data.rfind(b"\x1b")
        if self._in_string:
            # A string (a title, say) ends with BEL or ESC \ ; until then nothing may be added.
            if b"\x07" in data or b"\x1b\\" in data:
                self._in_string = False
                end = max(data.rfind(b"\x07"), data.rfind(b"\x1b\\") + 1)
                data = data[end + 1 :]
                last = data.rfind(b"\x1b")
            else:
                return
        if last >= 0:
            seq = data[last:]
            state = _sequence_state(seq)
            if state == "open":
                self._tail = seq[-TAIL_LIMIT:]
            elif state == "string":
                self._in_string = True
        self._utf8_open = _utf8_cut(data)

    @property
    def at_boundary(self) -> bool:
        """The output ends between escape sequences and between characters."""
        return not self._tail and not self._in_string and not self._utf8_open

    def reset(self) -> bytes:
        """What switches off every mode still on (nothing when the CLI left the terminal as it found it)."""
        parts: list[bytes] = []
        if not self.at_boundary:
            parts.append(b"\x18")  # CAN: abandons an escape sequence the CLI was cut off in
        for mode in sorted(self.on - {47, 1047, 1049}):
            parts.append(b"\x1b[?%dl" % mode)
        if self.kitty_depth:
            parts.append(b"\x1b[<%du" % self.kitty_depth)
        if self.modify_keys:
            parts.append(b"\x1b[>4;0m")
        if self.on & {47, 1047, 1049}:
            parts.append(b"\x1b[?1049l")  # back to the normal screen, where the shell's text is
        if parts or self.cursor_hidden:
            parts.append(b"\x1b[0m")
        if self.cursor_hidden:
            parts.append(b"\x1b[?25h")
        return b"".join(parts)


def _sequence_state(seq: bytes) -> str:
    """Whether the escape sequence at the start of ``seq`` is done, still open, or opens a string."""
    if len(seq) < 2:
        return "open"
    kind = seq[1:2]
    if kind == b"[":
        for byte in seq[2:]:
            if 0x40 <= byte <= 0x7E:
                return "done"
        return "open"
    if kind in (b"]", b"P", b"X", b"^", b"_"):
        body = seq[2:]
        return "done" if (b"\x07" in body or b"\x1b\\" in seq[1:]) else "string"
    if kind in (b"(", b")", b"*", b"+", b"#", b" ", b"%"):
        return "done" if len(seq) >= 3 else "open"
    return "done"


def _utf8_cut(data: bytes) -> bool:
    """``data`` ends inside a multi-byte UTF-8 character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return False
        if byte >= 0xC0:  # a lead byte: how many bytes its character takes
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return back < need
    return False


TermMode = list[Any]  # what termios.tcgetattr gives


def saved_mode(fd: int) -> TermMode | None:
    """The terminal settings of ``fd``, or None when it is not a terminal."""
    try:
        return termios.tcgetattr(fd)
    except termios.error:
        return None


def restore_mode(fd: int, saved: TermMode | None) -> None:
    """Give ``fd`` back the settings ``saved`` (never raises: the terminal may be gone already)."""
    if saved is None:
        return
    with contextlib.suppress(termios.error, OSError):
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``, waiting while it cannot take more (never raises on a gone terminal)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            import select

            select.select([], [fd], [], 1.0)
            continue
        except OSError:
            return  # EIO: the terminal hung up; nothing more can be shown
        view = view[written:]


@contextlib.contextmanager
def raw_terminal(in_fd: int, out_fd: int, modes: ScreenModes) -> Iterator[TermMode | None]:
    """Raw mode on ``in_fd`` for the block; afterwards the modes the CLI left on are switched off and the
    settings restored, whatever ended the block."""
    saved = saved_mode(in_fd)
    try:
        if saved is not None:
            tty.setraw(in_fd, termios.TCSADRAIN)
        yield saved
    finally:
        leftover = modes.reset()
        if leftover:
            write_all(out_fd, leftover)
        restore_mode(in_fd, saved)
