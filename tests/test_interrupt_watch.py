"""The person's Esc in a CLI's retry loop: ``waiting`` once the screen goes still, not while the CLI still draws.

The real Claude Code's side is pinned end to end (tests/e2e/test_stalled_retrying.py); these hold the decision on a
clock the test moves: which keys count, in which state, and an Esc whose screen keeps moving (it closed a menu).
"""

from __future__ import annotations

from datetime import UTC, datetime

from agentlaunch.launch.loop import Loop
from agentlaunch.launch.native.interrupt_watch import LIMIT, QUIET, InterruptWatch


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.t, UTC)


class Cli:
    """A CLI ``retrying`` whose screen last changed at ``last``; ``interrupted`` counts the watch's verdicts."""

    def __init__(self, clock: Clock) -> None:
        self.clock, self.state, self.last, self.interrupted = clock, "retrying", clock.t, 0

    def verdict(self) -> None:
        self.interrupted += 1
        self.state = "waiting"


def run_until(loop: Loop, clock: Clock, until: float, cli: Cli, draws_every: float | None = None) -> None:
    """Move the clock in 0.1 s steps to ``until``, running due timers; the CLI draws every ``draws_every`` s."""
    while clock.t < until:
        clock.t = round(clock.t + 0.1, 3)
        if draws_every is not None and clock.t - cli.last >= draws_every:
            cli.last = clock.t
        loop._run_due_timers()


def watch() -> tuple[Loop, Clock, Cli, InterruptWatch]:
    clock = Clock()
    loop = Loop(clock)
    cli = Cli(clock)
    return loop, clock, cli, InterruptWatch(loop, lambda: cli.state, lambda: cli.last, cli.verdict)


def test_esc_in_retrying_then_a_still_screen_is_waiting() -> None:
    loop, clock, cli, w = watch()
    w.keys(b"\x1b")
    run_until(loop, clock, 100 + QUIET - 0.2, cli)
    assert cli.interrupted == 0  # not before the screen was still for QUIET
    run_until(loop, clock, 100 + QUIET + 0.2, cli)
    assert cli.interrupted == 1 and cli.state == "waiting"


def test_an_esc_whose_screen_keeps_moving_leaves_retrying() -> None:
    loop, clock, cli, w = watch()
    w.keys(b"\x1b")  # it closed a menu: the retry loop's countdown goes on drawing every second
    run_until(loop, clock, 100 + LIMIT + 5, cli, draws_every=1.0)
    assert cli.interrupted == 0 and cli.state == "retrying"


def test_a_screen_still_after_a_last_redraw_counts_from_that_redraw() -> None:
    loop, clock, cli, w = watch()
    w.keys(b"\x1b[27u")  # the kitty keyboard protocol's Esc
    run_until(loop, clock, 101.0, cli)
    cli.last = clock.t  # the interface redraws its input box with the prompt put back
    run_until(loop, clock, 101.0 + QUIET - 0.2, cli)
    assert cli.interrupted == 0
    run_until(loop, clock, 101.0 + QUIET + 0.2, cli)
    assert cli.interrupted == 1


def test_other_keys_and_other_states_are_left_alone() -> None:
    loop, clock, cli, w = watch()
    for keys in (b"\x1b[A", b"q", b"\x1bx", b"\r"):  # an arrow, a letter, Alt-x, Enter
        w.keys(keys)
    cli.state = "thinking"  # an Esc there writes "[Request interrupted by user]": the transcript tells it
    w.keys(b"\x1b")
    run_until(loop, clock, 100 + LIMIT, cli)
    assert cli.interrupted == 0
    cli.state = "retrying"
    w.keys(b"\x03")  # Ctrl-C interrupts too
    cli.state = "thinking"  # and the CLI answered meanwhile: it decides
    run_until(loop, clock, 100 + LIMIT + QUIET + 1, cli)
    assert cli.interrupted == 0
