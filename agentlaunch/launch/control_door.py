"""A launch's door for ``agentlaunch send``: its control socket opened on its loop, named in its status record and
closed, and why the launch cannot take a sent prompt now. It reads and asks the launch through
:class:`ControlledLaunch`, never the whole ``Launch``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentlaunch.launch.control import ControlServer

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.errors import AgentlaunchError
    from agentlaunch.launch.loop import Loop


class ResumeConfirm(Protocol):
    """A budget's pause, as far as ``resume-budget`` goes: (resumed, what to tell the person)."""

    def confirm(self) -> tuple[bool, str]: ...


class ControlledLaunch(Protocol):
    """What the socket reads of the launch (its agent, state, whether it is ending or paused, its loop) and asks of
    it: a notice, the socket named in its status record, a budget's pause confirmed."""

    @property
    def spec(self) -> AgentSpec: ...
    @property
    def state(self) -> str: ...
    @property
    def stopped(self) -> AgentlaunchError | None: ...
    @property
    def paused(self) -> AgentlaunchError | None: ...
    @property
    def loop(self) -> Loop: ...
    @property
    def budget_pause(self) -> ResumeConfirm: ...

    def notice(self, message: str) -> None: ...
    def name_control(self, path: str | None) -> None: ...


def busy_reason(agent: str, state: str, stopped: str | None = None) -> str | None:
    """Why a session in ``state`` cannot take a sent prompt, or None when it can (it is ``waiting``)."""
    if stopped is not None:
        return f"{agent} is ending: {stopped}"
    if state == "paused":
        return (
            f"{agent} is paused: its budget is spent; it takes no prompt until the limit is raised or "
            f"agentlaunch resume-budget {agent} confirms"
        )
    if state == "waiting":
        return None
    if state == "asking":
        return f"{agent} is asking: a permission or a question waits for a person; answer it first (agentlaunch answer {agent})"
    if state in ("thinking", "tool", "retrying"):
        return f"{agent} is in a turn ({state}); send again once it is waiting"
    if state == "stalled":
        return f"{agent} is stalled: its turn has heard nothing from the CLI for a long time; look at its pane"
    if state == "starting":
        return f"{agent} is still starting; send again in a few seconds"
    return f"{agent} is {state}"


def launch_busy(launch: ControlledLaunch, state: str | None = None) -> str | None:
    """:func:`busy_reason` for ``launch`` (in ``state``, when its own state says less than the caller knows)."""
    stopped = launch.stopped.message if launch.stopped is not None else None
    if launch.paused is not None and stopped is None:
        return f"{busy_reason(launch.spec.name, 'paused')} ({launch.paused.message.removeprefix('budget: ')})"
    return busy_reason(launch.spec.name, launch.state if state is None else state, stopped)


def open_control(launch: ControlledLaunch, path: Path, what: str, **server: Any) -> ControlServer | None:
    """Bind ``launch``'s socket at ``path`` on its loop and name it in its status record; None (and a notice) when it
    cannot be."""
    try:
        control = ControlServer(path, launch.loop, **server)
    except OSError as exc:
        launch.notice(f"agentlaunch send cannot reach this {what}: its socket could not be made ({exc})")
        return None
    control.on_resume = launch.budget_pause.confirm
    launch.name_control(str(control.path))  # the status record names the socket now
    return control


def close_control(launch: ControlledLaunch, control: ControlServer) -> None:
    """Stop taking prompts: the socket is gone, and the status record no longer names it."""
    launch.name_control(None)
    control.close()
