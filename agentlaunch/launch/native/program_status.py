"""OSC 7501, the "program status" escape: the CLI's own word on its state, read from its output by the relay.

Measured on the pinned CLIs (docs/status-and-tmux.md, "The CLI's own report"):

- Claude Code 2.1.332 writes the probe ``ESC ] 7501 ; ? BEL`` once at start (followed by ``ESC [ c``, its fence)
  and reports only when the terminal answered it with an OSC 7501 whose data starts with ``?``
  (``ESC ] 7501 ; ? ESC \\`` here); no answer (tmux gives none), no report.
- Codex 0.171.0 never probes: it reports on any terminal.
- Gemini 0.61.0 writes neither.
- A report is ``ESC ] 7501 ; state=S:app=A[:id=I][:kind=K][:progress=N][:title=B64][:msg=B64]`` ended by BEL
  (Claude) or ``ESC \\`` (Codex): fields split by ``:`` (not ``;``), ``title`` and ``msg`` base64. ``state`` is
  ``idle``, ``working``, ``blocked`` (``kind`` permission, question or auth), ``done``, ``error`` or ``clear``;
  a report with an ``id`` is about one of the CLI's children (a subagent), never the agent itself.

:class:`ProgramStatus` sits on both streams of the relay: it takes the probe and the reports out of the CLI's
output (the outer terminal sees neither: agentlaunch passes one merged report on itself, and only to a terminal
that answered its own probe), answers the probe for the CLI, and takes the outer terminal's answer out of the
person's keys. Every sequence is bounded (:data:`MAX_SEQUENCE`): a longer or malformed one is dropped, never
passed on, never raised on.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from agentlaunch.datarecord import datarecord

PREFIX = b"\x1b]7501;"
PROBE = PREFIX + b"?\x07"  # what agentlaunch asks the outer terminal (as Claude Code asks)
PROBE_REPLY = PREFIX + b"?\x1b\\"  # the answer the CLI gets: an OSC 7501 whose data starts with "?"
STATES = frozenset({"idle", "working", "blocked", "done", "error", "clear"})
KINDS = frozenset({"permission", "question", "auth"})
MAX_SEQUENCE = 4096  # bytes of one OSC 7501 sequence; a longer one (an unterminated or a huge msg) is dropped
MAX_TEXT = 300  # characters kept of a decoded title or msg
_BEL, _ESC, _CAN, _SUB = 0x07, 0x1B, 0x18, 0x1A


@datarecord(frozen=True)
class Report:
    """One program-status report of the CLI about itself."""

    state: str
    app: str = ""
    kind: str | None = None
    progress: int | None = None
    title: str | None = None
    msg: str | None = None


def _text(value: str) -> str | None:
    """A base64 field decoded to printable text (control characters and escapes taken out), or None when bad."""
    try:
        raw = base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return None
    text = "".join(ch for ch in raw.decode("utf-8", "replace") if ch.isprintable())
    return text[:MAX_TEXT] or None


def parse_report(data: bytes) -> Report | None:
    """The report in an OSC 7501's data (after ``7501;``), or None: a probe, another id's, a malformed one."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return None
    fields: dict[str, str] = {}
    for part in text.replace(";", ":").split(":"):
        key, eq, value = part.partition("=")
        if eq and key not in fields:
            fields[key] = value
    state = fields.get("state", "")
    if state not in STATES or "id" in fields:  # an id: one of the CLI's children, not the agent
        return None
    kind = fields.get("kind")
    progress = fields.get("progress", "")
    return Report(
        state=state,
        app=fields.get("app", "")[:40],
        kind=kind if kind in KINDS else None,
        progress=min(int(progress), 100) if progress.isdigit() and len(progress) <= 3 else None,
        title=_text(fields["title"]) if "title" in fields else None,
        msg=_text(fields["msg"]) if "msg" in fields else None,
    )


def _held_prefix(data: bytes) -> int:
    """How many bytes at the end of ``data`` may begin an OSC 7501 (held until the next read says)."""
    for size in range(min(len(PREFIX) - 1, len(data)), 0, -1):
        if PREFIX.startswith(data[-size:]):
            return size
    return 0


