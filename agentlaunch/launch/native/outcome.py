"""How a native run ended, once the terminal is the person's again: agentlaunch's exit code, or the error they read
(the CLI's exit code or signal, its last words when it failed quickly, how to resume the session)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from agentlaunch.launch.native.last_words import InterfaceFailed, last_words

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.errors import AgentlaunchError
    from agentlaunch.launch.native.native_remote import RemoteCodex
    from agentlaunch.launch.native.relay import RelayResult
    from agentlaunch.launch.turn import ChildLike
    from agentlaunch.providers.base import Adapter

QUICK_EXIT = 10.0  # seconds: a CLI that fails sooner than this shows its last words after the terminal is restored


class EndedLaunch(Protocol):
    """What the outcome reads of the launch: its agent, session, provider, CLI, and whether agentlaunch ended it."""

    @property
    def spec(self) -> AgentSpec: ...
    @property
    def session_id(self) -> str: ...
    @property
    def adapter(self) -> Adapter: ...
    @property
    def child(self) -> ChildLike | None: ...
    @property
    def stopped(self) -> AgentlaunchError | None: ...


def outcome(launch: EndedLaunch, result: RelayResult, *, remote: RemoteCodex | None, started_at: float, registered: bool) -> int:
    """agentlaunch's exit code, and what the person should know once the terminal is theirs again.

    ``remote`` is Codex's app-server route when the interface ran on it, ``started_at`` when the CLI was started
    (``time.monotonic``), ``registered`` whether the session was recorded (then it can be resumed)."""
    if result.terminated is not None:
        return 128 + result.terminated
    if launch.stopped is not None:
        return 0  # agentlaunch ended the CLI (a budget): the caller raises the budget's error, exit 6
    hint = resume_hint(launch) if registered else None
    if remote is not None and remote.gone:
        error = remote.failed("exited during the session; Codex's interface was ended with it", wait=5.0)
        from agentlaunch.launch.native.native_remote import AppServerFailed

        raise AppServerFailed(error.message, hint=hint)
    code = cli_exit_code(launch, result)
    if code in (0, None):
        return 0
    cli = launch.adapter.descriptor.name
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    quick = time.monotonic() - started_at < QUICK_EXIT
    words = last_words(result.tail) if quick else []
    said = ("; its last words: " + " / ".join(words)) if words else ""
    raise InterfaceFailed(f"{cli} {how}{said}", hint=hint)


def cli_exit_code(launch: EndedLaunch, result: RelayResult) -> int | None:
    """The CLI's exit code (negative: its signal), also when the relay ended on its output's end first."""
    code = result.exit_code
    if code is None and launch.child is not None:
        code = launch.child.poll()
    return code


def resume_hint(launch: EndedLaunch) -> str:
    return f"resume the session with: agentlaunch run {launch.spec.name} -r {launch.session_id}"
