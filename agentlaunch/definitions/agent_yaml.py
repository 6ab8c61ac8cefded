"""agent.yaml read (bounded YAML) and checked by the schema, remembered in the state directory so that a launch of an
unchanged agent parses no YAML and imports no pydantic: by its exact bytes (a file without ``env``), and by its checked
content (any file whose ``env`` is plain strings; ``env`` itself is never written down)."""

from __future__ import annotations

import contextlib
import json
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlaunch import __version__
from agentlaunch.definitions.bounded_read import read_text
from agentlaunch.errors import DefinitionError
from agentlaunch.fsutil import read_regular

if TYPE_CHECKING:
    from pydantic import ValidationError

VALIDATED_DIR = "validated"  # in the state dir: what the schema accepted, by content
BYTES_DIR = "validated-bytes"  # in the state dir: agent.yaml files without env that passed, by their exact text
YAML_LIMIT = 1 << 20  # agent.yaml
MEMO_LIMIT = 1 << 20  # a memo holds one agent.yaml's checked keys
MEMO_KEEP = 64  # memos kept (the newest): one is written per new agent.yaml content


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
            message = (
                "unknown key (allowed: session_usd, daily_usd, session_tokens, daily_tokens, five_hour_percent, "
                "seven_day_percent, on_spent; budgets are in US dollars)"
            )
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
