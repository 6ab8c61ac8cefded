"""The telemetry exporter as a sink: calls leave for the OTLP receiver from a background thread, never from a turn.

The sink itself only sets a flag when the recorder (the sink before it) has
committed a call; a daemon thread claims the store's unexported calls and
sends them (:mod:`agentlaunch.usage.otel.export`). The thread starts once
the first prompt is on its way to the CLI, and it imports the exporter's
modules (``http.client``, the official OTLP messages of the ``otel`` extra) itself: nothing of telemetry is loaded
before the CLI runs, and a collector that is down, slow or failing costs a
turn nothing. Its first round also sends what earlier launches left behind.

At the session's end the launch waits at most ``AGENTLAUNCH_OTEL_EXIT_WAIT``
seconds (default 2) for this session's last calls, then gives back the calls
still claimed and says once, on stderr, what was not exported and why: a
later launch or ``agentlaunch usage export`` sends it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch.sinks import LaunchView, PricedCall, SessionClosed, SinkEvent, StateChanged

if TYPE_CHECKING:
    from agentlaunch.usage.otel.export import Exporter

RETRY_ROUND_S = 30.0
"""After a round whose retries ran out, the next one starts this much later (or with the next call)."""
MAX_ROUNDS = 10
"""Rounds after failures in one launch; then only a new call starts another."""


def export_enabled(setting: bool | None = None) -> bool:
    """Whether export is on: ``AGENTLAUNCH_OTEL`` when set (``1``/``true``/``yes``/``on``, anything else is off),
    else ``otel:`` of the global settings (``setting``). Read without importing anything of telemetry."""
    value = os.environ.get("AGENTLAUNCH_OTEL")
    if value is None or not value.strip():
        return bool(setting)
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _configured_exit_wait() -> float:
    """``AGENTLAUNCH_OTEL_EXIT_WAIT``, read here when the thread has not read the configuration yet (a busy machine:
    it is nice 10), else the launch would wait the default whatever the variable says."""
    from agentlaunch.errors import AgentlaunchError
    from agentlaunch.usage.otel.config import DEFAULT_EXIT_WAIT_S, read_config

    try:
        return read_config().exit_wait_s
    except AgentlaunchError:
        return DEFAULT_EXIT_WAIT_S  # the thread says what is wrong with it


class OtelExportSink:
    """Exports the launch's calls (and earlier launches' leftovers) over OTLP/HTTP, off the launch's loop."""

    def __init__(self, store_path: Path, agent_id: str) -> None:
        self.store_path, self.agent_id = store_path, agent_id
        self.session_id: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closing = False
        self._exporter: Exporter | None = None
        self.problem: str | None = None  # a configuration or store problem: nothing was exported
        self.remaining: int | None = None  # this session's calls not exported, as the thread last saw
        self.reported: list[str] = []

    # -- the launch's side (its loop: never waits) ------------------------------------------
    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        """Start the thread with the first prompt, wake it for each stored call, wait boundedly at the end."""
        self.session_id = launch.session_id
        if isinstance(event, StateChanged) and event.state == "thinking" or isinstance(event, PricedCall):
            self._start()
            if isinstance(event, PricedCall):
                self._wake.set()
        elif isinstance(event, SessionClosed):
            self.close()

    def _start(self) -> None:
        if self._thread is None:
            # One of the launch's two threads, for a measured reason: the exporter's modules take 44-70 ms to
            # import, and http.client blocks: one request to a receiver that accepts and never answers holds its
            # caller for the whole OTLP timeout (10 s by default; 5 attempts with backoff). On the loop, that
            # would freeze the relay and the chat; the thread only reads and marks the store.
            self._thread = threading.Thread(target=self._run, name="agentlaunch-otel", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Give the thread this session's last calls, wait for it at most the exit wait, say what stayed behind."""
        if self._thread is None:
            return
        self._closing = True
        wait = self._exporter.config.exit_wait_s if self._exporter is not None else _configured_exit_wait()
        self._stop.set()
        self._wake.set()
        self._thread.join(wait)
        if self._thread.is_alive():
            self._release_after_timeout()
        self._report()

    # -- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            # Background work: on Linux a thread has its own nice value, so the CLI (and the loop) go first.
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        try:
            from agentlaunch.errors import AgentlaunchError
            from agentlaunch.usage.otel.config import read_config
            from agentlaunch.usage.otel.export import ATTEMPTS, Exporter
            from agentlaunch.usage.otel.queue import ExportQueue
            from agentlaunch.usage.otel.wire import ExtraMissing, require
        except ImportError as exc:  # a broken install: never the launch's problem
            self.problem = f"cannot load the exporter ({exc})"
            return
        try:
            config = read_config()
            require()  # the otel extra's messages: without them, say what to install before claiming anything
            queue = ExportQueue(self.store_path)
        except ExtraMissing as exc:
            self.problem = f"{exc.message}; {exc.hint}"
            return
        except AgentlaunchError as exc:
            self.problem = exc.message
            return
        except Exception as exc:  # noqa: BLE001 (a bug here must never print a traceback into the person's terminal)
            self.problem = f"the exporter failed ({type(exc).__name__}: {exc})"
            return
        exporter = self._exporter = Exporter(queue, config, wait=self._stop.wait)
        rounds = 0
        try:
            while not self._closing and exporter.fatal is None:
                self._note_agent(queue)
                result = exporter.drain(attempts=ATTEMPTS, stop=lambda: self._closing)
                rounds = rounds + 1 if result.stopped else 0
                self._wake.wait(RETRY_ROUND_S if result.stopped and rounds < MAX_ROUNDS else None)
                self._wake.clear()
            if exporter.fatal is None and self.session_id is not None:
                # The end: this session's calls once more, quickly; the launch is waiting (boundedly).
                self._note_agent(queue)
                deadline = time.monotonic() + config.exit_wait_s
                ours = exporter.drain(session_id=self.session_id, deadline=deadline, attempts=1)
                if not ours.stopped:  # then what earlier launches left, in the time the wait has left (a launch
                    exporter.drain(deadline=deadline, attempts=1)  # shorter than the sender's start never reached it)
            self.remaining = queue.pending_count(self.session_id, ours_only=True) if self.session_id else 0
        except AgentlaunchError as exc:
            self.problem = exc.message
        except Exception as exc:  # noqa: BLE001 (as above: reported in one line, the calls stay for a later export)
            self.problem = f"the exporter failed ({type(exc).__name__}: {exc})"
        finally:
            queue.close()

    def _note_agent(self, queue: object) -> None:
        if self.session_id is not None:
            queue.note_agent_id(self.session_id, self.agent_id)  # type: ignore[attr-defined]

    # -- the end ------------------------------------------------------------------------------
    def _release_after_timeout(self) -> None:
        """The thread is still sending: free its claims so a later sender takes those calls at once."""
        exporter = self._exporter
        if exporter is None and self.problem:
            return  # it stopped on a configuration problem: that is what is said
        from agentlaunch.errors import AgentlaunchError
        from agentlaunch.usage.otel.queue import ExportQueue

        try:
            with ExportQueue(self.store_path, timeout=0.5) as queue:
                if exporter is not None:
                    queue.owner = exporter.queue.owner
                    queue.release()
                self.remaining = queue.pending_count(self.session_id, ours_only=True) if self.session_id else 0
        except AgentlaunchError:
            pass  # the lease frees them in minutes
        if exporter is not None:
            exporter.last_problem = exporter.last_problem or f"{exporter.config.where}: no answer before the exit wait"

    def _report(self) -> None:
        """Once, on stderr: a configuration problem, a refusal, the receiver's notes, and what was left behind."""
        lines: list[str] = []
        exporter = self._exporter
        if self.problem:
            then = (
                "no call was exported"
                if exporter is None
                else "what was not accepted stays for a later launch or `agentlaunch usage export`"
            )
            lines.append(f"{self.problem}; {then}")
        elif exporter is not None:
            lines.extend(exporter.notes)
            count = f"{self.remaining} call{'s' if self.remaining != 1 else ''} of this session"
            if exporter.fatal:
                left = (
                    f"; {count} not exported (once it accepts them, a later launch or `agentlaunch usage export` sends them)"
                    if self.remaining
                    else ""
                )
                lines.append(f"the receiver refused the export: {exporter.fatal}{left}")
            elif self.remaining:
                why = exporter.last_problem or "not sent yet"
                lines.append(f"{count} not exported ({why}); a later launch or `agentlaunch usage export` sends them")
        elif self.remaining:  # the thread was still loading the exporter when the exit wait ran out (a busy machine)
            count = f"{self.remaining} call{'s' if self.remaining != 1 else ''} of this session"
            lines.append(
                f"{count} not exported (the exporter had not started within the exit wait); "
                "a later launch or `agentlaunch usage export` sends them"
            )
        for line in lines:
            self.reported.append(line)
            sys.stderr.write(f"agentlaunch: telemetry: {line}\n")
        sys.stderr.flush()
