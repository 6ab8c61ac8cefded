"""Claude Code: one persistent ``claude -p`` process per session, stream-json in and out (read by :mod:`.claude_parser`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from agentlaunch.definitions.provider_settings import cache_ttl_env, compaction_argv
from agentlaunch.events import PermissionRequest
from agentlaunch.providers.base import AdapterDefaults, Delivered, ProviderState, TurnPlan
from agentlaunch.providers.claude_hooks import tool_refusal
from agentlaunch.providers.claude_parser import EXCLUDE_DYNAMIC_FLAG, GATE_CALLBACK, SYSTEM_PROMPT_FLAGS, ClaudeParser
from agentlaunch.providers.descriptors import CLAUDE, ProviderDescriptor

if TYPE_CHECKING:
    from pathlib import Path

    from agentlaunch.definitions.skills_install import InstalledSkills
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.providers.native.source import NativeContext, NativeExtras


def first_prompt(prompt: str) -> list[str]:
    """The interface's first prompt as its last argument (after ``--`` when it could pass for an option)."""
    if not prompt:
        return []
    return ["--", prompt] if prompt.startswith("-") else [prompt]


def base_argv(command: str, session_id: str, resume: bool) -> list[str]:
    return [
        command,
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--resume" if resume else "--session-id",
        session_id,
    ]


SNAPSHOT_FLAG = "--system-prompt-snapshot"


