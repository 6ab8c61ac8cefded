""" "Needs you": a launch's sink that tells the person when an agent waits for them.

On each transition into ``asking`` (a permission prompt or a question waits),
into ``stalled`` (a turn that has heard nothing from its CLI for ``stall_timeout``),
and into ``waiting`` after a turn that took at least ``after`` seconds (a quick
answer needs no alarm: the person is still looking), it

- rings the terminal bell, when agentlaunch's own terminal (stderr) is one:
  inside tmux that also marks the window with tmux's bell flag;
- flags its tmux pane (when in one): the pane option
  ``@agentlaunch_pane_needs_you`` holds the agent and state until the agent is
  busy again, and the window option ``@agentlaunch_needs_you`` is computed
  from every pane of the window at once (``AGENT STATE, AGENT STATE``; empty
  when none waits), for a status bar to show. In a tiled window each agent
  keeps its own flag: one setting or clearing its flag never overwrites
  another's (each change recomputes the window's value from the panes, in the
  same tmux command list, so the last change always leaves the whole truth); and
- runs the notify command, when one is configured, with one JSON object on
  its stdin: ``agent``, ``state``, ``session``, ``working_dir``, ``pane``
  (``$TMUX_PANE`` or null), ``reason``, ``turn_seconds``.

The same state is not announced twice within ``debounce`` seconds. Nothing
here blocks the launch: the command is spawned (an argument list, never a
shell), its stdin written and closed, and it is reaped on later events and
at the session's end; one still running after ``timeout`` seconds is ended.
A command that cannot start or fails is reported once, never again for this
session.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentlaunch.sinks import SessionClosed, StateChanged

if TYPE_CHECKING:
    from agentlaunch.sinks import LaunchView, SinkEvent

BUSY = ("thinking", "tool", "retrying")
DEFAULT_AFTER = 30.0  # seconds a turn must take before its end is announced
DEBOUNCE = 5.0  # seconds within which the same state is not announced again
NOTIFY_TIMEOUT = 30.0  # seconds a notify command may run before it is ended
WINDOW_OPTION = "@agentlaunch_needs_you"
PANE_OPTION = "@agentlaunch_pane_needs_you"
"""The pane's own flag. Not the window option's name: a pane option that is unset reads the window's (tmux inherits)."""
WINDOW_FORMAT = f"#{{s/, $//:#{{P:#{{?#{{{PANE_OPTION}}},#{{{PANE_OPTION}}}#, ,}}}}}}"
"""Every flagged pane of the window, ``AGENT STATE, AGENT STATE`` (tmux expands it with ``set-option -F``)."""
Reporter = Callable[[str], None]


def report_on_stderr(message: str) -> None:
    """Tell the person (stderr is theirs: the answer goes to stdout)."""
    with contextlib.suppress(OSError, ValueError):
        print(f"agentlaunch: {message}", file=sys.stderr, flush=True)


