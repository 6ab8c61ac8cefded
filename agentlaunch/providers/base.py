"""The two shapes of provider adapter (typed Protocols), the plan of a CLI start, and the parsers' shared front.

A *persistent* adapter (Claude Code, the fake provider) starts one CLI process
per session and writes each user turn to its stdin; a *per-turn* adapter
(Codex, Gemini) starts a fresh process for every turn and carries the thread
from one to the next in a small JSON-ready state the session store keeps.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from agentlaunch.datarecord import datarecord, field
from agentlaunch.events import CallUsage, Diagnostic, Event, PermissionRequest, Warning
from agentlaunch.providers.untrusted import loads
from agentlaunch.token_usage import Usage

if TYPE_CHECKING:
    from agentlaunch.definitions.skills_install import InstalledSkills
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.providers.descriptors import ProviderDescriptor
    from agentlaunch.providers.native.source import NativeContext, NativeExtras

ProviderState = dict[str, object]
"""What a session keeps between turns and launches for its provider (JSON-ready; in the session store)."""


@datarecord(frozen=True)
class TurnPlan:
    """How to start the CLI for a session (persistent) or for one turn (per-turn providers)."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    stdin: bytes | None = None
    """Per-turn CLIs: what to write to stdin before closing it (b"" = at EOF at once)."""


@datarecord(frozen=True)
class Delivered:
    """How the CLI is pointed at the instructions and skills placed for it (see ``Provider.deliver``)."""

    argv: list[str] = field(default_factory=list)
    """Arguments that carry or point at them: a persistent CLI's go after its own flags, a per-turn CLI's
    right after the command, on every turn (global options)."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment the CLI gets on every turn, over everything else (a per-agent CLI home)."""
    fingerprint_argv: list[str] | None = None
    """``argv`` as the prefix fingerprint sees it, when the agent's own text is in it (the fingerprint hashes
    that section by section); None: ``argv`` itself."""


class Parser(Protocol):
    """A provider's output, line by line, as normalized events."""

    def feed(self, line: str) -> list[Event]:
        """Events for one line of the CLI's output."""
        ...

    def finish(self) -> list[Event]:
        """Events still pending when the output ends."""
        ...


class Provider(Protocol):
    """What every adapter knows beyond its shape: how its CLI gets the instructions and the skills."""

    def deliver(
        self,
        spec: AgentSpec,
        text: str,
        path: Path,
        skills: InstalledSkills | None,
        state_dir: Path,
        env: Mapping[str, str],
    ) -> Delivered:
        """Point the CLI at the rendered ``text`` (kept at ``path``) and at the installed ``skills``, as ``spec.delivery``
        says; ``env`` is the environment the CLI will run with (it locates the user's own CLI settings)."""
        ...

    def resends_recorded_prompt(self, spec: AgentSpec) -> bool:
        """A resumed session gets the system prompt the CLI recorded at its start, not this launch's instructions."""
        ...

    def mcp_server_flags(self, servers: list[dict[str, Any]]) -> list[str]:
        """The CLI's flags that give it an editor's MCP servers (ACP's shape, :mod:`.mcp_servers`); [] when it takes none."""
        ...


class NativeInterface(Protocol):
    """What the native mode needs of an adapter, whichever its shape: the CLI's own interface and its session."""

    def native_extras(self, ctx: NativeContext) -> NativeExtras:
        """The flags, environment and structured sources (hooks, transcripts) of a native launch."""
        ...

    def interface_notices(self, placement_argv: list[str]) -> list[str]:
        """What a person should know before the CLI's interface takes the terminal (a question it will ask)."""
        ...

    def seed_interface_home(self, home: Path, workdir: Path, env: Mapping[str, str], argv: list[str]) -> None:
        """For the doctor: what a set-up user's ``home`` holds, so that the interface starts without first-run questions."""
        ...

    @property
    def chooses_session_id(self) -> bool:
        """agentlaunch names a new session (``--session-id``); False: the CLI does, and reports it."""
        ...

    @property
    def has_interface(self) -> bool:
        """The CLI has an interactive interface of its own that the native mode relays."""
        ...

    @property
    def early_interface(self) -> bool:
        """A new session's interface may be started from the last launch's plan before agentlaunch's own imports
        (:mod:`agentlaunch.launch.early.early_interface`): every file and socket its native extras make is in the
        launch's runtime folder."""
        ...

    @property
    def early_turn(self) -> bool:
        """A per-turn CLI's first headless turn may be started from the last launch's plan before agentlaunch's
        own imports (:mod:`agentlaunch.launch.early.early_turn`): the CLI sends nothing before its stdin ends."""
        ...

    def interface_argv(
        self,
        spec: AgentSpec,
        command: str,
        *,
        session_id: str,
        resumed: bool,
        state: Mapping[str, object],
        placement_argv: list[str],
        extra_argv: list[str],
        prompt: str,
        fork: tuple[str, Mapping[str, object]] | None = None,
    ) -> list[str]:
        """argv of the CLI's own interface for the session; ``prompt`` (the startup message) is its first prompt.

        ``fork``: the new session starts from this earlier session's conversation (its id and stored state), as
        the descriptor's ``fork`` says; only asked of a provider that has one."""
        ...

    def state_after_interface(self, session_id: str, state: Mapping[str, object], env: Mapping[str, str]) -> ProviderState:
        """What a later turn of the session needs after a native run (read from the CLI's files)."""
        ...


