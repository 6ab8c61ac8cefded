"""Codex's ``delivery: developer-instructions``: the agent's text as ``-c developer_instructions=<TOML string>``.

Measured on Codex CLI 0.171.0 (see docs/providers.md): the value lands in a
developer message right after Codex's own base prompt, inside the prefix that
fresh sessions in differently named projects share, and two agents in one
directory each see only their own. The ``-c`` value *replaces* the user's own
``developer_instructions`` (config.toml's, or their ``-p`` profile's), so theirs
is read here and put in front. Codex parses the value as TOML and, when that
fails, silently uses the raw text (quotes included): :func:`toml_basic_string`
must be exact. This module uses the standard library only.

The answer for the user's files as they are is remembered in the state
directory (``validated/``, keyed by the files' bytes and the profile), so a
launch whose Codex config did not change imports no TOML parser (``tomllib``
and its regexes: about 2.5 ms of a headless Codex launch's CPU). Only an
answer is remembered: a config that cannot be read or parsed is refused on
every launch.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from hashlib import sha256
from pathlib import Path

from agentlaunch import __version__
from agentlaunch.definitions.agent_yaml import MEMO_KEEP, MEMO_LIMIT, VALIDATED_DIR
from agentlaunch.errors import DefinitionError
from agentlaunch.fsutil import read_regular

KEY = "developer_instructions"
MAX_ARG_STRLEN = 128 * 1024
"""Linux caps one argv string at 32 pages (131,072 bytes, the terminating NUL included)."""

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_basic_string(text: str) -> str:
    """``text`` as a TOML basic string: ``"..."`` with quotes, backslashes and every control character escaped.

    TOML allows no raw control character (U+0000-U+001F, U+007F) other than tab in
    a basic string; tab is escaped too, so the result is one line whatever the text.
    """
    out = []
    for ch in text:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def codex_home(env: Mapping[str, str]) -> Path:
    """``$CODEX_HOME``, else ``~/.codex`` (the user's; only read here)."""
    if env.get("CODEX_HOME"):
        return Path(env["CODEX_HOME"])
    return Path(env.get("HOME") or Path.home()).expanduser() / ".codex"


def _read(path: Path) -> bytes | None:
    """A config file's bytes; None when it does not exist; a DefinitionError when it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DefinitionError(f"{path}: cannot read Codex's config ({exc.strerror})") from None


def _parse_toml(raw: bytes | None, path: Path) -> dict[str, object]:
    """A TOML file's table; {} when it does not exist; a DefinitionError when it cannot be parsed."""
    if raw is None:
        return {}
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DefinitionError(f"{path}: Codex's config is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(
            f"{path}: Codex's config is not valid TOML ({exc})",
            hint="fix the file (Codex itself refuses it too), then launch again",
        ) from None


def selected_profile(provider_flags: Sequence[str]) -> str | None:
    """The profile named by ``-p NAME``/``--profile NAME``/``--profile=NAME`` in ``provider_flags`` (the last wins)."""
    name = None
    flags = list(provider_flags)
    for i, flag in enumerate(flags):
        if flag in ("-p", "--profile") and i + 1 < len(flags):
            name = flags[i + 1]
        elif flag.startswith("--profile="):
            name = flag.split("=", 1)[1]
    return name


def _text_of(table: Mapping[str, object], path: Path, where: str) -> str | None:
    value = table.get(KEY)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DefinitionError(f"{path}: {where}{KEY} must be a string (got {type(value).__name__})")
    return value


def user_developer_instructions(
    env: Mapping[str, str], provider_flags: Sequence[str], state_dir: Path | None = None
) -> str | None:
    """The user's own ``developer_instructions``, as Codex would use them without agentlaunch's ``-c``.

    From ``$CODEX_HOME/config.toml``'s top level; an active profile's value wins:
    ``-p NAME`` in ``provider_flags`` layers ``$CODEX_HOME/NAME.config.toml`` (Codex
    0.171's profiles), and a legacy ``profile = "NAME"`` selects ``[profiles.NAME]``.
    With ``state_dir``, the answer for these very files is remembered there (see the module).
    """
    home = codex_home(env)
    config_path = home / "config.toml"
    profile = selected_profile(provider_flags)
    profile_path = home / f"{profile}.config.toml"
    config_raw = _read(config_path)
    profile_raw: bytes | None = None
    unreadable: DefinitionError | None = None  # the profile's: said after the config's own problems, as before
    if profile:
        try:
            profile_raw = _read(profile_path)
        except DefinitionError as exc:
            unreadable = exc
    memo: Path | None = None
    if state_dir is not None and unreadable is None:
        with contextlib.suppress(OSError, ValueError, RecursionError):
            digest = sha256(f"codex {KEY}\0{__version__}\0{profile}\0".encode())
            for raw in (config_raw, profile_raw):
                digest.update(b"-" if raw is None else b"+" + sha256(raw).digest())
            memo = state_dir / VALIDATED_DIR / f"codex-{digest.hexdigest()[:32]}.json"
            remembered = json.loads(read_regular(memo, MEMO_LIMIT))  # someone else's file too: never a FIFO
            if isinstance(remembered, dict) and KEY in remembered and isinstance(remembered[KEY], str | None):
                return remembered[KEY]  # type: ignore[no-any-return]
    found = _instructions(config_raw, config_path, profile, profile_raw, profile_path, unreadable)
    if memo is not None:
        from agentlaunch.fsutil import keep_newest, write_atomic

        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(memo, json.dumps({KEY: found}).encode())
            keep_newest(memo.parent, MEMO_KEEP)
    return found


def _instructions(
    config_raw: bytes | None,
    config_path: Path,
    profile: str | None,
    profile_raw: bytes | None,
    profile_path: Path,
    unreadable: DefinitionError | None,
) -> str | None:
    """:func:`user_developer_instructions` from the files' bytes (None: the file does not exist)."""
    config = _parse_toml(config_raw, config_path)
    found = _text_of(config, config_path, "")
    if profile:
        if unreadable is not None:
            raise unreadable
        profile_text = _text_of(_parse_toml(profile_raw, profile_path), profile_path, "")
        return profile_text if profile_text is not None else found
    legacy = config.get("profile")
    profiles = config.get("profiles")
    if isinstance(legacy, str) and isinstance(profiles, dict) and isinstance(profiles.get(legacy), dict):
        legacy_text = _text_of(profiles[legacy], config_path, f"[profiles.{legacy}] ")
        if legacy_text is not None:
            return legacy_text
    return found


def developer_instructions_value(agent_text: str, user_text: str | None) -> str:
    """What Codex receives: the user's own developer instructions, a blank line, then the agent's."""
    if user_text and user_text.strip():
        return user_text.rstrip("\n") + "\n\n" + agent_text
    return agent_text


def developer_instructions_argv(agent_text: str, user_text: str | None, source: Path) -> list[str]:
    """``["-c", "developer_instructions=<TOML string>"]`` for every ``codex exec`` of the agent.

    A DefinitionError when the argument would pass the kernel's limit on one argv
    string: Codex reads a larger value only from a profile file inside
    ``$CODEX_HOME`` (``-p NAME``), that is inside the user's own config folder,
    which agentlaunch does not write into.
    """
    value = developer_instructions_value(agent_text, user_text)
    arg = f"{KEY}={toml_basic_string(value)}"
    size = len(arg.encode("utf-8")) + 1  # the terminating NUL counts
    if size > MAX_ARG_STRLEN:
        raise DefinitionError(
            f"{source}: the instructions for Codex take {size:,} bytes as one argument "
            f"(-c {KEY}=...); Linux allows {MAX_ARG_STRLEN:,} bytes per argument",
            hint="shorten the instructions or skills, or use `delivery: file` (Codex 0.171 reads a larger value "
            "only from a profile file in your CODEX_HOME, which agentlaunch does not write into)",
        )
    return ["-c", arg]