class NeedsYou:
    """The sink: bell, tmux window flag and notify command on ``asking`` and on ``waiting`` after a long turn."""

    def __init__(
        self,
        *,
        notify: Sequence[str] | None = None,
        after: float = DEFAULT_AFTER,
        debounce: float = DEBOUNCE,
        bell: bool | None = None,
        pane: str | None = None,
        tmux: str | None = None,
        timeout: float = NOTIFY_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        report: Reporter = report_on_stderr,
    ) -> None:
        self.notify = list(notify) if notify else None
        self.after, self.debounce, self.timeout, self.clock, self.report = after, debounce, timeout, clock, report
        self.bell = _stderr_is_tty() if bell is None else bell
        self.pane = pane if pane is not None else os.environ.get("TMUX_PANE") or None
        self.tmux = tmux or (shutil.which("tmux") if self.pane and os.environ.get("TMUX") else None)
        self.running: list[tuple[subprocess.Popen[bytes], float]] = []
        self.announced: list[dict[str, Any]] = []  # what was announced (the JSON each notify got), for tests and logs
        self._turn_started: float | None = None
        self._last: dict[str, float] = {}
        self._flagged = False
        self._failed = False

    # -- the sink ------------------------------------------------------------------
    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        self.reap()
        if isinstance(event, SessionClosed):
            self.close()
            return
        if not isinstance(event, StateChanged):
            return
        now = self.clock()
        state = event.state
        if state in BUSY:
            if self._turn_started is None:
                self._turn_started = now
            self._unflag()
        elif state == "asking":
            took = now - self._turn_started if self._turn_started is not None else None
            self._announce(launch, "asking", event.reason or "a permission prompt or a question waits for you", took, now)
        elif state == "stalled":
            took = now - self._turn_started if self._turn_started is not None else None
            self._announce(launch, "stalled", event.reason or "its turn has heard nothing from the CLI", took, now)
        elif state == "waiting":
            started, self._turn_started = self._turn_started, None
            if started is not None and now - started >= self.after:
                took = now - started
                self._announce(launch, "waiting", f"the turn finished after {took:.0f}s; your turn", took, now)

    # -- announcing ------------------------------------------------------------------
    def _announce(self, launch: LaunchView, state: str, reason: str, took: float | None, now: float) -> None:
        last = self._last.get(state)
        if last is not None and now - last < self.debounce:
            return
        self._last[state] = now
        payload = {
            "agent": launch.spec.name,
            "state": state,
            "session": launch.session_id,
            "working_dir": str(launch.working_dir),
            "pane": self.pane,
            "reason": reason,
            "turn_seconds": None if took is None else round(took, 1),
        }
        self.announced.append(payload)
        if self.bell:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("\a")
                sys.stderr.flush()
        self._flag(f"{launch.spec.name} {state}")
        if self.notify and not self._failed:
            self._spawn(payload)

    def _spawn(self, payload: dict[str, Any]) -> None:
        assert self.notify is not None
        try:
            # Same session as agentlaunch (not a new one): the launch's reaper leaves it alone, this sink reaps it.
            proc = subprocess.Popen(
                self.notify, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True
            )
        except OSError as exc:
            self._fail(f"notify command {self.notify[0]!r} could not start ({exc.strerror or exc}); not run again this session")
            return
        assert proc.stdin is not None
        with contextlib.suppress(OSError):  # a command that does not read its stdin is its own business
            os.set_blocking(proc.stdin.fileno(), False)
            proc.stdin.write((json.dumps(payload, ensure_ascii=False) + "\n").encode("utf-8"))  # far below a pipe's 64 KiB
        with contextlib.suppress(OSError):
            proc.stdin.close()
        self.running.append((proc, self.clock()))

    def _fail(self, message: str) -> None:
        if not self._failed:
            self._failed = True
            self.report(message)

    def reap(self) -> None:
        """Collect finished notify commands (reporting a failure once); one that ran too long is killed (reaped later)."""
        name = repr(self.notify[0]) if self.notify else "?"
        still: list[tuple[subprocess.Popen[bytes], float]] = []
        for proc, started in self.running:
            code = proc.poll()
            if code is None:
                if self.clock() - started >= self.timeout:
                    with contextlib.suppress(OSError):
                        proc.kill()  # no wait here: the next event, or the session's end, collects it
                    self._fail(f"notify command {name} ran over {self.timeout:g}s and was ended")
                    started = float("-inf")  # reported; killed already
                still.append((proc, started))
            elif code != 0 and started != float("-inf"):
                self._fail(f"notify command {name} failed (exit {code}); not run again this session")
        self.running = still

    def close(self, grace: float = 1.0) -> None:
        """The session is over: give running notify commands ``grace`` seconds in all, kill the rest, clear the flag."""
        deadline = self.clock() + grace
        for proc, _ in self.running:
            try:
                proc.wait(timeout=max(deadline - self.clock(), 0.0))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)
        self.reap()
        self.running = []
        self._unflag()

    # -- tmux --------------------------------------------------------------------------
    def _flag(self, value: str) -> None:
        if self._tmux_set(value):
            self._flagged = True

    def _unflag(self) -> None:
        if self._flagged:
            self._flagged = False
            self._tmux_set(None)

    def _tmux_set(self, value: str | None) -> bool:
        if not (self.tmux and self.pane):
            return False
        own = ["set-option", "-p", "-t", self.pane, PANE_OPTION, value] if value else ["set-option", "-p", "-u", "-t", self.pane,
                                                                                  PANE_OPTION]  # fmt: skip
        # One command list: the pane's flag, then the window's value from all its panes' flags.
        args = [*own, ";", "set-option", "-w", "-F", "-t", self.pane, WINDOW_OPTION, WINDOW_FORMAT]
        try:
            # Quick and bounded; the tmux client finds its server through $TMUX. An argument list, never a shell.
            done = subprocess.run([self.tmux, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=2, check=False)  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0


def _stderr_is_tty() -> bool:
    try:
        return os.isatty(2)
    except OSError:
        return False
