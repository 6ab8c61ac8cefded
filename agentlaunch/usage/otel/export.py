"""Sending the store's unexported calls: claim a batch, send each signal, mark what was accepted, retry with backoff.

Used by the launch's background exporter (:mod:`agentlaunch.usage.otel.sink`)
and by ``agentlaunch usage export``. A call is marked exported for a signal
only after the receiver accepted that signal's request; what was not accepted
is released for a later sender. Retries are bounded (attempts and deadline),
with exponential backoff and jitter, after the receiver's ``Retry-After`` when
it gives one. A refusal that retrying cannot fix (a 4xx, a TLS failure) stops
the exporter and is kept as its ``fatal`` problem, to be reported once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from agentlaunch.errors import AgentlaunchError, ExitCode
from agentlaunch.usage.otel.config import OtelConfig
from agentlaunch.usage.otel.payload import TOKEN_BUCKETS, logs_request, metrics_request
from agentlaunch.usage.otel.queue import ExportQueue, PendingCall
from agentlaunch.usage.otel.request import Answer, post
from agentlaunch.usage.otel.wire import to_json, to_protobuf

BATCH = 200
ATTEMPTS = 5
BACKOFF_S = 0.5
BACKOFF_CAP_S = 8.0

Wait = Callable[[float], bool]
"""Sleep up to the given seconds; True when told to stop meanwhile (the launch is closing)."""


class ExportFailed(AgentlaunchError):
    """``agentlaunch usage export`` could not send everything (exit 1); the rest stays for a later try."""

    exit_code = ExitCode.TURN_FAILED


@dataclass
class DrainResult:
    """What one :meth:`Exporter.drain` did: calls fully exported, and the problem that stopped it, if any."""

    exported: int = 0
    problem: str = ""
    stopped: bool = False  # a failure ended it (retries used up, deadline, or a refusal)


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


class Exporter:
    """Exports batches from ``queue`` as ``config`` says."""

    def __init__(self, queue: ExportQueue, config: OtelConfig, *, wait: Wait = _sleep, attempts: int = ATTEMPTS) -> None:
        self.queue, self.config, self.wait, self.attempts = queue, config, wait, attempts
        self.fatal: str | None = None  # a refusal: nothing more is sent by this exporter
        self.notes: list[str] = []  # partial successes and other messages worth telling once
        self.last_problem = ""

    def drain(
        self,
        *,
        session_id: str | None = None,
        deadline: float | None = None,
        attempts: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> DrainResult:
        """Send batches until none is left (of ``session_id``, else all), a batch fails, ``deadline`` (monotonic)
        passes, or ``stop()`` says so."""
        result = DrainResult()
        while self.fatal is None and not (stop is not None and stop()):
            if deadline is not None and time.monotonic() >= deadline:
                result.stopped, result.problem = True, self.last_problem or "out of time"
                break
            batch = self.queue.claim(BATCH, session_id=session_id)
            if not batch:
                break
            try:
                ok = self._send_batch(batch, deadline, self.attempts if attempts is None else attempts)
            finally:
                self.queue.release([p.call.id for p in batch if p.call.id is not None])
            if not ok:
                result.stopped, result.problem = True, self.fatal or self.last_problem
                break
            result.exported += len(batch)
        if self.fatal is not None:
            result.stopped, result.problem = True, self.fatal
        return result

    def _send_batch(self, batch: list[PendingCall], deadline: float | None, attempts: int) -> bool:
        """Both signals of ``batch``, each marked once accepted; False when one was not."""
        for signal, message in (("metrics", "ExportMetricsServiceRequest"), ("logs", "ExportLogsServiceRequest")):
            todo = [p for p in batch if (p.needs_metrics if signal == "metrics" else p.needs_logs)]
            if not todo:
                continue
            target = self.config.targets.get(signal)
            if target is None:  # OTEL_<SIGNAL>_EXPORTER=none: nothing to send, nothing to wait for
                self.queue.mark([p.call.id for p in todo if p.call.id is not None], signal)
                continue
            if signal == "metrics":  # cumulative points: the store's totals of the batch's series (payload.py)
                ids = [p.call.id for p in todo if p.call.id is not None]
                payload = metrics_request(todo, self.config, self.queue.series_totals(ids, TOKEN_BUCKETS))
            else:
                payload = logs_request(todo, self.config)
            body = to_json(message, payload) if target.json else to_protobuf(message, payload)
            answer = self._post_with_retries(signal, body, deadline, attempts)
            if not answer.accepted:
                return False
            if answer.problem and answer.problem not in self.notes:
                self.notes.append(answer.problem)
            self.queue.mark([p.call.id for p in todo if p.call.id is not None], signal)
        return True

    def _post_with_retries(self, signal: str, body: bytes, deadline: float | None, attempts: int) -> Answer:
        target = self.config.targets[signal]
        answer = Answer(False, retryable=True, problem="not sent")
        for attempt in range(max(1, attempts)):
            answer = post(target, body, self.config)
            if answer.accepted:
                self.last_problem = ""
                return answer
            self.last_problem = answer.problem
            if not answer.retryable:
                self.fatal = answer.problem
                return answer
            if attempt + 1 >= attempts:
                break
            delay = answer.retry_after if answer.retry_after is not None else _backoff(attempt)
            if deadline is not None and time.monotonic() + delay >= deadline:
                break
            if self.wait(delay):
                break
        return answer


def _backoff(attempt: int) -> float:
    """Exponential, capped, with jitter (so many agents that lost one collector do not come back in step)."""
    return min(BACKOFF_CAP_S, BACKOFF_S * 2.0**attempt) * random.uniform(0.75, 1.25)
