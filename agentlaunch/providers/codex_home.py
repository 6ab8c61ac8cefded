"""A per-agent Codex home (``CODEX_HOME``) for an agent with skills: how Codex finds only that agent's skills.

Codex 0.171.0 lists the skills it finds under ``$CODEX_HOME/skills``,
``~/.agents/skills`` and the repository's ``.agents/skills`` in its
instructions ("## Skills", a roots table and one line per skill); it has no
option or config key that adds another folder (``skills.config`` entries only
turn found skills on or off, measured: a ``-c skills.config=[{path=...}]``
entry for a skill elsewhere lists nothing). So an agent that has skills runs
with ``CODEX_HOME`` at ``<state>/codex-homes/<agent>/``, a fixed path per
agent, in which every entry of the user's own Codex home (``$CODEX_HOME``,
else ``~/.codex``: config.toml, auth.json, sessions/, the state database …)
is a symlink to the user's, except Codex's runtime state (:func:`is_own`),
and ``skills/`` is a folder of links to the agent's installed skills and to
the user's own skills of other names. Measured on 0.171.0: ``codex login``
and ``codex features enable`` write through those links into the user's own
auth.json and config.toml (the links stay links). The runtime state stays the
agent's own, as Gemini's does in its home: sessions, history, logs and every
SQLite database with its ``-wal``/``-shm`` files. Linking those one by one
breaks Codex (measured: once the user's ``state_5.sqlite-wal`` sat beside the
agent's own ``state_5.sqlite``, ``codex exec resume`` failed with "list_turns
is not supported yet"), and would let two databases write one journal.
``skills/.system`` (Codex's built-in skills, which it writes at start) stays
the agent home's own too. An agent without skills keeps the user's ``CODEX_HOME``.
Nothing is written into the working directory. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentlaunch.errors import StateError
from agentlaunch.providers.home_links import home_lock, link_entries, link_skills

HOMES_DIR = "codex-homes"
ENV_KEY = "CODEX_HOME"
SKILLS = "skills"
SYSTEM_SKILLS = ".system"
"""Codex's own built-in skills folder inside ``skills/``: written by Codex in each home it runs with."""
OWN_NAMES = frozenset(
    {SKILLS, "sessions", "archived_sessions", "history.jsonl", "log", "shell_snapshots", "thread-writer-locks", "tmp", ".tmp"}
)
"""Entries of a Codex home that stay the agent's own: its skills folder and Codex's per-session runtime state."""
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
            users = sorted(p.name for p in source.iterdir()) if not same and source.is_dir() else []
            link_entries(home, None if same else source, frozenset(name for name in users if is_own(name)) | OWN_NAMES)
            link_skills(home / SKILLS, None if same else source / SKILLS, skills, keep=frozenset({SYSTEM_SKILLS}))
    except OSError as exc:
        where = exc.filename or home
        raise StateError(f"{where}: cannot prepare the agent's Codex home ({exc.strerror or exc})") from None
    return {ENV_KEY: str(home)}
