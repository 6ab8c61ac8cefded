"""Start the provider CLI while agentlaunch itself is still starting.

A headless `agentlaunch run AGENT PROMPT` on a new session spends a few
hundred milliseconds importing and validating before it can spawn the CLI,
which then spends about a second starting. When the previous launch of the
same agent from the same place left a plan (argv, environment additions,
instructions file digest), the entry point spawns the CLI from that plan
at once, with stdlib imports only. The full launch then computes the real
plan: when it is identical (same argv, same environment, same instructions
bytes) it adopts the running child; otherwise it kills the child unused and
spawns as usual. A child that is never adopted is killed at exit.

Which arguments make a headless new session is read from `run`'s own click
definition: the CLI hands its option table over (:func:`~agentlaunch.launch.early.early_plans.note_run_options`)
and :func:`remember` keeps it beside the plans, so this module never keeps a
second list of options. Without a remembered table there is no plan either,
and nothing to start early.

``AGENTLAUNCH_NO_PRESPAWN=1`` turns this off.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from agentlaunch import __version__, jsonlite, paths
from agentlaunch.fsutil import read_regular
from agentlaunch.launch.early.early_child import Prespawned as Prespawned  # the launch's modules name it here
from agentlaunch.launch.early.early_plans import CACHE_DIR, PLANS_KEEP, RUN_OPTIONS, env_of, keep_run_options, write_if_changed
from agentlaunch.launch.reaper import become_subreaper
from agentlaunch.launch.transport import Child, window_size
from agentlaunch.stdlite import sha256, uuid4

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (about 4 ms before the early start's spawn)
SESSION = "{session}"
CLI_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cli")
DEFINED_IN = ("run.py", "common.py")  # where `run`'s parameters are declared (read as files, never imported here)

# What each parameter of `run` means to the early start, by its click name. `run`'s
# definition says which options take a value; this says what they change. A test fails
# when `run` has a parameter that is not in exactly one of these.
PLAN_PLACE = ("agent", "agents_dir", "working_dir")  # which plan applies (the plan's key)
# A resumed or forked session, no launch, or a --worktree one (its directory is known once git is asked):
# nothing to start early.
NOT_NEW = ("continue_last", "resume", "fork", "help", "worktree")
PROMPT = ("prompt", "prompt_opt")  # a headless turn has one
INERT = ("as_json", "quiet", "timeout", "force", "templates_dir", "budget_usd", "line")  # no say in which plan applies
KNOWN_PARAMS = PLAN_PLACE + NOT_NEW + PROMPT + INERT
INTERFACE_NOT = ("line", "as_json")  # without a prompt: the line chat, or refused (not the CLI's own interface)


if TYPE_CHECKING:
    from typing import Any, Protocol

    class ClickParam(Protocol):
        """What :func:`option_table` reads of a click parameter (click is never imported here)."""

        name: str | None
        opts: list[str]
        secondary_opts: list[str]
        nargs: int
        param_type_name: str


class EarlyTurn(Prespawned):
    """A per-turn CLI started with its first turn's argv, prompt included (:mod:`agentlaunch.launch.early.early_turn`):
    it waits for the end of its stdin, which only an adoption gives it, before it sends anything."""

    __slots__ = ()
    per_turn = True


_pending: Prespawned | None = None


def option_table(params: Iterable[ClickParam], help_names: Sequence[str]) -> dict[str, Any]:
    """`run`'s parameters as the early start reads them: each option string with its parameter's name and the
    number of values it takes (0 for a flag), the arguments in order, and the agentlaunch version."""
    options: dict[str, list[Any]] = {name: ["help", 0] for name in help_names}
    arguments: list[str] = []
    for param in params:
        name = str(param.name)
        if param.param_type_name == "argument":
            arguments.append(name)
            continue
        takes = 0 if getattr(param, "is_flag", False) or getattr(param, "count", False) else param.nargs
        for opt in (*param.opts, *param.secondary_opts):
            options[opt] = [name, takes]
    return {"version": table_version(), "options": options, "arguments": arguments}


def table_version() -> str:
    """What a kept option table must match: agentlaunch's version and the files that define `run`'s options as they
    are now (size and mtime), so a checkout whose `run` changed without a new version never reads a stale table
    (the lean path would take an option `run` no longer has)."""
    stamps = []
    for name in DEFINED_IN:
        try:
            info = os.stat(os.path.join(CLI_DIR, name))
            stamps.append(f"{info.st_size}.{info.st_mtime_ns}")
        except OSError:
            stamps.append("-")
    return f"{__version__}+{'+'.join(stamps)}"


def read_run_options(state_dir: Path) -> dict[str, Any] | None:
    """The option table the last launch kept, when this version of agentlaunch wrote it."""
    try:
        table = jsonlite.loads(read_regular(state_dir / RUN_OPTIONS, 1 << 20))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(table, dict) or table.get("version") != table_version():
        return None
    if not isinstance(table.get("options"), dict) or not isinstance(table.get("arguments"), list):
        return None
    return table


def plan_key(agent: str, agents_dir: str | None, working_dir: str | None) -> str:
    """Which earlier plan a launch may reuse: same agent, same place, same options that shape the plan."""
    where = agents_dir or os.environ.get("AGENTLAUNCH_AGENTS_DIR") or ""
    identity = [
        agent,
        os.path.normpath(where) if where else "",
        os.path.normpath(working_dir) if working_dir else "",
        os.getcwd(),
    ]
    return sha256(jsonlite.dumps(identity).encode()).hexdigest()[:24]


def headless_new_session(args: Sequence[str], table: Mapping[str, Any] | None) -> tuple[str, str | None, str | None] | None:
    """(agent, --agents-dir, --working-dir) when ``args`` are a headless `run` of a new session, else None.

    ``table`` is `run`'s option table (:func:`option_table`). Anything it does not
    describe plainly (an unknown option, combined short flags, ``--``) leaves the
    decision to the full launch: None.
    """
    parsed = parse_run(args, table)
    if parsed is None or parsed[1] is None:
        return None
    return parsed[0]


def interface_new_session(args: Sequence[str], table: Mapping[str, Any] | None) -> tuple[str, str | None, str | None] | None:
    """(agent, --agents-dir, --working-dir) when ``args`` are a `run` of a new session in the CLI's own interface
    (no prompt, no --line, no --json), else None; whether a terminal is there is the caller's to check."""
    parsed = parse_run(args, table)
    if parsed is None or parsed[1] is not None or parsed[2] & set(INTERFACE_NOT):
        return None
    return parsed[0]


