"""Gemini CLI: a fresh ``gemini`` process per turn, its prompt on stdin; agentlaunch chooses the session id.

Usage arrives only in ``result.stats``, per turn (not cumulative after
``--resume``): ``input_tokens`` includes ``cached`` and ``input`` is the
uncached part; ``output_tokens`` leaves out thinking tokens, which
``total_tokens`` includes, so reasoning = total - input_tokens - output_tokens
and is counted into output (it is billed as output). Each call's own figures
are in the session file; the session splits the turn into them
(:meth:`GeminiAdapter.calls_in_turn`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentlaunch.errors import DefinitionError
from agentlaunch.events import (
    CallUsage,
    Diagnostic,
    Event,
    SessionStarted,
    TextDelta,
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
from agentlaunch.providers.descriptors import GEMINI, ProviderDescriptor
from agentlaunch.providers.gemini_session import session_calls
from agentlaunch.providers.untrusted import (
    BadUsage,
    counts,
    kind_name,
    label,
    opt_label,
    part_of,
    refused,
    string,
    summarize,
)
from agentlaunch.token_usage import Usage

if TYPE_CHECKING:
    from agentlaunch.definitions.skills_install import InstalledSkills
    from agentlaunch.definitions.spec import AgentSpec
    from agentlaunch.providers.native.source import NativeContext, NativeExtras

GEMINI_FIELDS = ("input_tokens", "cached", "input", "output_tokens", "total_tokens")


def gemini_usage(stats: Any) -> Usage:
    """A turn's ``result.stats`` as a Usage; BadUsage when the figures are not token counts,
    ``input_tokens`` or ``output_tokens`` is missing, or the cached tokens exceed the input."""
    found = counts(stats, GEMINI_FIELDS, required=("input_tokens", "output_tokens"))
    total_input, cached, output = found["input_tokens"], found["cached"], found["output_tokens"]
    derived = part_of(cached, total_input, "cached", "input_tokens")
    reasoning = max(found["total_tokens"] - total_input - output, 0)
    return Usage(
        input=found["input"] if stats.get("input") is not None else derived,
        cache_read=cached,
        output=output + reasoning,
        reasoning=reasoning,
    )


GEMINI_RETRY = re.compile(r"Attempt (\d+) failed with status (\d+)\. Retrying with backoff\.\.\.(.*)", re.DOTALL)


def gemini_retry(line: str) -> str | None:
    """The cause and attempt of the line Gemini CLI prints (not JSON) as it retries a failed call, else None.

    Measured on 0.61.0 headless against a fake API answering 503: ``Attempt 3 failed with status 503. Retrying with
    backoff... _ApiError: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}``.
    """
    found = GEMINI_RETRY.match(line.strip())
    if found is None:
        return None
    attempt, status, rest = found.group(1), found.group(2), found.group(3)
    message = ""
    if "{" in rest:
        try:
            message = string(untrusted.obj(untrusted.obj(json.loads(rest[rest.index("{") :])).get("error")).get("message"))
        except ValueError:
            message = ""
    return f"{status} {message[:200]}".strip() + f", attempt {attempt}"


class GeminiParser(JsonLineParser):
    """``gemini --output-format stream-json`` lines to normalized events."""

    def read_line(self, line: str) -> list[Event]:
        events = super().read_line(line)
        if len(events) == 1 and isinstance(events[0], Diagnostic) and (retry := gemini_retry(events[0].line)):
            return [events[0], Warning(f"API call failed; {retry}", retry=retry)]  # the line stays as it was
        return events

    def __init__(self, asked: str | None = None, resumed: bool = False, counted_through: str | None = None) -> None:
        self.asked = asked
        self.resumed = resumed
        self.session_id: str | None = None
        # The id of the last call counted from the session file; "" none yet; None unknown.
        self.counted_through = counted_through

    def event(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj.get("type")
        if kind == "init":
            self.session_id = label(obj.get("session_id"), "None")
            return [SessionStarted(self.session_id, opt_label(obj.get("model")))]
        if kind == "message":
            content = string(obj.get("content"))
            if obj.get("role") == "assistant" and content:
                return [TextDelta(content)]
            return []
        if kind == "tool_use":
            name = label(obj.get("tool_name"), "?")
            return [ToolUse(label(obj.get("tool_id")), name, summarize(obj.get("parameters") or {}))]
        if kind == "tool_result":
            failed = obj.get("status") != "success"
            detail = obj.get("error") or obj.get("output") or ""
            return [ToolResult(label(obj.get("tool_id")), failed, summarize(detail))]
        if kind == "error":
            message = string(obj.get("message")) or "error"
            if obj.get("severity") == "error":
                return [TurnEnd(is_error=True, error=message)]
            return [Warning(message)]
        if kind == "result":
            return self._result(obj)
        return [Unknown(kind_name(kind))]

    def _result(self, obj: dict[str, Any]) -> list[Event]:
        stats = untrusted.obj(obj.get("stats"))
        events: list[Event] = []
        models = stats.get("models")
        model = opt_label(next(iter(models), None)) if isinstance(models, dict) else None
        if obj.get("status") == "success" or any(stats.get(k) for k in ("input_tokens", "output_tokens")):
            try:
                events.append(CallUsage(gemini_usage(stats), model))
            except BadUsage as why:
                events.append(Warning(refused("gemini", None, why)))
        if obj.get("status") == "success":
            events.append(TurnEnd(result=""))
        else:
            error = untrusted.obj(obj.get("error"))
            events.append(TurnEnd(is_error=True, error=string(error.get("message")) or label(obj.get("status")) or "error"))
        return events


COMPILE_CACHE_DIR = "node-compile-cache"  # in the state directory


def compile_cache_env(state_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``NODE_COMPILE_CACHE`` in the state directory, unless the user's environment sets it or turns it off.

    Gemini CLI 0.61 is a 20 MB bundle that Node compiles at every start and does not turn Node's compile cache on
    itself; with it (Node 22.1 and later; older Node ignores the variable) a start takes about a fifth less CPU
    (``gemini -p`` against the fake API: 0.85 CPU-s against 1.05 on Node 22). Node keeps the cache by its own
    version and each file's content; it holds about 13 MB for one Gemini version and is safe to delete.
    """
    if env.get("NODE_COMPILE_CACHE") or env.get("NODE_DISABLE_COMPILE_CACHE"):
        return {}
    return {"NODE_COMPILE_CACHE": str(state_dir / COMPILE_CACHE_DIR)}


