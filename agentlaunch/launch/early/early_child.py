"""The CLI an early start spawned, waiting for the launch to adopt it or end it unused.

Every early start makes one (:mod:`agentlaunch.launch.early.prespawn`: a headless CLI or a per-turn CLI's first turn;
:mod:`agentlaunch.launch.early.early_interface`: the CLI's own interface; :mod:`agentlaunch.launch.early.early_appserver`:
native Codex's app-server), and the launch takes it through :mod:`~agentlaunch.launch.early.prespawn`; it sits below
all of them. Standard library only (it is imported before the early start's spawn).
"""

from __future__ import annotations

import contextlib
import signal

from agentlaunch.launch.transport import Child


class Prespawned:
    """A CLI started from the last plan, waiting to be adopted (a plain class: dataclasses cost ~10 ms to import)."""

    __slots__ = ("child", "session_id", "argv", "env", "digest", "stdin", "adopted")
    interface = False  # a headless CLI (see agentlaunch.launch.early.early_interface for the CLI's own interface)

    def __init__(
        self, child: Child, session_id: str, argv: list[str], env: dict[str, str], digest: str, stdin: bytes = b""
    ) -> None:
        """``stdin``: what was written to the child's stdin (a per-turn CLI's prompt), which stays open."""
        self.child, self.session_id, self.argv, self.env, self.digest = child, session_id, argv, env, digest
        self.stdin = stdin
        self.adopted = False

    per_turn = False  # a persistent CLI: its first prompt goes on its stdin once adopted
    app_server = False  # Codex's app-server for its interface (agentlaunch.launch.early.early_appserver)

    def end(self) -> None:
        """Kill the child unused (its whole process group) and wait for it."""
        self.child.signal_group(signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.child.wait(timeout=5)
        self.child.close()

    def release(self) -> None:
        """What the early start made besides the child, given up with it (nothing here)."""

    def discard(self) -> None:
        """End it unused, with what the early start made for it, unless the launch adopted it."""
        if self.adopted:
            return
        self.end()
        self.release()