def parse_run(
    args: Sequence[str], table: Mapping[str, Any] | None
) -> tuple[tuple[str, str | None, str | None], str | None, set[str]] | None:
    """The plan's place of a `run` of a new session, its prompt (None: none given; ``-``: on stdin), and the flags
    given; None when ``args`` are not such a `run` or hold anything ``table`` does not describe plainly."""
    parsed = parse_params(args, table)
    if parsed is None:
        return None
    named, given, flags = parsed
    if (flags | set(given)) & set(NOT_NEW):
        return None
    prompts = [value for p in PROMPT for value in (named.get(p), given.get(p)) if value is not None]
    if len(prompts) > 1:
        return None  # an argument and -p: the full launch refuses it
    return (named["agent"], given.get("agents_dir"), given.get("working_dir")), prompts[0] if prompts else None, flags


def parse_params(
    args: Sequence[str], table: Mapping[str, Any] | None
) -> tuple[dict[str, str], dict[str, str], set[str]] | None:
    """A `run`'s arguments by parameter name (the agent's always there), its options' values by parameter name and
    the flags given, read with ``table`` (:func:`option_table`); None when ``args`` are not a `run` or hold
    anything the table does not describe plainly (help, an unknown option, combined short flags, ``--``, a value
    missing or given to a flag, an argument too many): click then parses them, and says what is wrong."""
    if table is None or not args or args[0] != "run":
        return None
    options: Mapping[str, Any] = table["options"]
    arguments: Sequence[str] = table["arguments"]
    given: dict[str, str] = {}
    flags: set[str] = set()
    positional: list[str] = []
    i = 1
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        name, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        known = options.get(name)
        if not isinstance(known, list) or len(known) != 2 or known[0] not in KNOWN_PARAMS or known[0] == "help":
            return None
        param, takes = known
        if takes == 0:
            if eq:
                return None  # a flag given a value: click refuses it
            flags.add(param)
            continue
        if takes != 1:
            return None
        if eq:
            given[param] = inline
        elif i < len(args):
            given[param] = args[i]
            i += 1
        else:
            return None  # the value is missing: click refuses it
    if len(positional) > len(arguments):
        return None
    named = dict(zip(arguments, positional, strict=False))
    if "agent" not in named:
        return None
    return named, given, flags


