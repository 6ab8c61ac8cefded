"""Codex CLI: a fresh ``codex exec`` process per turn, the thread continued by ``resume``.

Its ``turn.completed.usage`` is the thread's running total (also across
processes, after ``resume``): the parser subtracts the previous total, which
the session registry keeps between agentlaunch processes. ``input_tokens``
includes the cached tokens. Each call's own figures are in the thread's
rollout file; the session splits the turn into them (:meth:`CodexAdapter.calls_in_turn`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentlaunch.definitions.provider_settings import compaction_argv
from agentlaunch.errors import DefinitionError, StateError
from agentlaunch.events import (
    CallUsage,
    ContextWindow,
    Event,
    SessionStarted,
    Text,
    ThinkingDelta,
    ToolResult,
    ToolUse,
    TurnEnd,
    Unknown,
    Warning,
)
from agentlaunch.providers import untrusted
from agentlaunch.providers.base import (
    AdapterDefaults,
    Delivered,
    JsonLineParser,
    Parser,
    ProviderState,
    TurnPlan,
    own_parser,
    split_turn,
)
from agentlaunch.providers.codex_rollout import codex_usage, rollout_calls, rollout_context_window, rollout_total
from agentlaunch.providers.descriptors import CODEX, ProviderDescriptor
from agentlaunch.providers.untrusted import (
    BadUsage,
    checked,
    items,
    kind_name,
    label,
    opt_label,
    refused,
    string,
    summarize,
)
from agentlaunch.token_usage import Usage

if TYPE_CHECKING:
    from agentlaunch.definitions.skills_install import InstalledSkills
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.providers.native.source import NativeContext, NativeExtras

ARGV_PROMPT_LIMIT = 100_000  # longer prompts go through stdin (one argv string is capped at 128 KiB)
QUIET = ["-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false"]


def global_options(compaction_at: int | None) -> list[str]:
    """The ``-c`` options every Codex route starts with (``exec``, ``app-server``, its own interface)."""
    return [*QUIET, *compaction_argv(CODEX, compaction_at)]


SEEN_NOTICES = """
[projects."{workdir}"]
trust_level = "trusted"

[tui]
screen_reader_detection_done = true

[tui.model_availability_nux]
"gpt-6.1-sol" = 1