class GeminiAdapter(AdapterDefaults):
    """Gemini CLI 0.61."""

    descriptor: ProviderDescriptor = GEMINI
    persistent: Literal[False] = False
    app_server = False
    chooses_session_id = True  # --session-id, headless and in its own interface alike
    has_interface = True
    early_interface = False  # not measured: its hooks live in the per-agent Gemini home
    # No early first turn (issue 40): measured within the noise (early against none: wall 0.983, middle half
    # 0.91-1.05, docs/performance-log.md), and a Gemini started from a plan that no longer holds may have made its
    # session file before it is killed, so the launch's own Gemini refused that session id ("already exists").
    early_turn = False

    def plan_turn(self, spec: AgentSpec, command: str, state: Mapping[str, object], prompt: str) -> TurnPlan:
        """``gemini --output-format stream-json [-m M] --session-id|--resume ID``, the prompt on stdin.

        Gemini 0.61 with stdin not a terminal reads it as the prompt: with no ``-p`` the model gets exactly
        those bytes (``-p X`` would make it ``stdin + "\n\n" + X``), a prompt starting with a dash is no
        option, and no argv limit applies. Once a byte has arrived it reads to the pipe's end before it sends
        anything (what would let a first turn start early; it does not: ``early_turn``).
        """
        session_flag = "--resume" if state.get("started") else "--session-id"
        argv = [command, "--output-format", "stream-json"]
        if spec.model:
            argv += ["-m", spec.model]
        argv += [session_flag, str(state["session_id"]), *spec.provider_flags]
        return TurnPlan(argv=argv, stdin=prompt.encode("utf-8"))

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
        """Gemini's own interface: ``gemini [-m M] --session-id ID [-i "startup message"]``, or ``--resume ID``.

        The instructions need no argument: they are in the per-agent home the environment names
        (``delivery: gemini-home``), or in GEMINI.md.
        """
        if fork is not None:
            raise DefinitionError(f"{spec.name}: {self.descriptor.no_fork}")
        sid = str(state.get("session_id") or session_id)
        argv = [command, *placement_argv]
        if spec.model:
            argv += ["-m", spec.model]
        argv += ["--resume" if resumed and state.get("started", True) else "--session-id", sid]
        argv += [*spec.provider_flags, *extra_argv]
        if prompt and not resumed:
            argv += [f"--prompt-interactive={prompt}"] if prompt.startswith("-") else ["-i", prompt]
        return argv

    def state_after_interface(self, session_id: str, state: Mapping[str, object], env: Mapping[str, str]) -> ProviderState:
        """The session as a headless turn continues it: started, counted through its last call in the session file."""
        sid = str(state.get("session_id") or session_id)
        calls = session_calls(sid, env)
        counted = calls[-1].call_id if calls else state.get("counted_through")
        return {"session_id": sid, "started": True, "counted_through": counted if isinstance(counted, str) else ""}

    def deliver(
        self,
        spec: AgentSpec,
        text: str,
        path: Path,
        skills: InstalledSkills | None,
        state_dir: Path,
        env: Mapping[str, str],
    ) -> Delivered:
        """``delivery: gemini-home``: a per-agent ``GEMINI_CLI_HOME`` whose global GEMINI.md is the user's own, then
        the agent's text, its ``skills`` folder linking the agent's skills (``file``: GEMINI.md is read where it is).
        Either way, Node's compile cache for the CLI (:func:`compile_cache_env`)."""
        cache = compile_cache_env(state_dir, env)
        if spec.delivery != "gemini-home":
            return Delivered(env=cache)
        from agentlaunch.providers.gemini_home import prepare_home

        home_env = prepare_home(state_dir, spec.name, text, env, skills=skills.links() if skills else None)
        return Delivered(env={**cache, **home_env})

    def native_extras(self, ctx: NativeContext) -> NativeExtras:
        from agentlaunch.providers.native.gemini import native_extras

        return native_extras(ctx)

    def new_state(self, session_id: str) -> ProviderState:
        return {"session_id": session_id, "started": False}

    def resume_state(self, session_id: str, stored: Mapping[str, object] | None) -> ProviderState:
        return dict(stored) if stored and stored.get("session_id") else {"session_id": session_id, "started": True}

    def parser(self, state: Mapping[str, object]) -> GeminiParser:
        started = bool(state.get("started"))
        counted = state.get("counted_through")
        if not isinstance(counted, str):
            counted = None if started else ""  # a started session with no record of it: unknown; a new one: none yet
        return GeminiParser(opt_label(state.get("session_id")), started, counted)

    def calls_in_turn(self, turn: CallUsage, parser: Parser, env: Mapping[str, str]) -> list[CallUsage]:
        """The turn's sum split into its calls, from the session file (see :func:`~agentlaunch.providers.base.split_turn`)."""
        parser = own_parser(parser, GeminiParser)
        calls = split_turn(turn, session_calls(parser.session_id or "", env))
        # Split: counted up to its last call. Kept as the sum: where the count stands in the file is unknown.
        parser.counted_through = calls[-1].call_id
        return calls

    def calls_not_counted(self, parser: Parser, env: Mapping[str, str]) -> list[CallUsage]:
        """Finished calls of a turn that ended without a result (interrupted, failed), from the session file.

        They are the calls after the last one counted; nothing when that point is unknown.
        """
        parser = own_parser(parser, GeminiParser)
        if parser.counted_through is None:
            return []
        calls = session_calls(parser.session_id or parser.asked or "", env)
        ids = [call.call_id for call in calls]
        if parser.counted_through and parser.counted_through not in ids:
            return []
        new = calls[ids.index(parser.counted_through) + 1 :] if parser.counted_through else calls
        if new:
            parser.counted_through = new[-1].call_id
        return new

    def state_after_turn(self, parser: Parser, env: Mapping[str, str]) -> tuple[ProviderState, list[Event]]:
        parser = own_parser(parser, GeminiParser)
        if parser.session_id is None:  # the CLI never said it started the session
            return {"session_id": parser.asked, "started": parser.resumed, "counted_through": parser.counted_through}, []
        return {"session_id": parser.session_id, "started": True, "counted_through": parser.counted_through}, []