class PersistentAdapter(Provider, NativeInterface, Protocol):
    """A CLI that runs for the whole session and reads stream-json user turns on stdin (Claude Code)."""

    @property
    def descriptor(self) -> ProviderDescriptor: ...

    @property
    def persistent(self) -> Literal[True]: ...

    @property
    def default_command(self) -> str: ...

    @property
    def install_hint(self) -> str: ...

    def plan(self, spec: AgentSpec, command: str, session_id: str, resume: bool, interactive: bool) -> TurnPlan:
        """argv and environment of the session's one CLI process."""
        ...

    def parser(self, state: Mapping[str, object] | None = None) -> Parser:
        """A parser for the session's output."""
        ...

    def new_state(self, session_id: str) -> ProviderState:
        """The provider state of a new session."""
        ...

    def resume_state(self, session_id: str, stored: Mapping[str, object] | None) -> ProviderState:
        """The provider state to resume ``session_id`` with (``stored``: what the store kept, if anything)."""
        ...

    def user_message(self, text: str) -> dict[str, object]:
        """The stdin message that sends one user turn."""
        ...

    def interrupt_message(self) -> dict[str, object]:
        """The stdin message that asks the CLI to end the running turn."""
        ...

    def permission_answer(self, request: PermissionRequest, decision: str) -> dict[str, object]:
        """The stdin answer to a permission request; ``decision`` is once, always or deny."""
        ...

    def gate_request(self) -> dict[str, object] | None:
        """The stdin message that makes the CLI hold each tool until agentlaunch answers (None: it cannot)."""
        ...

    def gate_answer(self, request_id: str, allow: bool, reason: str) -> dict[str, object]:
        """The stdin answer to a held tool: it runs, or it is refused and the turn ends without a further call."""
        ...


class PerTurnAdapter(Provider, NativeInterface, Protocol):
    """A CLI started afresh for each turn, the thread continued from ``state`` (Codex, Gemini)."""

    @property
    def descriptor(self) -> ProviderDescriptor: ...

    @property
    def persistent(self) -> Literal[False]: ...

    @property
    def app_server(self) -> bool:
        """Headless turns may go through one long-lived app-server instead (Codex; see agentlaunch.launch.chat.appserver)."""
        ...

    @property
    def default_command(self) -> str: ...

    @property
    def install_hint(self) -> str: ...

    def plan_turn(self, spec: AgentSpec, command: str, state: Mapping[str, object], prompt: str) -> TurnPlan:
        """argv, environment and stdin of the CLI process for one turn with ``prompt``."""
        ...

    def parser(self, state: Mapping[str, object]) -> Parser:
        """A parser for one turn's output, continuing from ``state``."""
        ...

    def new_state(self, session_id: str) -> ProviderState:
        """The provider state of a new session."""
        ...

    def resume_state(self, session_id: str, stored: Mapping[str, object] | None) -> ProviderState:
        """The provider state to resume ``session_id`` with (``stored``: what the store kept, if anything)."""
        ...

    def calls_in_turn(self, turn: CallUsage, parser: Parser, env: Mapping[str, str]) -> list[CallUsage]:
        """The turn's printed sum as its model calls, where the CLI's own files allow."""
        ...

    def calls_not_counted(self, parser: Parser, env: Mapping[str, str]) -> list[CallUsage]:
        """Finished calls of a turn that ended without its sum (interrupted, failed)."""
        ...

    def state_after_turn(self, parser: Parser, env: Mapping[str, str]) -> tuple[ProviderState, list[Event]]:
        """What to keep for the next turn, and events learned from the CLI's files (a context window)."""
        ...


Adapter = PersistentAdapter | PerTurnAdapter
"""Either shape; ``adapter.persistent`` tells them apart (and narrows the type)."""