class SequenceFilter:
    """Takes OSC 7501 sequences out of a byte stream read in pieces; ``on_data`` gets each one's data."""

    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data
        self._held = b""
        self._dropping = False  # inside a sequence too long to keep: dropped up to its end

    def feed(self, chunk: bytes) -> bytes:
        """``chunk`` without its OSC 7501 sequences (a piece of one at the end is held for the next)."""
        buf, self._held = self._held + chunk, b""
        out = bytearray()
        i = 0
        if self._dropping:
            end = self._end(buf, 0)
            if end is None:
                return b""
            self._dropping, i = False, end[1]
        while i < len(buf):
            start = buf.find(PREFIX, i)
            if start < 0:
                keep = _held_prefix(buf[i:])
                out += buf[i : len(buf) - keep]
                self._held = buf[len(buf) - keep :]
                break
            out += buf[i:start]
            body = start + len(PREFIX)
            end = self._end(buf, body)
            if end is None:  # unterminated so far
                if len(buf) - start > MAX_SEQUENCE:
                    self._dropping = True
                else:
                    self._held = buf[start:]
                break
            stop, i, complete = end[0], end[1], end[2]
            if complete and stop - start <= MAX_SEQUENCE:
                self.on_data(bytes(buf[body:stop]))
        return bytes(out)

    @staticmethod
    def _end(buf: bytes, at: int) -> tuple[int, int, bool] | None:
        """Where the sequence from ``at`` ends: (its data's end, the next byte, ended properly), or None."""
        for k in range(at, len(buf)):
            byte = buf[k]
            if byte == _BEL:
                return k, k + 1, True
            if byte in (_CAN, _SUB):
                return k, k + 1, False
            if byte == _ESC:
                if k + 1 == len(buf):
                    return None
                if buf[k + 1] == ord("\\"):
                    return k, k + 2, True
                return k, k, False  # another escape begins: this one was cut short (dropped)
        return None


class ProgramStatus:
    """OSC 7501 between the CLI and the outer terminal (see the module's doc)."""

    def __init__(self, on_report: Callable[[Report], None], term: str = "") -> None:
        self.on_report = on_report
        self.answer_cli: Callable[[bytes], None] | None = None  # the relay's way to the CLI's input
        # The Linux console takes an OSC it does not know as text: it is never asked (nor told) anything.
        self.ask_outer = not term.startswith("linux")
        self.probed = False  # the CLI asked
        self.outer_answered = False  # the outer terminal answered agentlaunch's probe: it speaks OSC 7501
        self._output = SequenceFilter(self._from_cli)
        self._keys = SequenceFilter(self._from_terminal)

    def output(self, chunk: bytes) -> bytes:
        """The CLI's output, its probe answered and its reports read and taken out."""
        return self._output.feed(chunk)

    def keys(self, data: bytes) -> bytes:
        """The person's keys, the outer terminal's answer to agentlaunch's probe taken out."""
        return self._keys.feed(data) if PREFIX in data else data  # a lone Esc key is never held

    def _from_cli(self, data: bytes) -> None:
        if data.startswith(b"?"):
            self.probed = True
            if self.answer_cli is not None:
                self.answer_cli(PROBE_REPLY)
            return
        report = parse_report(data)
        if report is not None:
            self.on_report(report)

    def _from_terminal(self, data: bytes) -> None:
        if data.startswith(b"?"):
            self.outer_answered = True


def encode(report: Report, app: str = "agentlaunch") -> bytes:
    """``report`` as an OSC 7501 for a terminal that answered the probe (the CLI's own form, BEL-ended)."""
    fields = [f"state={report.state}", f"app={app}"]
    if report.state == "blocked" and report.kind:
        fields.append(f"kind={report.kind}")
    if report.progress is not None and report.state in ("working", "blocked"):
        fields.append(f"progress={report.progress}")
    for key, value in (("title", report.title), ("msg", report.msg)):
        if value:
            fields.append(f"{key}={base64.b64encode(value.encode('utf-8')).decode('ascii')}")
    return PREFIX + ":".join(fields).encode("ascii") + b"\x07"