_moment: datetime | None = None


def moment() -> datetime | None:
    """The time the early start gave the startup message of the CLI it started (None: it started none).

    The launch's own startup message takes it too: a launch that crossed a ten-minute boundary (the message's
    time is rounded down to ten minutes) between its early start and its own rendering would otherwise name
    another time than the CLI it started early, and refuse it.
    """
    return _moment


def file_digest(path: Path) -> str | None:
    """The SHA-256 of a regular file's bytes; None when there is none to read."""
    try:
        return sha256(read_regular(path, 64 << 20)).hexdigest()
    except OSError:
        return None


def sources_unchanged(plan: Mapping[str, Any]) -> bool:
    """The user's files the last launch's delivery copied (a Gemini home's GEMINI.md and settings.json) hold the
    bytes they held then: a CLI started early reads the copies that launch made before this one makes its own."""
    sources = plan.get("sources", {})
    return isinstance(sources, dict) and all(file_digest(Path(p)) == d for p, d in sources.items())


def start(args: Sequence[str]) -> None:
    """At the entry point: spawn the CLI from the last plan, when there is one and it still holds."""
    global _pending, _moment
    if os.environ.get("AGENTLAUNCH_NO_PRESPAWN"):
        return
    now = datetime.now()
    state_dir = paths.state_dir()
    table = read_run_options(state_dir)
    parsed = parse_run(args, table)
    if parsed is None or parsed[1] is None:
        if (place := interface_new_session(args, table)) is not None:
            _start_interface(state_dir, plan_key(*place), now)
        return
    shape, prompt = parsed[0], parsed[1]
    try:
        plan = jsonlite.loads(read_regular(state_dir / CACHE_DIR / f"{plan_key(*shape)}.json", 1 << 20))
        instructions = Path(plan["instructions"])
        digest = sha256(read_regular(instructions, 64 << 20)).hexdigest()
        if digest != plan["digest"] or not sources_unchanged(plan):
            return
        agent_env = env_of(Path(plan["agent_yaml"]), plan)
        if agent_env is None:
            return
        session_id = uuid4()
        planned = [a.replace(SESSION, session_id) for a in plan["argv"]]
        argv, stdin, kind = planned, b"", Prespawned
        if "prompt_at" in plan:  # a per-turn CLI: the prompt is in its argv or on its stdin
            from agentlaunch.launch.early.early_turn import with_prompt

            if (turn := with_prompt(planned, plan, prompt, session_id, now)) is None:
                return
            (argv, stdin), kind = turn, EarlyTurn
        extra = {**plan["plan_env"], **agent_env}
        env = {**os.environ, **extra}
        become_subreaper()  # before the CLI starts: an orphan of its comes back here, and the reaper follows its tree
        child = Child(argv, env, Path(plan["cwd"]), size=window_size())
        if stdin:
            child.send_bytes(stdin)  # what the pipe takes now; the launch's loop writes the rest once adopted
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return
    except Exception:  # noqa: BLE001 - never let the shortcut break a launch
        return
    _pending, _moment = kind(child, session_id, argv, extra, digest, stdin), now
    started = _pending
    atexit.register(lambda: None if started.adopted else discard(started))


