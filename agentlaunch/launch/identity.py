"""Which session a launch runs (a new one, the one named by ``--resume``, or the last one: ``--continue``), and a
new session's startup message."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from uuid import uuid4

from agentlaunch.errors import DefinitionError, UsageError

if TYPE_CHECKING:
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.providers.base import Adapter, ProviderState
    from agentlaunch.usage.store import Store


class ForkSource(NamedTuple):
    """The earlier session a fork starts from: its id and the state its CLI resumes it with."""

    session_id: str
    state: ProviderState


class SessionChoice(NamedTuple):
    session_id: str
    resumed: bool
    turns: int  # turns so far
    provider_state: ProviderState
    fork: ForkSource | None = None  # a new session that starts from this one's conversation (``run --fork ID``)


def choose_session(
    spec: AgentSpec,
    adapter: Adapter,
    store: Store,
    working_dir: Path,
    *,
    resume: str | None,
    continue_last: bool,
    new_id: str | None = None,
    fork: str | None = None,
) -> SessionChoice:
    """The session for this launch; ``new_id`` names a new one (the prespawned CLI's), else a fresh uuid; ``fork``
    names the earlier session a new one starts from."""
    if fork:
        source = fork_source(spec, adapter, store, fork)
        return new_session(adapter)._replace(fork=source)
    if resume:
        from agentlaunch.usage.session_ids import resolve_session

        resume = resolve_session(store, resume, "--resume")  # a unique prefix names the session
        row = store.get_session(resume)
        if row is not None and row.agent != spec.name:
            raise DefinitionError(f"--resume: session {resume} belongs to agent {row.agent!r}, not {spec.name!r}")
        if row is not None and row.provider != spec.provider:
            raise DefinitionError(f"--resume: session {resume} ran on {row.provider}, but {spec.name!r} now uses {spec.provider}")
        if row is not None:
            refuse_elsewhere(
                spec.name, adapter.descriptor.no_resume_elsewhere, row.session_id, Path(row.working_dir), working_dir
            )
        state = adapter.resume_state(resume, row.provider_state if row else None)
        return SessionChoice(resume, True, row.turns if row else 0, state)
    if continue_last:
        row = store.latest_session(spec.name, str(working_dir), spec.provider)
        if row is None:
            raise DefinitionError(
                f"--continue: no earlier session of agent {spec.name!r} in {working_dir}",
                hint="start one without --continue, or list them with `agentlaunch sessions`",
            )
        return SessionChoice(row.session_id, True, row.turns, adapter.resume_state(row.session_id, row.provider_state))
    return new_session(adapter, new_id)


def refuse_elsewhere(agent: str, cannot: str | None, session_id: str, ran_in: Path, here: Path) -> None:
    """A usage error (exit 2) for a CLI that cannot resume a session in another folder than it ran in (``cannot``:
    why), naming what works; nothing for one that can (Claude Code, Codex), or in the same folder."""
    if cannot is None or ran_in == here:
        return
    short = session_id[:8]
    there = f"agentlaunch run {agent} -r {short} --working-dir {ran_in} resumes it there; " if ran_in.is_dir() else ""
    raise UsageError(
        f"--resume: session {short} ran in {ran_in}, not in {here}: {cannot}",
        hint=f"{there}agentlaunch run {agent} without -r starts a new session here",
    )


def fork_source(spec: AgentSpec, adapter: Adapter, store: Store, given: str) -> ForkSource:
    """The session ``--fork`` names (an id or unique start): the agent's own, on its provider, with a turn."""
    from agentlaunch.usage.session_ids import resolve_session

    adapter.descriptor.refuse_fork(spec.name)
    sid = resolve_session(store, given, "--fork")
    row = store.get_session(sid)
    if row is None:
        raise UsageError(f"--fork: no session {sid!r}: agentlaunch sessions {spec.name} lists {spec.name}'s")
    if row.agent != spec.name:
        raise UsageError(f"--fork: session {sid} is {row.agent}'s, not {spec.name}'s: a fork starts from the agent's own")
    if row.provider != spec.provider:
        raise UsageError(f"--fork: session {sid} ran on {row.provider}, but {spec.name!r} now uses {spec.provider}")
    if row.turns == 0:
        raise UsageError(f"--fork: session {sid} never had a turn: there is no conversation to fork")
    return ForkSource(sid, adapter.resume_state(sid, row.provider_state))


def new_session(adapter: Adapter, new_id: str | None = None) -> SessionChoice:
    """A new session: ``new_id`` (the prespawned CLI's) or a fresh uuid; nothing is read."""
    session_id = new_id or str(uuid4())
    return SessionChoice(session_id, False, 0, adapter.new_state(session_id))


def startup_message(
    spec: AgentSpec, session_id: str | None, working_dir: Path, now: datetime, templates_dir: Path | None, state_dir: Path
) -> str:
    """The startup message of a new session: what changes per session, after the cached prefix (``session_id``
    None: the CLI names the session as it starts); kept in ``state_dir`` by its inputs."""
    from agentlaunch.definitions import render_cache

    return render_cache.startup(spec, session_id, working_dir, now, state_dir, templates_dir)
