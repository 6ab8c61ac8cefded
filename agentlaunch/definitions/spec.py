"""Agent definitions: find, load and validate them into frozen AgentSpecs.

An agents directory holds one folder per agent (``agent.yaml`` plus the files
it names) and two shared folders, ``bundles/`` and ``skills/``. Every file read
is checked to lie inside the agents directory, and every problem is reported
as a ``FILE: FIELD: message`` line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch import __version__
from agentlaunch.datarecord import datarecord
from agentlaunch.definitions.names import agent_names, not_found, require_agents_dir
from agentlaunch.definitions.skills import Skill, parse_skill, skill_names
from agentlaunch.errors import DefinitionError, StateError
from agentlaunch.fsutil import read_regular
from agentlaunch.providers.descriptors import DESCRIPTORS, describe

if TYPE_CHECKING:
    from pydantic import ValidationError

BRANCH_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,199}")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # matched whole (fullmatch): "$" would let a trailing newline in
PROVIDERS: tuple[str, ...] = tuple(DESCRIPTORS)  # one per provider descriptor; schemas.Provider must agree (a test checks)
SCRATCH = "@scratch"
VALIDATED_DIR = "validated"  # in the state dir: what the schema accepted, by content
BYTES_DIR = "validated-bytes"  # in the state dir: agent.yaml files without env that passed, by their exact text
# Each file read has a size limit: more is surely a mistake, and would cost every launch (a 200 MB soul: 38 s, 1 GB).
PART_LIMIT = 4 << 20  # a soul, agent.md, bundle or SKILL.md: about a million tokens, more than any model's context
YAML_LIMIT = 1 << 20  # agent.yaml
MEMO_LIMIT = 1 << 20  # a memo holds one agent.yaml's checked keys
MEMO_KEEP = 64  # memos kept (the newest): one is written per new agent.yaml content


@datarecord(frozen=True)
class Part:
    """One text that goes into the instructions: a soul, agent file or bundle."""

    name: str
    path: Path
    text: str


@datarecord(frozen=True)
class AgentSpec:
    """A validated agent definition with every file it names already read."""

    name: str
    display: str
    id: str
    provider: str
    model: str | None
    agents_dir: Path
    soul: Part | None
    instructions: Part | None
    bundles: tuple[Part, ...]
    skills: tuple[Skill, ...]
    working_dir: str | None
    accounts: tuple[str, ...]
    peers: tuple[str, ...]
    startup: str | None
    provider_flags: tuple[str, ...]
    command: str | None
    context_window: int | None
    compaction_buffer: int
    env: Mapping[str, str]
    permission_mode: str | None
    allowed_tools: tuple[str, ...]
    delivery: str = "file"
    """``file`` (the provider's instructions file in the working dir) or ``system-prompt`` (where the provider has one);
    the provider's default when agent.yaml does not say (see :class:`~agentlaunch.providers.descriptors.ProviderDescriptor`)."""
    prefix_order: str = "own-first"
    """``own-first`` (soul, instructions, bundles, skills) or ``shared-first`` (bundles, skills, soul, instructions)."""
    notify: tuple[str, ...] | None = None
    """The command run when the agent needs the person (see :mod:`agentlaunch.live.needs_you`); None: the global one."""
    notify_after: float | None = None
    """Seconds a turn must take before its end is announced; None: the global setting (30)."""
    worktree: bool = False
    """Run in a git worktree of the agent's own (see :mod:`agentlaunch.definitions.worktrees`)."""
    worktree_branch: str | None = None
    """That worktree's branch; None: ``agentlaunch/<agent>``."""
    worktree_setup: tuple[str, ...] = ()
    """Shell commands run once in the agent's new worktree before its CLI starts (see :mod:`agentlaunch.worktree_setup`)."""
    budget: Mapping[str, float | int | str | None] | None = None
    """``budget:`` of agent.yaml (session_usd, daily_usd, session_tokens, daily_tokens, five_hour_percent,
    seven_day_percent), None when not given."""
    compaction_at: int | None = None
    """Tokens at which the CLI compacts (passed to it); None: where the CLI chooses (the window less the buffer)."""
    cache_ttl: str | None = None
    """The prompt cache's lifetime the CLI asks for (``5m``, ``1h``); None: the CLI chooses."""

    @property
    def agent_dir(self) -> Path:
        return self.agents_dir / self.name


def branch_problem(branch: str) -> str | None:
    """Why ``branch`` cannot be a worktree's branch name (the rules of git check-ref-format, kept simple), or None."""
    if not BRANCH_RE.fullmatch(branch) or ".." in branch or "//" in branch or branch.endswith((".", "/", ".lock")):
        return f"{branch!r} is not a usable branch name: use letters, digits, '.', '_', '-' and '/' (no '..', no leading '-')"
    return None


def setup_problems(commands: list[str], yaml_path: Path) -> list[str]:
    """What is wrong with ``worktree_setup:``'s commands (the schema checked it is a list of strings)."""
    problems = []
    for i, command in enumerate(commands):
        if not command.strip():
            problems.append(f"{yaml_path}: worktree_setup.{i}: an empty command (each entry is one shell command line)")
        elif "\0" in command:
            problems.append(f"{yaml_path}: worktree_setup.{i}: a command cannot hold a NUL character")
    return problems


def check_name(name: str, what: str) -> str | None:
    """Return a problem message when ``name`` is not a plain, safe name."""
    if not NAME_RE.fullmatch(name) or ".." in name:
        return f"{what} name {name!r} is not allowed: use letters, digits, '.', '_' and '-' only (no path separators, no '..')"
    return None


def read_text(path: Path, root: Path, label: str, limit: int = PART_LIMIT) -> str:
    """Read a UTF-8 file that must lie inside ``root``; problems become DefinitionErrors.

    Only a regular file of at most ``limit`` bytes is read: a FIFO, device or
    directory in its place is refused without blocking (:func:`agentlaunch.fsutil.read_regular`).
    """
    from agentlaunch.fsutil import FileTooLarge, NotRegularFile

    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise DefinitionError(f"{path}: {label}: refers outside the agents directory {root}")
    try:
        data = read_regular(resolved, limit)
    except FileNotFoundError:
        raise DefinitionError(f"{path}: {label}: file not found") from None
    except NotRegularFile as exc:
        raise DefinitionError(f"{path}: {label}: {exc.strerror}; it must be a file") from None
    except FileTooLarge as exc:
        raise DefinitionError(f"{path}: {label}: {exc.strerror} for one file") from None
    except OSError as exc:
        raise DefinitionError(f"{path}: {label}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DefinitionError(f"{path}: {label}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def _load_yaml(path: Path, root: Path, text: str | None = None) -> dict[str, Any]:
    import yaml  # here, not at the top: a launch of an unchanged agent without env does not parse YAML (~7 ms)

    from agentlaunch.definitions.yamlload import safe_load

    text = read_text(path, root, "agent.yaml", YAML_LIMIT) if text is None else text
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DefinitionError(f"{path}: yaml: {where}{problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DefinitionError(f"{path}: yaml: expected a mapping of keys, got {type(data).__name__}")
    return data


def validated_config(raw: dict[str, Any], yaml_path: Path, state_dir: Path | None) -> dict[str, Any]:
    """agent.yaml's keys as the schema (:class:`agentlaunch.definitions.schemas.AgentYaml`) accepts them, defaults filled in.

    A content that passed once is remembered in ``state_dir``, keyed by the
    content, the schema's source and agentlaunch's version, so a launch of an
    unchanged agent does not import pydantic. Only what passed is remembered,
    and never ``env`` (it may hold secrets): it is left out of the key and the
    record, and taken from the file each time when it is a plain mapping of
    strings. A bad file is checked, and reported, every time.
    """
    env = raw.get("env", {})
    plain_env = isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    memo: Path | None = None
    if state_dir is not None and plain_env:
        with contextlib.suppress(OSError, TypeError, ValueError, RecursionError):
            # TypeError: YAML can hold what JSON cannot (dates); such a file is checked every time.
            content = json.dumps({k: v for k, v in raw.items() if k != "env"}, sort_keys=True)
            schema = Path(__file__).with_name("schemas.py").read_bytes()
            digest = sha256(f"{__version__}\0{content}\0".encode() + schema).hexdigest()
            memo = state_dir / VALIDATED_DIR / f"{digest[:32]}.json"
            remembered = json.loads(read_regular(memo, MEMO_LIMIT))  # a memo is someone else's file too: never a FIFO
            if isinstance(remembered, dict):
                return {**remembered, "env": dict(env)}
    from pydantic import ValidationError

    from agentlaunch.definitions.schemas import AgentYaml

    try:
        conf = AgentYaml.model_validate(raw).model_dump(mode="json")
    except ValidationError as exc:
        raise DefinitionError(_validation_problems(yaml_path, exc, sorted(AgentYaml.model_fields))) from None
    if memo is not None:
        from agentlaunch.fsutil import keep_newest, write_atomic

        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(memo, json.dumps({k: v for k, v in conf.items() if k != "env"}, sort_keys=True).encode())
            keep_newest(memo.parent, MEMO_KEEP)
    return conf


def _validation_problems(path: Path, exc: ValidationError, allowed: list[str]) -> list[str]:
    problems = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "(top)"
        if err["type"] == "extra_forbidden" and err["loc"][:1] == ("budget",):
            message = ("unknown key (allowed: session_usd, daily_usd, session_tokens, daily_tokens, five_hour_percent, "
                       "seven_day_percent, on_spent; budgets are in US dollars)")
        elif err["type"] == "extra_forbidden":
            message = "unknown key (allowed: " + ", ".join(allowed) + ")"
        else:
            message = err["msg"]
            # Never echo what env holds (its values are often secrets); anything else is shown short.
            if err["type"] != "missing" and "input" in err and err["loc"][:1] != ("env",):
                message += f" (got {_short_repr(err['input'])})"
        problems.append(f"{path}: {field}: {message}")
    return problems


def agent_config(yaml_path: Path, root: Path, state_dir: Path | None) -> dict[str, Any]:
    """agent.yaml read and checked (:func:`validated_config`), without parsing YAML when nothing changed.

    An agent.yaml without ``env`` whose exact bytes passed before is taken from
    the memo of those bytes in ``state_dir``. One with ``env`` is parsed every
    time: its values (maybe secrets) are never written down.
    """
    text = read_text(yaml_path, root, "agent.yaml", YAML_LIMIT)
    memo: Path | None = None
    if state_dir is not None:
        with contextlib.suppress(OSError, ValueError, RecursionError):
            schema = Path(__file__).with_name("schemas.py").read_bytes()
            digest = sha256(f"raw\0{__version__}\0{text}\0".encode() + schema).hexdigest()
            memo = state_dir / BYTES_DIR / f"{digest[:32]}.json"
            remembered = json.loads(read_regular(memo, MEMO_LIMIT))  # a memo is someone else's file too: never a FIFO
            if isinstance(remembered, dict) and "env" not in remembered:
                return {**remembered, "env": {}}
    raw = _load_yaml(yaml_path, root, text)
    conf = validated_config(raw, yaml_path, state_dir)
    if memo is not None and "env" not in raw:
        from agentlaunch.fsutil import keep_newest, write_atomic

        with contextlib.suppress(OSError, TypeError, ValueError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(memo, json.dumps({k: v for k, v in conf.items() if k != "env"}, sort_keys=True).encode())
            keep_newest(memo.parent, MEMO_KEEP)
    return conf


def _short_repr(value: object) -> str:
    """``repr`` cut to a line: a value from a hostile file may be huge, deep or self-referencing."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring = short.maxother = 60
    short.maxlevel = 3
    return short.repr(value)


def load_agent(agents_dir: Path, name: str, state_dir: Path | None = None) -> AgentSpec:
    """Load and validate one agent; raise DefinitionError listing every problem found.

    ``state_dir`` lets a launch reuse an earlier check of the same agent.yaml (see :func:`validated_config`).
    """
    if problem := check_name(name, "agent"):
        raise DefinitionError(f"{agents_dir}: agent: {problem}")
    root = require_agents_dir(agents_dir)
    agent_dir = root / name
    yaml_path = agent_dir / "agent.yaml"
    if not os.path.lexists(yaml_path):  # anything else in its place (a FIFO, say) is refused by read_text
        raise DefinitionError(not_found(root, name))
    conf = agent_config(yaml_path, root, state_dir)

    problems: list[str] = []

    def optional_part(field: str, explicit: str | None, default: str) -> Part | None:
        rel = explicit if explicit is not None else default
        path = agent_dir / rel
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            problems.append(f"{yaml_path}: {field}: {rel!r} must be a file inside the agent folder")
            return None
        if explicit is None and not path.exists():
            return None
        try:
            return Part(field, path, read_text(path, root, field))
        except DefinitionError as exc:
            problems.extend(exc.problems)
            return None

    soul = optional_part("soul", conf["soul"], "soul.md")
    instructions = optional_part("instructions", conf["instructions"], "agent.md")

    bundles: list[Part] = []
    for i, bundle in enumerate(conf["bundles"]):
        if problem := check_name(bundle, "bundle"):
            problems.append(f"{yaml_path}: bundles.{i}: {problem}")
            continue
        path = root / "bundles" / f"{bundle}.md"
        if not os.path.lexists(path):
            problems.append(f"{yaml_path}: bundles.{i}: unknown bundle {bundle!r} (no file {path})")
            continue
        try:
            bundles.append(Part(bundle, path, read_text(path, root, "bundle")))
        except DefinitionError as exc:
            problems.extend(exc.problems)

    wanted = skill_names(root) if conf["skills"] == "all" else conf["skills"]
    skills: list[Skill] = []
    for i, skill in enumerate(wanted):
        if problem := check_name(skill, "skill"):
            problems.append(f"{yaml_path}: skills.{i}: {problem}")
            continue
        if not os.path.lexists(root / "skills" / skill / "SKILL.md"):
            problems.append(f"{yaml_path}: skills.{i}: unknown skill {skill!r} (no file skills/{skill}/SKILL.md)")
            continue
        try:
            path = root / "skills" / skill / "SKILL.md"
            skills.append(parse_skill(path, read_text(path, root, "skill"), skill))
        except DefinitionError as exc:
            problems.extend(exc.problems)

    provider = describe(conf["provider"])
    delivery = conf["delivery"]
    if delivery and delivery not in provider.deliveries:
        able = " and ".join(d.name for d in DESCRIPTORS.values() if delivery in d.deliveries)
        problems.append(f"{yaml_path}: delivery: {delivery!r} is supported for provider {able} only (got {provider.name})")

    others = [n for n in agent_names(root) if n != name]
    if conf["peers"] is None:
        peers = others
    else:
        peers = list(conf["peers"])
        for i, peer in enumerate(peers):
            if problem := check_name(peer, "peer"):
                problems.append(f"{yaml_path}: peers.{i}: {problem}")
    notify: tuple[str, ...] | None = None
    if conf.get("notify") is not None:
        from agentlaunch.definitions.settings import notify_command  # only a definition with notify: pays for it

        try:
            notify = notify_command(conf.get("notify"), str(yaml_path))
        except DefinitionError as exc:
            problems.extend(exc.problems)
    from agentlaunch.definitions.provider_settings import cache_ttl_problems, compaction_problems

    problems += compaction_problems(conf, provider, yaml_path) + cache_ttl_problems(conf, provider, yaml_path)
    branch = conf.get("worktree_branch")
    if branch is not None and (problem := branch_problem(branch)):
        problems.append(f"{yaml_path}: worktree_branch: {problem}")
    problems += setup_problems(conf.get("worktree_setup") or [], yaml_path)
    if problems:
        raise DefinitionError(problems)
    return AgentSpec(
        name=name,
        display=conf["display"] or name,
        id=conf["id"] or name,
        provider=conf["provider"],
        model=conf["model"],
        agents_dir=root,
        soul=soul,
        instructions=instructions,
        bundles=tuple(bundles),
        skills=tuple(skills),
        working_dir=conf["working_dir"],
        accounts=tuple(conf["accounts"]),
        peers=tuple(peers),
        startup=conf["startup"],
        provider_flags=tuple(conf["provider_flags"]),
        command=conf["command"],
        context_window=conf["context_window"],
        compaction_buffer=conf["compaction_buffer"],
        env=dict(conf["env"]),
        permission_mode=conf["permission_mode"],
        allowed_tools=tuple(conf["allowed_tools"]),
        delivery=conf["delivery"] or provider.default_delivery,
        prefix_order=conf["prefix_order"],
        notify=notify,
        notify_after=conf.get("notify_after"),
        worktree=bool(conf.get("worktree", False)),
        worktree_branch=branch,
        worktree_setup=tuple(conf.get("worktree_setup") or ()),
        budget=conf.get("budget"),
        compaction_at=conf.get("compaction_at"),
        cache_ttl=conf.get("cache_ttl"),
    )


def resolve_working_dir(spec: AgentSpec, override: Path | None, state_dir: Path) -> Path:
    """The absolute working directory for a launch of ``spec``.

    ``override`` (``--working-dir``) wins, then ``working_dir`` from agent.yaml
    (``~`` expanded, relative paths taken from the current directory; the
    value ``@scratch`` means a folder of the agent's own in the state
    directory, created on demand), else the current directory.
    """
    if override is not None:
        path = override.expanduser()
    elif spec.working_dir == SCRATCH:
        path = state_dir / "scratch" / spec.name
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(f"{state_dir}: cannot create the agent's scratch folder {path} ({exc.strerror})") from None
    elif spec.working_dir:
        path = Path(spec.working_dir).expanduser()
    else:
        path = Path.cwd()
    path = path.resolve()
    if not path.is_dir():
        source = "--working-dir" if override is not None else f"{spec.agent_dir / 'agent.yaml'}: working_dir"
        raise DefinitionError(f"{source}: working directory {path} does not exist")
    return path
