"""A slow network in front of the test sshd: a TCP proxy on 127.0.0.1 that hands each chunk on ``delay`` seconds after
it came (each direction), and holds every byte while :attr:`SlowProxy.held` is set (a host that does not answer
yet). A host reached through it (:meth:`~tests.support.ssh_server.SshServer.host_via`) has a round trip of about
``2 × delay`` more than the server's own; the bytes it carried are counted (the bench's "no SSH traffic while idle").

Latency, not bandwidth: chunks are read as they come and each is written when its time is due, so a burst is delayed
once, not once per chunk.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time


class SlowProxy:
    """Listening on a free port of 127.0.0.1 from construction until :meth:`close`; each connection forwarded to
    ``127.0.0.1:target``."""

    def __init__(self, target: int, delay: float, *, held: bool = False) -> None:
        self.target, self.delay = target, delay
        self.released = threading.Event()
        if not held:
            self.released.set()
        self.carried = 0  # bytes handed on, both directions
        self.connections = 0
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = int(self.listener.getsockname()[1])
        self.sockets: list[socket.socket] = [self.listener]
        self.closed = False
        threading.Thread(target=self._accept, name="slow-proxy", daemon=True).start()

    def release(self) -> None:
        """Let the bytes held so far (and every later one) through, each after its delay."""
        self.released.set()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, server]
                self.connections += 1
            for source, sink in ((client, server), (server, client)):
                chunks: queue.Queue[tuple[float, bytes]] = queue.Queue()
                threading.Thread(target=self._read, args=(source, chunks), daemon=True).start()
                threading.Thread(target=self._write, args=(sink, chunks), daemon=True).start()

    def _read(self, source: socket.socket, chunks: queue.Queue[tuple[float, bytes]]) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            chunks.put((time.monotonic() + self.delay, data))
            if not data:
                return

    def _write(self, sink: socket.socket, chunks: queue.Queue[tuple[float, bytes]]) -> None:
        while True:
            due, data = chunks.get()
            self.released.wait()
            time.sleep(max(due - time.monotonic(), 0))
            if not data:  # the other side closed: so does this one
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            try:
                sink.sendall(data)
            except OSError:
                return
            with self.lock:
                self.carried += len(data)

    def close(self) -> None:
        """Stop listening and end every connection through it."""
        self.closed = True
        self.released.set()
        with self.lock:
            for sock in self.sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
