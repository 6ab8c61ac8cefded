""" "Needs you": a launch's sink that tells the person when an agent waits for them.

On each transition into a state :data:`agentlaunch.fleet.states.ANNOUNCED` names (``asking``, a permission prompt or
a question waits; ``stalled``, a turn that has heard nothing from its CLI for ``stall_timeout``; ``paused``, a spent
budget; not ``retrying``, which needs you too but usually recovers), and into
``waiting`` after a turn that took at least ``after`` seconds (a quick answer needs no alarm: the person is still
looking), it

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
  (``$TMUX_PANE`` or null), ``reason``, ``turn_seconds``, and for a question
  ``agentlaunch answer`` can answer, ``question`` (its id, tool, input and
  options) and ``answer`` (each option's command, an argument list); else
- shows a desktop notification with ``notify-send`` (``desktop``: its path, when
  it is on PATH, a desktop session is there and the settings leave it on), with
  Allow / Deny buttons for such a question where notify-send takes ``--action``:
  a click runs that option's command (:mod:`agentlaunch.live.needs_you_answer`), looked for every
  :data:`CLICK_LOOK` seconds on the launch's loop while such a notification is up (an asking session may say
  nothing else until it is answered).

``stalled`` (a busy agent that gave no sign of progress for long) is announced
as ``asking`` is. Only a change into a state is announced (the same state
named again is not), and the same state not twice within ``debounce``
seconds. Nothing here blocks the launch: the command is spawned (an argument
list, never a shell), its stdin written and closed, and it is reaped on later
events and at the session's end; one still running after ``timeout`` seconds
is ended. A command that cannot start or fails is reported once, never again
for this session; ``notify-send`` failing (no notification daemon) is not
reported, only not run again.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from shutil import which
from typing import TYPE_CHECKING, Any

from agentlaunch.fleet.states import ANNOUNCED
from agentlaunch.live.needs_you_answer import QuestionOpen, action_args, answer_commands, takes_actions
from agentlaunch.sinks import SessionClosed, StateChanged
from agentlaunch.visible import visible

if TYPE_CHECKING:
    from agentlaunch.sinks import Cancellable, LaunchView, SinkEvent

BUSY = ("thinking", "tool", "retrying")
_SAID = {
    "asking": "a permission prompt or a question waits for you",
    "stalled": "its turn has heard nothing from the CLI",
    "paused": "a budget is spent: raise the limit, or agentlaunch resume-budget AGENT",
}
ALARMS = {state: _SAID[state] for state in ANNOUNCED}
"""The states announced on every change into them (:data:`~agentlaunch.fleet.states.ANNOUNCED`, decided with "needs
you" in one place), with the reason said when the event gives none."""
DESKTOP_COMMAND = "notify-send"
DESKTOP_ENV = ("DISPLAY", "WAYLAND_DISPLAY")  # a desktop session: without one notify-send has nowhere to show
DEFAULT_AFTER = 30.0  # seconds a turn must take before its end is announced
DEBOUNCE = 5.0  # seconds within which the same state is not announced again
NOTIFY_TIMEOUT = 30.0  # seconds a notify command may run before it is ended
CLICK_LOOK = 0.5  # seconds between two looks at a notification waiting for a click
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
        desktop: str | None = None,
    ) -> None:
        self.notify = list(notify) if notify else None
        self.desktop = desktop  # notify-send's path: used when no notify command is configured
        self.after, self.debounce, self.timeout, self.clock, self.report = after, debounce, timeout, clock, report
        self.bell = _stderr_is_tty() if bell is None else bell
        self.pane = pane if pane is not None else os.environ.get("TMUX_PANE") or None
        self.tmux = tmux or (which("tmux") if self.pane and os.environ.get("TMUX") else None)
        self.running: list[tuple[subprocess.Popen[bytes], float, bool]] = []  # (process, started, is notify-send)
        self.announced: list[dict[str, Any]] = []  # what was announced (the JSON each notify got), for tests and logs
        self._turn_started: float | None = None
        self._last: dict[str, float] = {}
        self._flagged = False
        self._failed = False
        self._desktop_failed = False
        self._seen: str | None = None  # the last state an event named: only a change into a state is announced
        self._question: dict[str, Any] | None = None  # the open question agentlaunch answer can answer
        self._asked_bare = False  # asking was announced before its question came (Codex's status, then its request)
        self._question_said: object = None  # the id of the last question announced (a new one is never debounced)
        self._actions: bool | None = None  # notify-send takes --action (asked once)
        self.answering: list[subprocess.Popen[bytes]] = []  # answer commands a notification's button ran
        self.clicks: list[tuple[subprocess.Popen[bytes], dict[str, Any]]] = []  # notifications waiting for a click
        self._looking: Cancellable | None = None  # the next look at them

    # -- the sink ------------------------------------------------------------------
    def event(self, event: SinkEvent, launch: LaunchView) -> None:
        self.reap()
        if isinstance(event, SessionClosed):
            self.close()
            return
        if isinstance(event, QuestionOpen):
            self._question = event.question
            if self._seen == "asking" and self._asked_bare:  # announced without it: again, now with the question
                self._last.pop("asking", None)
                self._announce(launch, "asking", str(event.question.get("asks") or ALARMS["asking"]), None, self.clock())
            return
        if not isinstance(event, StateChanged):
            return
        now = self.clock()
        state, before, self._seen = event.state, self._seen, event.state
        if state != "asking":
            self._question = None
        if state == before and state in (*ALARMS, "waiting"):
            return  # the same state said again (a record's refresh): no transition, nothing to announce
        if state in BUSY:
            if self._turn_started is None:
                self._turn_started = now
            self._unflag()
        elif state in ALARMS:
            took = now - self._turn_started if self._turn_started is not None else None
            self._announce(launch, state, event.reason or ALARMS[state], took, now)
        elif state == "waiting":
            started, self._turn_started = self._turn_started, None
            if started is not None and now - started >= self.after:
                took = now - started
                self._announce(launch, "waiting", f"the turn finished after {took:.0f}s; your turn", took, now)

    # -- announcing ------------------------------------------------------------------
    def _announce(self, launch: LaunchView, state: str, reason: str, took: float | None, now: float) -> None:
        last = self._last.get(state)
        question = self._question if state == "asking" else None
        news = question is not None and question.get("id") != self._question_said  # another question: its id is news
        if last is not None and now - last < self.debounce and not news:
            return
        if question is not None:
            self._question_said = question.get("id")
        self._last[state] = now
        payload: dict[str, Any] = {
            "agent": launch.spec.name,
            "state": state,
            "session": launch.session_id,
            "working_dir": str(launch.working_dir),
            "pane": self.pane,
            "reason": reason,
            "turn_seconds": None if took is None else round(took, 1),
        }
        self._asked_bare = state == "asking" and question is None
        if question is not None:
            payload.update(question=question, answer=answer_commands(launch.spec.name, question))
        self.announced.append(payload)
        if self.bell:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("\a")
                sys.stderr.flush()
        self._flag(f"{launch.spec.name} {state}")
        if self.notify:
            if not self._failed:
                self._spawn(payload)
        elif self.desktop and not self._desktop_failed:
            self._show_on_desktop(payload)
            self._look_later(launch)

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
        self.running.append((proc, self.clock(), False))

    def _show_on_desktop(self, payload: dict[str, Any]) -> None:
        """``notify-send TITLE BODY``: who needs you and why (``--`` first: a reason may begin with a dash)."""
        assert self.desktop is not None
        urgency = "critical" if payload["state"] in ALARMS else "normal"
        title = f"{payload['agent']} {'needs you' if payload['state'] == 'asking' else payload['state']}"
        # Servers that show body markup would take a tool input's <b> or <a href> as theirs: it is escaped.
        body = html.escape(f"{payload['reason']}\n{payload['working_dir']}", quote=False)
        argv = [
            self.desktop,
            "--app-name=agentlaunch",
            f"--urgency={urgency}",
            "--",
            visible(title),
            visible(body, keep_newlines=True),
        ]
        buttons = action_args(payload.get("question"))
        if buttons and self._actions is None:
            self._actions = takes_actions(self.desktop)
        buttons = buttons if self._actions else []
        argv[1:1] = buttons
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if buttons else subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError:
            self._desktop_failed = True  # found on PATH at the start, gone now: not tried again, nothing to tell
            return
        if buttons:  # it waits for a click: its answer is read when it ends (reap), never killed for taking long
            self.clicks.append((proc, payload))
            return
        self.running.append((proc, self.clock(), True))

    def _look_later(self, launch: LaunchView) -> None:
        """Look at the notifications waiting for a click soon (and on, while one waits): a click is answered then."""
        if self.clicks and self._looking is None:
            self._looking = launch.call_later(CLICK_LOOK, lambda: self._look(launch))

    def _look(self, launch: LaunchView) -> None:
        self._looking = None
        self._clicked()
        self._look_later(launch)

    def _clicked(self) -> None:
        """A question's notification that ended: the button clicked (its name on stdout) runs its answer command."""
        still = []
        for proc, payload in self.clicks:
            if proc.poll() is None:
                still.append((proc, payload))
                continue
            chosen = (proc.stdout.read() if proc.stdout is not None else b"").decode("utf-8", "replace").strip()
            if proc.stdout is not None:
                proc.stdout.close()
            command = payload.get("answer", {}).get(chosen)
            if command:
                with contextlib.suppress(OSError):
                    self.answering.append(subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        self.clicks = still
        self.answering = [proc for proc in self.answering if proc.poll() is None]

    def _fail(self, message: str) -> None:
        if not self._failed:
            self._failed = True
            self.report(message)

    def reap(self) -> None:
        """Collect finished notify commands (reporting a failure once); one that ran too long is killed (reaped later)."""
        self._clicked()
        name = repr(self.notify[0]) if self.notify else "?"
        still: list[tuple[subprocess.Popen[bytes], float, bool]] = []
        for proc, started, desktop in self.running:
            code = proc.poll()
            if code is None:
                if self.clock() - started >= self.timeout:
                    with contextlib.suppress(OSError):
                        proc.kill()  # no wait here: the next event, or the session's end, collects it
                    if desktop:
                        self._desktop_failed = True
                    else:
                        self._fail(f"notify command {name} ran over {self.timeout:g}s and was ended")
                    started = float("-inf")  # reported; killed already
                still.append((proc, started, desktop))
            elif code != 0 and started != float("-inf"):
                if desktop:  # no notification daemon, say: the terminal's bell and tmux's flag still tell the person
                    self._desktop_failed = True
                else:
                    self._fail(f"notify command {name} failed (exit {code}); not run again this session")
        self.running = still

    def close(self, grace: float = 1.0) -> None:
        """The session is over: give running notify commands ``grace`` seconds in all, kill the rest (not reported as
        failed: the session's end ended them, on a loaded machine even a quick one), clear the flag."""
        deadline, ended = self.clock() + grace, []
        for proc, _, _ in self.running:
            try:
                proc.wait(timeout=max(deadline - self.clock(), 0.0))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)
                ended.append(proc)
        self.running = [run for run in self.running if run[0] not in ended]  # ended by the session's end: no failure
        self.reap()
        self.running = []
        for proc, _ in self.clicks:  # the session is over: its questions' buttons can answer nothing
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
        self.clicks = []
        if self._looking is not None:
            self._looking.cancel()
            self._looking = None
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
        own = (
            ["set-option", "-p", "-t", self.pane, PANE_OPTION, value]
            if value
            else ["set-option", "-p", "-u", "-t", self.pane, PANE_OPTION]
        )
        # One command list: the pane's flag, then the window's value from all its panes' flags.
        args = [*own, ";", "set-option", "-w", "-F", "-t", self.pane, WINDOW_OPTION, WINDOW_FORMAT]
        try:
            # Quick and bounded; the tmux client finds its server through $TMUX. An argument list, never a shell.
            done = subprocess.run(
                [self.tmux, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=2,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0


def desktop_notifier(enabled: bool, environ: Mapping[str, str] = os.environ) -> str | None:
    """``notify-send``'s path when desktop notifications are on, it is on PATH and a desktop session is there."""
    if not enabled or not any(environ.get(name) for name in DESKTOP_ENV):
        return None
    return which(DESKTOP_COMMAND, path=environ.get("PATH"))


def _stderr_is_tty() -> bool:
    try:
        return os.isatty(2)
    except OSError:
        return False
