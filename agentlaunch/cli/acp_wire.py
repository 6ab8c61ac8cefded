"""``agentlaunch acp``'s stdio framing: JSON-RPC lines in and out, with the bounds and answers the SDK leaves out.

The ``agent-client-protocol`` SDK's own stdio reader skips a line that is no JSON without a word, fails (and drops
the connection) on JSON that is no object, and reads a line of any length. This transport answers the first two
with JSON-RPC's parse error and invalid request (id null, said on stderr too) and refuses a line over
:data:`MAX_MESSAGE` bytes (read and dropped up to its end, answered as an invalid request). It imports no SDK
module: the connection takes any object with ``send``, ``receive`` and ``close``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import Any

MAX_MESSAGE = 8 << 20  # bytes of one JSON-RPC line from the client, at most (a prompt with embedded files fits)
READ_CHUNK = 1 << 16
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


class LineTransport:
    """Newline-delimited JSON-RPC on an asyncio reader and writer, bounded and answering what it cannot read."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limit: int = MAX_MESSAGE) -> None:
        self.reader, self.writer, self.limit = reader, writer, limit
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        async with self._lock:
            self.writer.write(data)
            await self.writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._line()
            if line is None:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                await self._refuse(PARSE_ERROR, "Parse error: not JSON")
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                await self._refuse(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 object")
                continue
            if "method" in message and not isinstance(message["method"], str):
                await self._refuse(INVALID_REQUEST, "Invalid Request: method is not a string", message.get("id"))
                continue
            return message

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

    async def _line(self) -> bytes | None:
        """The next line (None at the end of input); one over the limit is read to its end and refused."""
        chunks: list[bytes] = []
        size, too_long = 0, False
        while True:
            try:
                piece = await self.reader.readuntil(b"\n")
                ended = True
            except asyncio.IncompleteReadError as exc:
                if too_long or not (b"".join(chunks) + exc.partial).strip():
                    return None
                piece, ended = exc.partial, True
            except asyncio.LimitOverrunError as exc:  # the reader's buffer is full, no newline yet: take it
                piece, ended = await self.reader.readexactly(exc.consumed), False
            size += len(piece)
            if size > self.limit:
                too_long, chunks = True, []  # dropped up to its end
            elif not too_long:
                chunks.append(piece)
            if not ended:
                continue
            if too_long:
                await self._refuse(INVALID_REQUEST, f"Invalid Request: a message over {self.limit} bytes")
                chunks, size, too_long = [], 0, False
                continue
            return b"".join(chunks)

    async def _refuse(self, code: int, message: str, request_id: Any = None) -> None:
        sys.stderr.write(f"agentlaunch acp: {message}\n")
        sys.stderr.flush()
        await self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


async def stdio_transport(limit: int = MAX_MESSAGE) -> LineTransport:
    """The transport on this process's stdin and stdout (copies of them: closing it leaves sys.stdout usable for the
    exit)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK)
    stdin, stdout = os.fdopen(os.dup(0), "rb", buffering=0), os.fdopen(os.dup(1), "wb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return LineTransport(reader, writer, limit)
