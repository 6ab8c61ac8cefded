"""The user's ``.claude.json`` in a per-agent Claude Code folder: one link, even before the file exists.

Claude Code 2.1.332 keeps its state (onboarding, account, trusted folders,
``claude mcp add --scope user`` servers, per-project entries) in
``.claude.json``, and with ``CLAUDE_CONFIG_DIR`` set it reads and writes
``$CLAUDE_CONFIG_DIR/.claude.json``. The agent's folder holds a symlink to the
user's file (:func:`agentlaunch.providers.claude_home.user_state_file`) at
every launch, also when that file does not exist yet. Measured (strace,
against the fake API): through a dangling link Claude Code creates the user's
file (it writes ``<target>.tmp.<pid>.<random>`` beside the target and renames
it over the target), and the link stays a link; so a login, a trusted folder or
an MCP server the user adds later, with or without agentlaunch, reaches the
agent at its next start. It takes its write lock as a folder ``<name>.lock``
beside the name it was given (the link), not beside the target.

Earlier versions kept Claude Code's own copy in the agent's folder when the
user had no file at the first launch. :func:`claim` moves such a private copy
to the user's place when the user still has none; otherwise it adds to the
user's file what only the private copy has (top-level keys, and the entries of
``projects`` and ``mcpServers`` of names the user's lacks; the user's value
wins every clash), under both of Claude Code's lock folders, keeps the private
copy aside (``.agentlaunch-kept/.claude.json``) and links. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentlaunch.fsutil import read_regular, write_atomic
from agentlaunch.providers.home_links import ensure_link, replace_with_link
from agentlaunch.providers.home_moves import keep_aside

STATE_LIMIT = 64 << 20
MERGED_TABLES = ("projects", "mcpServers")
"""Top-level objects of ``.claude.json`` merged entry by entry: a trusted folder or a server the user lacks is added."""
LOCK_TRIES = 50
LOCK_PAUSE = 0.1


def link_state_file(private: Path, user: Path, aside: Path) -> None:
    """``private`` (the agent's ``.claude.json``) as a link to ``user``'s, taking over a copy an earlier launch left."""
    if os.path.lexists(private) and not private.is_symlink() and not claim(private, user, aside):
        return  # locked by a Claude Code writing it: the agent keeps its copy this once, the next launch links
    ensure_link(private, user)


def claim(private: Path, user: Path, aside: Path) -> bool:
    """Move the private copy to the user's place, or merge what only it has into the user's file; False when locked."""
    if not os.path.lexists(user):
        try:
            os.link(private, user)  # fails where a file of the user's appeared meanwhile: never over it
        except FileExistsError:
            pass
        else:
            replace_with_link(private, user)
            return True
    with _claude_lock(user) as mine, _claude_lock(private) as theirs:
        if not (mine and theirs):
            return False
        if os.path.lexists(private) and not private.is_symlink():
            _merge(private, user)
            keep_aside(private, aside)
        replace_with_link(private, user)
    return True


def _merge(private: Path, user: Path) -> None:
    ours, theirs = _load(private), _load(user)
    if ours is None or theirs is None:
        return  # not JSON on one side: Claude Code says so itself; the private copy is kept aside whole
    merged = merged_state(theirs, ours)
    if merged != theirs:
        text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
        write_atomic(user.resolve(), text.encode("utf-8"))


def merged_state(user: dict[str, Any], private: dict[str, Any]) -> dict[str, Any]:
    """``user`` with what only ``private`` has: its other top-level keys, and entries of :data:`MERGED_TABLES`."""
    merged = dict(user)
    for key, value in private.items():
        if key not in merged:
            merged[key] = value
        elif key in MERGED_TABLES and isinstance(merged[key], dict) and isinstance(value, dict):
            merged[key] = {**value, **merged[key]}
    return merged


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_regular(path, STATE_LIMIT).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextlib.contextmanager
def _claude_lock(path: Path) -> Iterator[bool]:
    """Claude Code's own write lock on ``path``: the folder ``<path>.lock`` (mkdir is atomic); False when not had."""
    lock = path.with_name(path.name + ".lock")
    for _ in range(LOCK_TRIES):
        try:
            lock.mkdir()
            break
        except FileExistsError:
            time.sleep(LOCK_PAUSE)  # Claude Code holds it for one write: a few milliseconds
    else:
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            lock.rmdir()
