"""One turn of a launch, from the prompt to its end: what ``Launch.run_turn`` does.

The turn's loop is :class:`~agentlaunch.launch.turn.Turn`; this is what comes
before and after it, the same for both shapes of CLI (the driver sends the
turn and does the bookkeeping after it): a stopped session takes no new turn,
a cold cache is said, the startup message goes with a new session's first
prompt, the turn is counted, and what the CLI still had when it went is
handled. :class:`LaunchTurnHost` is what the turn's loop hands each output
line and each interrupt back to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlaunch.errors import TurnTimeout
from agentlaunch.events import TurnEnd
from agentlaunch.launch import prespawn
from agentlaunch.launch.held import held_elsewhere
from agentlaunch.launch.identity import startup_message
from agentlaunch.launch.turn import Turn, TurnOutcome
from agentlaunch.sinks import PromptSent, TurnDone

if TYPE_CHECKING:
    from agentlaunch.launch.permissions import AskPermission, PermissionPrompt
    from agentlaunch.launch.session import Launch


class LaunchTurnHost:
    """What a turn hands back to its launch (:class:`~agentlaunch.launch.turn.TurnHost`)."""

    def __init__(self, launch: Launch) -> None:
        self.launch = launch

    def on_line(self, line: str) -> TurnEnd | None:
        """Handle one output line's events; the turn's end when this line reports it."""
        launch = self.launch
        for event in launch.driver.split(launch, launch.parser.feed(line)):
            launch.handle(event)
            if isinstance(event, TurnEnd):
                return event
        return None

    def notice(self, message: str) -> None:
        self.launch.notice(message)

    def interrupt(self) -> None:
        assert self.launch.child is not None
        self.launch.driver.interrupt(self.launch.child)

    def on_child_signal(self) -> None:
        self.launch.on_child_signal()


def first_message(launch: Launch, prompt: str, *, id_known: bool = True) -> str:
    """The user's text, behind the startup message on the first turn of a new session.

    ``id_known`` False: the CLI names the session as it starts and the launch takes that name (Codex's own
    interface), so the message names no id of agentlaunch's, which ``status`` and ``sessions`` would not show.
    """
    if not launch.startup_pending:
        return prompt
    # Sent once: a failed first turn stays in the CLI's transcript, so a retry must not repeat it.
    launch.startup_pending = False
    launch.first_prompt = prompt  # what the first turn's argv ends with (a per-turn CLI's plan: early_turn)
    sid = launch.session_id if id_known else None
    now = prespawn.moment() or launch.clock.now()  # the early-started CLI's startup message names the same time
    startup = startup_message(launch.spec, sid, launch.working_dir, now, launch.options.templates_dir, launch.state_dir)
    return startup + "\n" + prompt if prompt else startup


def run_turn(
    launch: Launch, prompt: str, *, timeout: float | None, ask_permission: AskPermission | PermissionPrompt | None
) -> TurnOutcome:
    """Send one user turn and run the loop until its end; Ctrl-C interrupts it, SIGTERM/SIGHUP end it.

    A stopped session (see :meth:`Launch.stop`) takes no new turn: its error is raised instead; a budget
    spent meanwhile (by agents beside this one, say) stops it here.
    """
    launch.gates.check(launch)
    if (held := launch.stopped or launch.paused) is not None:
        raise held  # a paused session's mode waits for the person before it asks for a turn
    if (cold := launch.cold_cache_notice()) is not None:
        launch.notice(cold)
    if launch.signals.termination is not None:
        return TurnOutcome(None, terminated=launch.signals.termination)
    launch.signals.forget_interrupts()
    text = first_message(launch, prompt)
    launch.turns += 1
    launch.ask_permission = ask_permission
    with launch.signals.turn():  # from here a Ctrl-C interrupts the turn instead of raising
        launch.driver.send(launch, text)
        # After the prompt is on its way: the sinks (the status file's write) do not delay the CLI.
        launch.set_state("thinking")
        launch.emit(PromptSent(prompt))
        assert launch.child is not None
        host = LaunchTurnHost(launch)
        launch.running = Turn(launch.loop, launch.signals, launch.child, host, persistent=launch.persistent, timeout=timeout)
        try:
            result = launch.running.run()
        finally:
            launch.running = None
        if result.terminated is not None:
            return TurnOutcome(None, interrupted=result.interrupted, terminated=result.terminated)
        if result.cli_gone:
            for event in launch.parser.finish():
                launch.handle(event)
        code = launch.driver.after_turn(launch, result.cli_gone)
        if (refused := held_elsewhere(launch, result.end, launch.last_words())) is not None:
            launch.turns -= 1  # refused before it began: no turn of this session
            raise refused
        launch.emit(TurnDone())  # the turn happened, even unfinished: the recorder counts it
        outcome = TurnOutcome(result.end, interrupted=result.interrupted, exit_code=code, last_output=launch.last_words())
    if result.timed_out and result.end is not None and not result.cli_gone:
        raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted")
    if result.timed_out and result.end is None:
        raise TurnTimeout(f"the turn took longer than {timeout:g}s and was interrupted; the session stays resumable")
    return outcome