def _start_interface(state_dir: Path, key: str, now: datetime) -> None:
    """The CLI's own interface from its last plan (:mod:`agentlaunch.launch.early.early_interface`), or the app-server
    Codex's interface runs on (:mod:`agentlaunch.launch.early.early_appserver`)."""
    global _pending, _moment
    from agentlaunch.launch.early import early_interface

    try:
        _pending = early_interface.start(state_dir, key, now)
        if _pending is None:
            from agentlaunch.launch.early import early_appserver

            _pending = early_appserver.start(state_dir, key)
    except Exception:  # noqa: BLE001 - never let the shortcut break a launch
        return
    if _pending is not None:
        started, _moment = _pending, now
        atexit.register(lambda: None if started.adopted else discard(started))


def take() -> Prespawned | None:
    """The pre-started child, for the launch to adopt or refuse (once)."""
    global _pending
    pending, _pending = _pending, None
    return pending


def discard(pending: Prespawned | None = None) -> None:
    """Kill a pre-started child that will not be used."""
    target = pending or take()
    if target is not None:
        target.discard()


def adopt(
    pending: Prespawned | None, argv: Sequence[str], env_extra: Mapping[str, str], digest: str, stdin: bytes = b""
) -> Child | None:
    """The pre-started child when it was started exactly as the launch would start it, ``stdin`` included (else it
    is killed)."""
    if pending is None:
        return None
    same = pending.argv == list(argv) and pending.env == dict(env_extra) and pending.stdin == stdin
    if same and pending.digest == digest:
        pending.adopted = True
        return pending.child
    discard(pending)
    return None


def remember(
    key: str, argv: Sequence[str], session_id: str, plan_env: Mapping[str, str], instructions: Path, digest: str,
    agent_yaml: Path, agent_env: bool, cwd: Path, state_dir: Path, turn: Mapping[str, object] | None = None,
    sources: Sequence[Path] = (),
) -> None:  # fmt: skip
    """Keep this launch's plan for the next one (only what is not secret: the agent's env is re-read from agent.yaml),
    and `run`'s option table the CLI handed over (:func:`~agentlaunch.launch.early.early_plans.note_run_options`);
    ``turn``: where a per-turn CLI's argv holds its prompt (:func:`agentlaunch.launch.early.early_turn.turn_record`);
    ``sources``: the user's files the delivery copied for the CLI, kept by digest (:func:`sources_unchanged`)."""
    from agentlaunch.fsutil import keep_newest

    try:
        yaml_digest: str | None = sha256(agent_yaml.read_bytes()).hexdigest()
    except OSError:
        yaml_digest = None
    record: dict[str, Any] = {
        "agent_yaml_digest": yaml_digest,
        "agent_env": agent_env,
        "argv": [a.replace(session_id, SESSION) for a in argv],
        "plan_env": dict(plan_env),
        "instructions": str(instructions),
        "digest": digest,
        "agent_yaml": str(agent_yaml),
        "cwd": str(cwd),
        **({"sources": {str(p): file_digest(p) for p in sources}} if sources else {}),
        **(turn or {}),
    }
    path = state_dir / CACHE_DIR / f"{key}.json"
    # A plan kept is advice for the next launch, never a reason to fail this one.
    with contextlib.suppress(OSError):
        keep_run_options(state_dir)
        if write_if_changed(path, jsonlite.dumps(record, sort_keys=True).encode()):
            keep_newest(path.parent, PLANS_KEEP)