class AdapterDefaults:
    """What every adapter has unless it says otherwise: its facts read from its ``descriptor`` (set by each adapter
    class), no notice before its interface, the launch's instructions on a resumed session, no home to seed."""

    descriptor: ProviderDescriptor

    @property
    def name(self) -> str:
        return self.descriptor.name

    @property
    def default_command(self) -> str:
        return self.descriptor.default_command

    @property
    def install_hint(self) -> str:
        return self.descriptor.install_hint

    def interface_notices(self, placement_argv: list[str]) -> list[str]:
        return []

    def resends_recorded_prompt(self, spec: AgentSpec) -> bool:
        """A resumed session gets the system prompt the CLI recorded at its start, not this launch's instructions."""
        return False

    def seed_interface_home(self, home: Path, workdir: Path, env: Mapping[str, str], argv: list[str]) -> None:
        return None

    def mcp_server_flags(self, servers: list[dict[str, Any]]) -> list[str]:
        return []


def parse_json_line(line: str) -> dict[str, Any] | Diagnostic | None:
    """A JSON object from ``line``, a Diagnostic for anything else (also JSON nested too deep), None for a blank line."""
    stripped = line.strip()
    if not stripped:
        return None
    if stripped[0] == "{":
        try:
            obj = loads(stripped)
        except ValueError:
            return Diagnostic(stripped[:2000])
        if isinstance(obj, dict):
            return obj
    return Diagnostic(stripped[:2000])


class JsonLineParser(abc.ABC):
    """The shared front of the provider parsers: blank lines are skipped, lines that are not
    JSON objects become Diagnostics, and each JSON object goes to :meth:`event`."""

    def feed(self, line: str) -> list[Event]:
        try:
            return self.read_line(line)
        except Exception as exc:  # a shape no handler foresaw is reported, never the end of the session
            return [Warning(f"agentlaunch could not read a provider event ({type(exc).__name__}); skipped it")]

    def read_line(self, line: str) -> list[Event]:
        """:meth:`feed` without its last-resort guard: what the tests call, so that a handler's exception fails them."""
        obj = parse_json_line(line)
        if obj is None:
            return []
        if isinstance(obj, Diagnostic):
            return [obj]
        return self.event(obj)

    @abc.abstractmethod
    def event(self, obj: dict[str, Any]) -> list[Event]:
        """Normalized events for one of the CLI's JSON events."""

    def finish(self) -> list[Event]:
        """Events still pending when the output ends (e.g. a call whose final usage never came)."""
        return []


def json_lines(path: Path, marker: str) -> list[Any]:
    """What the lines of ``path`` that contain ``marker`` parse to, in order (lines that are not JSON are skipped).

    For the logs the per-turn CLIs keep (Codex's rollout, Gemini's session
    file): ``marker`` is a cheap filter before parsing. [] when unreadable.
    """
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            lines = [line for line in fh if marker in line]
    except OSError:
        return []
    parsed = []
    for line in lines:
        try:
            parsed.append(loads(line))
        except ValueError:  # not JSON, or nested too deep: not a record the CLI writes
            continue
    return parsed


def split_turn(turn: CallUsage, recorded: Sequence[CallUsage]) -> list[CallUsage]:
    """A turn's usage as its calls: the fewest of the last ``recorded`` calls that add up to it exactly.

    Codex and Gemini print one sum per turn; the figures of each call are only
    in the files they keep (Codex's rollout, Gemini's session file). Those are
    taken when the last of them add up to the printed sum, field by field, so a
    file that is missing, late or shaped otherwise never changes what is
    counted: the turn is then recorded as one call, as printed.
    """
    target = turn.usage.as_dict()
    total = Usage()
    for k in range(1, len(recorded) + 1):
        total = total + recorded[-k].usage
        summed = total.as_dict()
        if summed == target:
            return [CallUsage(c.usage, c.model or turn.model, c.call_id) for c in recorded[-k:]]
        if any(summed[f] > target[f] for f in target):
            break
    return [turn]


def child_env(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: the user's plus the agent's ``env``."""
    env = dict(base)
    env.update(extra)
    return env


OwnParser = TypeVar("OwnParser")


def own_parser(parser: Parser, kind: type[OwnParser]) -> OwnParser:
    """``parser`` as the ``kind`` its adapter made (the session hands back what the adapter's ``parser()`` gave)."""
    if not isinstance(parser, kind):
        raise TypeError(f"{kind.__name__}'s adapter was handed a {type(parser).__name__}, not the parser it made")
    return parser
