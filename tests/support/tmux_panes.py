"""Panes of a test's private tmux server."""

from __future__ import annotations

from collections.abc import Callable

from tests.support.waits import wait_for


def die_with(tmux: Callable[..., str], pane: str, code: int) -> None:
    """End ``pane`` (running ``sh -c "read x; exit CODE"`` under remain-on-exit) so that tmux records exit ``code``.

    tmux 3.3a may close a pane on its pty's end before it reaps the exit status, and then never has it (2 of 6 tries
    in one measurement): the same pane is run again until tmux shows the status.
    """

    def status() -> tuple[str, str]:
        dead, _, got = tmux("display-message", "-p", "-t", pane, "#{pane_dead} #{pane_dead_status}").strip().partition(" ")
        return dead, got

    for _ in range(20):
        tmux("send-keys", "-t", pane, "Enter")
        wait_for(lambda: status()[0] == "1", what="the pane dead")
        try:
            wait_for(lambda: status() == ("1", str(code)), timeout=2, what="its exit status")
            return
        except AssertionError:
            tmux("respawn-pane", "-k", "-t", pane, "sh", "-c", f"read x; exit {code}")
    raise AssertionError(f"tmux never recorded exit {code} for {pane}: {status()}")
