"""A per-agent Codex home (``CODEX_HOME``) for an agent with skills: how Codex finds only that agent's skills.

Codex 0.171.0 lists the skills it finds under ``$CODEX_HOME/skills``,
``~/.agents/skills`` and the repository's ``.agents/skills`` in its
instructions ("## Skills", a roots table and one line per skill); it has no
option or config key that adds another folder (``skills.config`` entries only
turn found skills on or off, measured: a ``-c skills.config=[{path=...}]``
entry for a skill elsewhere lists nothing). So an agent that has skills runs
with ``CODEX_HOME`` at ``<state>/codex-homes/<agent>/``, a fixed path per
agent, in which every entry of the user's own Codex home (``$CODEX_HOME``,
else ``~/.codex``: config.toml, auth.json, rules/ …) is a symlink to the
user's, and ``skills/`` is a folder of links to the agent's installed skills
and to the user's own skills of other names. Measured on 0.171.0: ``codex
login`` and ``codex features enable`` write through those links into the
user's own auth.json and config.toml (the links stay links).

Nothing Codex writes for a session stays in the agent's home: its session
folders (:data:`SHARED_FOLDERS`: ``sessions/`` for the rollouts,
``archived_sessions/`` …) are made in the user's home when missing and
linked, ``history.jsonl`` is linked before it exists, and what an earlier
version kept there moves to the user's home (never over a user's file:
:mod:`agentlaunch.providers.home_moves`). Codex's SQLite databases (the
thread index ``state_5.sqlite``, logs, goals …, each with its
``-wal``/``-shm`` files) are never linked one by one (measured: with the
user's ``state_5.sqlite-wal`` beside the agent's own ``state_5.sqlite``,
``codex exec resume`` failed with "list_turns is not supported yet");
``CODEX_SQLITE_HOME`` points Codex at the user's home instead, so the agent's
threads are in the user's own index, beside the user's (unless the user set
``CODEX_SQLITE_HOME`` or ``sqlite_home`` themselves: theirs is kept). Measured:
the user's own ``codex exec resume --last`` continued the agent's thread.
Databases an earlier version made in the agent's home stay there, unused.
``tmp/`` and ``skills/.system`` (Codex's built-in skills, which it writes at
start) stay the agent home's own. An agent without skills keeps the user's
``CODEX_HOME``. Nothing is written into the working directory. Standard
library only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from agentlaunch.errors import StateError
from agentlaunch.providers.home_links import ensure_link, home_lock, link_entries, link_skills
from agentlaunch.providers.home_moves import claim_folders, move_into

HOMES_DIR = "codex-homes"
ENV_KEY = "CODEX_HOME"
SKILLS = "skills"
SYSTEM_SKILLS = ".system"
"""Codex's own built-in skills folder inside ``skills/``: written by Codex in each home it runs with."""
SQLITE_KEY = "CODEX_SQLITE_HOME"
KEPT = ".agentlaunch-kept"
"""Inside the agent's home: a file of an earlier launch whose name the user's home already held otherwise."""
SHARED_FOLDERS = ("sessions", "archived_sessions", "shell_snapshots", "thread-writer-locks", "log")
"""Codex's session folders: made in the user's home when missing and linked, what an earlier launch left there moved
over (:func:`~agentlaunch.providers.home_moves.claim_folders`)."""
HISTORY = "history.jsonl"
OWN_NAMES = frozenset({SKILLS, KEPT, "tmp", ".tmp", *SHARED_FOLDERS, HISTORY})
"""Entries of a Codex home that :func:`~agentlaunch.providers.home_links.link_entries` leaves alone: the skills
folder, Codex's scratch folders, and the session entries this module links itself."""
OWN_SUFFIXES = (".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal", ".db", ".db-wal", ".db-shm", ".db-journal")


def is_own(name: str) -> bool:
    """Whether the user's entry ``name`` stays out of the agent's home (Codex keeps its own there)."""
    return name in OWN_NAMES or name.endswith(OWN_SUFFIXES)


def home_path(state_dir: Path, agent: str) -> Path:
    """The per-agent Codex home (what ``CODEX_HOME`` is set to), stable launch after launch."""
    return state_dir / HOMES_DIR / agent


def user_home(env: Mapping[str, str]) -> Path:
    """The user's own Codex home: ``$CODEX_HOME`` when set (Codex's rule), else ``~/.codex``."""
    if env.get(ENV_KEY):
        return Path(env[ENV_KEY]).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".codex"


def prepare_home(state_dir: Path, agent: str, env: Mapping[str, str], skills: Mapping[str, Path]) -> dict[str, str]:
    """Build (or bring up to date) ``agent``'s Codex home; the environment that points Codex at it.

    ``skills`` maps each of the agent's installed skills to its folder.
    Idempotent, and one launch at a time (:func:`~agentlaunch.providers.home_links.home_lock`): a link whose
    entry is gone is removed, an entry Codex created in the agent's home is left alone. A state directory where the home cannot
    be made is a :class:`StateError`.
    """
    home = home_path(state_dir, agent)
    source = user_home(env)
    try:
        with home_lock(home):
            home.mkdir(parents=True, exist_ok=True)
            same = source.resolve() == home.resolve()
            if not same:
                claim_folders(home, source, SHARED_FOLDERS, home / KEPT)
                if os.path.lexists(home / HISTORY) and not (home / HISTORY).is_symlink():
                    move_into(home / HISTORY, source / HISTORY, home / KEPT / HISTORY)
                ensure_link(home / HISTORY, source / HISTORY)  # Codex appends to it; made through the link
            users = sorted(p.name for p in source.iterdir()) if not same and source.is_dir() else []
            own = frozenset(name for name in users if is_own(name)) | OWN_NAMES
            link_entries(home, None if same else source, own, keep=frozenset({HISTORY, *SHARED_FOLDERS}))
            link_skills(home / SKILLS, None if same else source / SKILLS, skills, keep=frozenset({SYSTEM_SKILLS}))
    except OSError as exc:
        where = exc.filename or home
        raise StateError(f"{where}: cannot prepare the agent's Codex home ({exc.strerror or exc})") from None
    placed = {ENV_KEY: str(home)}
    if not same and SQLITE_KEY not in env and not _names_sqlite_home(source / "config.toml"):
        placed[SQLITE_KEY] = str(source)  # the user's databases: their thread index lists the agent's threads
    return placed


def _names_sqlite_home(config: Path) -> bool:
    """Whether the user's config.toml sets ``sqlite_home`` itself (then Codex reads it there, through the link)."""
    try:
        return "sqlite_home" in config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