[notice.model_migrations]
"gpt-5.5" = "gpt-6-sol"
"""
TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search", "todo_list", "plan"}


def since(running: Usage, before: Usage) -> Usage:
    """The usage between two running totals; BadUsage when the total went down in any field."""
    turn = running - before
    for name, value in turn.as_dict().items():
        if value < 0:
            was, now = getattr(before, name), getattr(running, name)
            raise BadUsage(f"the thread's running total went down ({name}: {was:,} before, {now:,} now)")
    return turn


RECONNECTING = re.compile(r"Reconnecting\.\.\. (\d+)/(\d+)(?: \((.*)\))?", re.DOTALL)


def reconnecting(message: str) -> str | None:
    """The cause and attempt of ``codex exec --json``'s ``error`` event while it retries a failed stream, else None.

    Measured on 0.171.0 against a fake API answering 500: ``Reconnecting... 2/5 (We're currently experiencing high
    demand, which may cause temporary errors.)``, one per attempt, then the error alone and ``turn.failed``.
    """
    found = RECONNECTING.match(message.strip())
    if found is None:
        return None
    cause = (found.group(3) or "").strip() or "the stream failed"
    return f"{cause[:200]}, attempt {found.group(1)}/{found.group(2)}"


def _item_summary(item: dict[str, Any]) -> tuple[str, str]:
    kind = kind_name(item.get("type"))
    if kind == "command_execution":
        return "shell", summarize(item.get("command", ""))
    if kind == "file_change":
        changes = items(item.get("changes"))
        return "edit", summarize(" ".join(label(c.get("path")) for c in changes if isinstance(c, dict)) or item)
    if kind == "mcp_tool_call":
        return f"{label(item.get('server'), 'mcp')}.{label(item.get('tool'), '?')}", summarize(item.get("arguments") or "")
    if kind == "web_search":
        return "web_search", summarize(item.get("query", ""))
    return kind, summarize({k: v for k, v in item.items() if k not in ("id", "type")})


class CodexParser(JsonLineParser):
    """``codex exec --json`` lines to normalized events; usage as differences of running totals.

    A running total that is not a set of counts, or that went down, is
    reported and not counted; the total counted so far stays the base.
    """

    def __init__(self, prior_total: Usage | None = None) -> None:
        self.total = prior_total or Usage()
        self.thread_id: str | None = None

    def event(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj.get("type")
        if kind == "thread.started":
            self.thread_id = opt_label(obj.get("thread_id"))
            return [SessionStarted(self.thread_id or "")]
        if kind == "turn.started":
            return []
        if kind in ("item.started", "item.updated", "item.completed"):
            return self._item(str(kind), untrusted.obj(obj.get("item")))
        if kind == "turn.completed":
            try:
                running = codex_usage(obj.get("usage"))
                turn = since(running, self.total)
            except BadUsage as why:
                return [Warning(refused("codex", None, why)), TurnEnd(result="")]
            self.total = running
            return [CallUsage(turn), TurnEnd(result="")]
        if kind == "turn.failed":
            message = string(untrusted.obj(obj.get("error")).get("message")) or "turn failed"
            return [TurnEnd(is_error=True, error=message)]
        if kind == "error":
            message = string(obj.get("message")) or "error"
            return [Warning(message, retry=reconnecting(message))]
        return [Unknown(kind_name(kind))]

    def _item(self, kind: str, item: dict[str, Any]) -> list[Event]:
        itype = item.get("type")
        item_id = label(item.get("id"))
        if itype == "agent_message":
            return [Text(string(item.get("text")))] if kind == "item.completed" else []
        if itype == "reasoning":  # its summary, whole once the item is done
            thought = string(item.get("text")) if kind == "item.completed" else ""
            return [ThinkingDelta(thought)] if thought else []
        if itype == "error":
            return [Warning(string(item.get("message")) or "error")] if kind == "item.completed" else []
        if isinstance(itype, str) and itype in TOOL_ITEMS:
            name, summary = _item_summary(item)
            if kind == "item.started":
                return [ToolUse(item_id, name, summary)]
            if kind == "item.completed":
                failed = item.get("status") == "failed" or (item.get("exit_code") not in (None, 0))
                output = item.get("aggregated_output")
                events: list[Event] = []
                if itype != "command_execution":  # commands were announced by item.started
                    events.append(ToolUse(item_id, name, summary))
                events.append(ToolResult(item_id, failed, summarize(output) if output else ""))
                return events
            return []
        return [Unknown(f"item/{kind_name(itype)}")] if kind == "item.completed" else []


class CodexAdapter(AdapterDefaults):
    """Codex CLI 0.169."""

    descriptor: ProviderDescriptor = CODEX

    persistent: Literal[False] = False
    app_server = True  # headless: one `codex app-server` per launch (agentlaunch.launch.chat.appserver)
    remote_interface = True  # native: its interface on an app-server agentlaunch owns (agentlaunch.launch.native.native_remote)
    chooses_session_id = False  # a new thread's id is Codex's: the native sources report it
    has_interface = True
    early_interface = False  # not measured: its hooks live in a per-agent CODEX_HOME
    early_turn = True  # waits for the end of its stdin before its first call (0.171.0; agentlaunch.launch.early.early_turn)

    def mcp_server_flags(self, servers: list[dict[str, Any]]) -> list[str]:
        from agentlaunch.providers.codex_mcp import codex_flags

        return codex_flags(servers)

    def plan_turn(self, spec: AgentSpec, command: str, state: Mapping[str, object], prompt: str) -> TurnPlan:
        argv = [command, *global_options(spec.compaction_at), "exec", "--json", "--skip-git-repo-check"]
        if spec.model:
            argv += ["-m", spec.model]  # the thread does not remember its model
        argv += list(spec.provider_flags)
        if state.get("thread_id"):
            argv += ["resume", str(state["thread_id"])]
        if len(prompt.encode("utf-8")) > ARGV_PROMPT_LIMIT:
            return TurnPlan(argv=[*argv, "-"], stdin=prompt.encode("utf-8"))
        # After "--": a prompt starting with "-" is no option (measured: "-dash first" was an unknown argument, exit 2).
        return TurnPlan(argv=[*argv, "--", prompt], stdin=b"")

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
        """Codex's own interface: ``codex [-c ...] [-m M] --no-daemon ["startup message"]``, or
        ``codex [-c ...] resume [-m M] --no-daemon THREAD``; a fork: ``codex [-c ...] fork [-m M] --no-daemon THREAD``
        (a new thread, whose id Codex chooses and its sources report).

        ``--no-daemon`` keeps the session inside the process agentlaunch started: without it the
        interface starts (or joins) a shared ``codex app-server`` that outlives it (measured on 0.171.0).
        """
        argv = [command, *global_options(spec.compaction_at), *placement_argv]
        if resumed or fork is not None:
            argv.append("resume" if resumed else "fork")
        if spec.model:
            argv += ["-m", spec.model]
        argv += [*spec.provider_flags, "--no-daemon", *extra_argv]
        if resumed:
            return [*argv, str(state.get("thread_id") or session_id)]
        if fork is not None:
            return [*argv, str(fork[1].get("thread_id") or fork[0])]
        if prompt:
            argv += ["--", prompt] if prompt.startswith("-") else [prompt]
        return argv

    def state_after_interface(self, session_id: str, state: Mapping[str, object], env: Mapping[str, str]) -> ProviderState:
        """The thread and its running total after a native run, from the rollout: a headless turn of the
        same session then counts only its own usage."""
        thread = str(state.get("thread_id") or session_id)
        total = rollout_total(thread, env)
        kept: ProviderState = {**state, "thread_id": thread}
        if total is not None:
            kept["total"] = total.as_dict()
        return kept

    def deliver(
        self,
        spec: AgentSpec,
        text: str,
        path: Path,
        skills: InstalledSkills | None,
        state_dir: Path,
        env: Mapping[str, str],
    ) -> Delivered:
        """``delivery: developer-instructions``: ``-c developer_instructions=<the user's own, then the agent's>``
        on every turn (``file``: AGENTS.md is read where it is); skills: a per-agent ``CODEX_HOME`` that links them
        beside the user's own entries (Codex lists no skill folder given otherwise)."""
        argv: list[str] = []
        fingerprint: list[str] | None = None
        if spec.delivery == "developer-instructions":
            from agentlaunch.providers.codex_instructions import developer_instructions_argv, user_developer_instructions

            user = user_developer_instructions(env, spec.provider_flags, state_dir)
            argv = developer_instructions_argv(text, user, spec.agent_dir / "agent.yaml")
            # The agent's text is fingerprinted section by section; what else the argument carries is the user's own.
            fingerprint = ["-c", f"developer_instructions=(yours first){user or ''}"]
        placed: dict[str, str] = {}
        if skills is not None:
            from agentlaunch.providers.codex_home import prepare_home

            placed = prepare_home(state_dir, spec.name, env, skills.links())
        return Delivered(argv, placed, fingerprint)

    def native_extras(self, ctx: NativeContext) -> NativeExtras:
        from agentlaunch.providers.native.codex import native_extras

        return native_extras(ctx)

    def seed_interface_home(self, home: Path, workdir: Path, env: Mapping[str, str], argv: list[str]) -> None:
        """For the doctor: the folder trusted, and the first-run notices Codex 0.171.0 shows marked as seen, as it
        records them once a user has answered them (a notice it shows for another model makes the run "not measured")."""
        codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
        codex_home.mkdir(parents=True, exist_ok=True)
        with (codex_home / "config.toml").open("a", encoding="utf-8") as fh:
            fh.write(SEEN_NOTICES.format(workdir=workdir))

    def new_state(self, session_id: str) -> ProviderState:
        return {}

    def resume_state(self, session_id: str, stored: Mapping[str, object] | None) -> ProviderState:
        """The thread to resume: the one recorded for the session, else the id itself when it is a thread id."""
        if stored and stored.get("thread_id"):
            return dict(stored)
        if stored is None and looks_like_thread_id(session_id):
            return {"thread_id": session_id}
        if stored is None:
            raise DefinitionError(
                f"--resume: {session_id!r} is neither a session agentlaunch knows nor a Codex thread id "
                "(Codex would silently start a new thread)",
                hint="list sessions with `agentlaunch sessions`",
            )
        raise DefinitionError(f"--resume: session {session_id} never got a Codex thread (its first turn did not start)")

    def parser(self, state: Mapping[str, object]) -> CodexParser:
        parser = CodexParser(stored_total(state.get("total")))
        parser.thread_id = opt_label(state.get("thread_id"))
        return parser

    def calls_in_turn(self, turn: CallUsage, parser: Parser, env: Mapping[str, str]) -> list[CallUsage]:
        """The turn's sum split into its calls, from the rollout (see :func:`~agentlaunch.providers.base.split_turn`)."""
        return split_turn(turn, [call for call, _ in rollout_calls(own_parser(parser, CodexParser).thread_id or "", env)])

    def calls_not_counted(self, parser: Parser, env: Mapping[str, str]) -> list[CallUsage]:
        """Finished calls of a turn that ended without ``turn.completed`` (interrupted, failed), from the rollout.

        They are the calls after the one whose running total is the total counted
        so far; the counted total moves past them, so the next turn's difference
        leaves them out. Nothing when that point cannot be found in the rollout.
        """
        parser = own_parser(parser, CodexParser)
        calls = rollout_calls(parser.thread_id or "", env)
        start = 0
        if parser.total != Usage():
            counted = [i for i, (_, running) in enumerate(calls) if running == parser.total]
            if not counted:
                return []
            start = counted[-1] + 1
        new = calls[start:]
        if not new or any(running is None for _, running in new):
            return []
        parser.total = new[-1][1] or parser.total
        return [call for call, _ in new]

    def state_after_turn(self, parser: Parser, env: Mapping[str, str]) -> tuple[ProviderState, list[Event]]:
        """What to keep for the next turn (thread id, running total), and a learned context window."""
        parser = own_parser(parser, CodexParser)
        state: ProviderState = {"thread_id": parser.thread_id, "total": parser.total.as_dict()}
        window = rollout_context_window(parser.thread_id or "", env)
        return state, [ContextWindow(window)] if window else []


def stored_total(prior: Any) -> Usage | None:
    """The running total kept in the session's state; None when there is none.

    One that is not a set of counts (the store written by someone else) is a
    StateError: counting from zero instead would count the thread's whole
    total as the next turn.
    """
    if not isinstance(prior, dict):
        return None
    try:
        return checked(Usage(**prior))
    except (TypeError, BadUsage):
        raise StateError(
            "the stored Codex running total of this session is not a set of token counts",
            hint="start a new session; this one's usage could not be counted correctly",
        ) from None


def looks_like_thread_id(value: str) -> bool:
    """Codex takes a non-UUID as a thread *name* and silently starts a new thread: refuse those."""
    import uuid  # only a --resume asks: uuid imports platform (~1.5 ms of every launch otherwise)

    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