class ClaudeAdapter(AdapterDefaults):
    """Claude Code 2.1.x."""

    descriptor: ProviderDescriptor = CLAUDE

    persistent: Literal[True] = True
    chooses_session_id = True  # --session-id, headless and in its own interface alike
    has_interface = True  # its own interactive interface can be relayed (agentlaunch.launch.native.native)
    early_interface = True  # its native extras: --settings, a config file and the hook socket in the runtime folder
    early_turn = False  # persistent: agentlaunch.launch.early.prespawn starts it early

    def mcp_server_flags(self, servers: list[dict[str, Any]]) -> list[str]:
        from agentlaunch.providers.claude_mcp import mcp_config_flags

        return mcp_config_flags(servers)

    def plan(self, spec: AgentSpec, command: str, session_id: str, resume: bool, interactive: bool) -> TurnPlan:
        """The headless (stream-json) CLI of a session: the chat's and a one-turn run's alike.

        ``--permission-prompt-tool stdio`` is passed in both: it is what gives the model the
        AskUserQuestion tool (13 tools instead of 12, measured on 2.1.332), which Claude Code's own
        interface always has, so a session's prefix is the same whichever way it is run. A
        headless run has no one to ask: its permission questions are denied, as Claude Code denies them.
        """
        flags, notices = self.shared_flags(spec)
        argv = [*base_argv(command, session_id, resume), *flags, "--permission-prompt-tool", "stdio", *spec.provider_flags]
        return TurnPlan(argv=argv, notices=notices)

    @staticmethod
    def shared_flags(spec: AgentSpec) -> tuple[list[str], list[str]]:
        """The flags that shape the session in every mode (model, system prompt, permissions; the agent's
        own ``provider_flags`` go after them), and the notices they come with."""
        argv: list[str] = []
        notices: list[str] = []
        if spec.model:
            argv += ["--model", spec.model]
        if any(flag.split("=")[0] in SYSTEM_PROMPT_FLAGS for flag in spec.provider_flags):
            notices.append(
                "provider_flags replace the system prompt, so --exclude-dynamic-system-prompt-sections "
                "would do nothing: not passing it"
            )
        else:
            argv.append(EXCLUDE_DYNAMIC_FLAG)
        if spec.permission_mode:
            argv += ["--permission-mode", spec.permission_mode]
        if spec.allowed_tools:
            argv += ["--allowedTools", ",".join(spec.allowed_tools)]
        argv += compaction_argv(CLAUDE, spec.compaction_at)
        return argv, notices

    def resends_recorded_prompt(self, spec: AgentSpec) -> bool:
        """Claude Code 2.1.332 records a conversation's system prompt (``--append-system-prompt-file`` included) and
        re-sends the record on every resume until compaction (``--system-prompt-snapshot``, on by default, off under
        ``--bare``); measured against the fake API. Only the ``system-prompt`` delivery puts the instructions there."""
        if spec.delivery != "system-prompt":
            return False
        flags = list(spec.provider_flags)
        for i, flag in enumerate(flags):
            value = flag.split("=", 1)[1] if flag.startswith(SNAPSHOT_FLAG + "=") else None
            if flag == SNAPSHOT_FLAG and i + 1 < len(flags):
                value = flags[i + 1]
            if value is not None:
                return value != "off"
        return "--bare" not in flags

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
        """Claude Code's own interface: ``claude [flags] --session-id ID ["startup message"]``, or ``--resume ID``;
        a fork: ``--resume OLD --fork-session --session-id ID`` (the new session named, as a new one is)."""
        flags, _ = self.shared_flags(spec)
        argv = [command, *flags, *spec.provider_flags, *placement_argv]
        if fork is not None:
            argv += ["--resume", fork[0], "--fork-session"]
        argv += ["--resume" if resumed else "--session-id", session_id, *extra_argv]
        return argv + first_prompt(prompt)

    def state_after_interface(self, session_id: str, state: Mapping[str, object], env: Mapping[str, str]) -> ProviderState:
        """Claude Code keeps the whole session itself."""
        return dict(state)

    def deliver(
        self,
        spec: AgentSpec,
        text: str,
        path: Path,
        skills: InstalledSkills | None,
        state_dir: Path,
        env: Mapping[str, str],
    ) -> Delivered:
        """``delivery: system-prompt``: the file in the system-prompt flag (``file``: CLAUDE.md is read where it is);
        skills: a per-agent ``CLAUDE_CONFIG_DIR`` that links them beside the user's own entries (``--add-dir`` would
        stop the interface on a folder dialog at every launch: see :mod:`agentlaunch.providers.claude_home`)."""
        argv = self.descriptor.system_prompt_argv(path) if spec.delivery == "system-prompt" else []
        placed: dict[str, str] = {}
        if skills is not None and self.descriptor.skills_route == "add-dir":  # the fake CLI reads Claude Code's flags
            argv += ["--add-dir", str(skills.root)]
        elif skills is not None:
            from agentlaunch.providers.claude_home import prepare_home

            placed = prepare_home(state_dir, spec.name, env, skills.links())
        return Delivered(argv, {**cache_ttl_env(self.descriptor, spec.cache_ttl), **placed})

    def native_extras(self, ctx: NativeContext) -> NativeExtras:
        from agentlaunch.providers.native.claude import native_extras

        return native_extras(ctx)

    def seed_interface_home(self, home: Path, workdir: Path, env: Mapping[str, str], argv: list[str]) -> None:
        from agentlaunch.providers.native.claude import seed_interface_home

        seed_interface_home(home, workdir, env, argv)

    def parser(self, state: Mapping[str, object] | None = None) -> ClaudeParser:
        return ClaudeParser()

    def new_state(self, session_id: str) -> ProviderState:
        """Claude Code keeps the whole session itself; nothing to remember between launches."""
        return {}

    def resume_state(self, session_id: str, stored: Mapping[str, object] | None) -> ProviderState:
        return dict(stored or {})

    @staticmethod
    def user_message(text: str) -> dict[str, object]:
        return {"type": "user", "message": {"role": "user", "content": text}}

    @staticmethod
    def interrupt_message() -> dict[str, object]:
        """The stdin message that asks Claude Code to end the running turn (its control protocol)."""
        return {"type": "control_request", "request_id": f"interrupt-{os.urandom(4).hex()}", "request": {"subtype": "interrupt"}}

    @staticmethod
    def gate_request() -> dict[str, object] | None:
        """The stdin message that makes Claude Code hold every tool until :meth:`gate_answer` (a budget applies).

        Its control protocol's ``initialize`` with a ``PreToolUse`` hook callback (as claude-agent-sdk
        registers hooks): before each tool, subagents' included, Claude Code sends a ``hook_callback`` control
        request and waits for the answer. No process is started for it.
        """
        hooks = {"PreToolUse": [{"matcher": None, "hookCallbackIds": [GATE_CALLBACK]}]}
        return {
            "type": "control_request",
            "request_id": f"gate-{os.urandom(4).hex()}",
            "request": {"subtype": "initialize", "hooks": hooks},
        }

    @staticmethod
    def gate_answer(request_id: str, allow: bool, reason: str) -> dict[str, object]:
        """The answer to a held tool: nothing to say (it runs), or :func:`tool_refusal` (it does not, and the turn ends)."""
        response: dict[str, object] = {} if allow else tool_refusal(reason)
        return {"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": response}}

    @staticmethod
    def permission_answer(request: PermissionRequest, decision: str) -> dict[str, object]:
        """The stdin answer to a ``can_use_tool`` request: ``decision`` is once, always or deny."""
        if decision in ("once", "always"):
            response: dict[str, Any] = {"behavior": "allow", "updatedInput": request.tool_input}
        else:
            response = {"behavior": "deny", "message": "The user denied this tool use."}
        return {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request.request_id, "response": response},
        }
