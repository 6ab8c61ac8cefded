"""Gemini's ``delivery: gemini-home``: a per-agent Gemini home passed as ``GEMINI_CLI_HOME``.

Gemini CLI 0.61.0 takes every global path from ``$GEMINI_CLI_HOME`` (else the
user's home): ``~/.gemini/GEMINI.md`` (the global memory file it puts in the
system instruction), ``settings.json``, the OAuth and account files, trusted
folders, extensions, skills, commands, policies, and the per-project session
files under ``tmp/``. So each agent gets a home of its own in the state
directory, at a fixed path (``<state>/gemini-homes/<agent>/``, the same for
every launch and resume): its ``.gemini/GEMINI.md`` holds the user's own global
GEMINI.md (if any), a blank line, then the agent's instructions; everything else
at the top of the user's ``~/.gemini`` is a symlink to the user's own entry, so
auth keeps working and a change the user makes is seen at once. ``settings.json``
is generated instead, at every launch (written atomically, mode 0600): the user's
settings with agentlaunch's hooks added after their own
(:mod:`agentlaunch.providers.native.gemini_hooks`), so Gemini reports its
interface's states, permission prompts included. The user's own file is only
read. When it is not valid JSON, the home links it as it is (Gemini then says
what is wrong, as without agentlaunch) and its states come from the session file alone.
``tmp/`` and ``history/`` (Gemini's per-project session state: the sessions
agentlaunch reads for per-call usage and resume) are links to the user's own,
made when missing, as Gemini without agentlaunch would make them, so the user's
``gemini --resume`` lists the agent's sessions; what an earlier version left
there moves to the user's folder (:mod:`agentlaunch.providers.home_moves`).
``projects.json`` (the project names) stays the agent's own: Gemini replaces it
by a rename. The two registries agree anyway: Gemini 0.61.0's registry takes
the name that a ``.project_root`` marker in ``tmp/`` or ``history/`` gives a
folder, and never a name whose marker names another folder (its code).
The user's ``~/.agents`` (Gemini's second user skills folder) is linked too.
When the agent has skills of its own, ``.gemini/skills`` is a folder of links
instead of one link: one to each of the agent's installed skills
(:mod:`agentlaunch.definitions.skills_install`), and one to each entry of the user's
``~/.gemini/skills`` that does not have the name of one of them (the agent's
skill wins). Gemini 0.61.0 lists every skill it finds there in its system
instruction ("# Available Agent Skills", with the skill's path in this home).
Nothing is written into the working directory. This module uses the standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentlaunch.errors import StateError
from agentlaunch.fsutil import read_regular, write_atomic
from agentlaunch.providers.home_links import ensure_link, home_lock, link_entries, link_skills, unlink_skills
from agentlaunch.providers.home_moves import claim_folders
from agentlaunch.providers.native.gemini_hooks import BadSettings, hook_settings, merged, parse_settings

HOMES_DIR = "gemini-homes"
ENV_KEY = "GEMINI_CLI_HOME"
GEMINI_DIR = ".gemini"
MEMORY_FILE = "GEMINI.md"
SKILLS = "skills"
SETTINGS = "settings.json"
PROJECTS = "projects.json"
KEPT = ".agentlaunch-kept"
"""Inside the agent's ``.gemini``: a file of an earlier launch whose name the user's folder already held otherwise."""
OWN_ENTRIES = frozenset({MEMORY_FILE, SETTINGS, PROJECTS, KEPT})
"""Entries of ``.gemini`` that stay per-agent: the agent's memory file, the generated settings, and Gemini's
registry of project names (measured on 0.61.0: Gemini replaces ``projects.json`` by a rename, a link there
would become the agent's own file at the first write)."""
SHARED_FOLDERS = ("tmp", "history")
"""Gemini's per-project session state (``tmp/<project>/chats/`` holds the sessions, ``tmp/<project>/.project_root``
which folder a project name stands for): made in the user's ``~/.gemini`` when missing and linked, so a bare
``gemini --resume`` or ``--list-sessions`` in that folder lists the agent's sessions (measured)."""
SETTINGS_LIMIT = 1 << 20
TOP_LINKS = (".agents",)
"""Entries beside ``.gemini`` in the user's home that Gemini also reads (``~/.agents/skills``)."""


def home_path(state_dir: Path, agent: str) -> Path:
    """The per-agent Gemini home (what ``GEMINI_CLI_HOME`` is set to), stable launch after launch."""
    return state_dir / HOMES_DIR / agent


def user_home(env: Mapping[str, str]) -> Path:
    """The user's own Gemini home: ``$GEMINI_CLI_HOME`` when set (Gemini's rule), else ``$HOME``."""
    return Path(env.get(ENV_KEY) or env.get("HOME") or Path.home()).expanduser()


def combined_memory(user_text: str | None, instructions: str) -> str:
    """The home's GEMINI.md: the user's global text (if any), a blank line, then the agent's instructions."""
    if not user_text:
        return instructions
    return user_text.rstrip("\n") + "\n\n" + instructions


def prepare_home(
    state_dir: Path, agent: str, instructions: str, env: Mapping[str, str], skills: Mapping[str, Path] | None = None
) -> dict[str, str]:
    """Build (or bring up to date) ``agent``'s Gemini home; the environment that points Gemini at it.

    ``skills`` maps the name of each of the agent's installed skills to its
    folder. One launch at a time (:func:`~agentlaunch.providers.home_links.home_lock`).
    Idempotent: relaunching rewrites GEMINI.md and re-links what the user's ``~/.gemini`` holds now (a link
    whose entry is gone is removed; an entry Gemini itself created in the agent's home is left alone). A state directory
    where the home cannot be made is a :class:`StateError`.
    """
    home = home_path(state_dir, agent)
    source_home = user_home(env)
    dot = home / GEMINI_DIR
    try:
        with home_lock(home):
            dot.mkdir(parents=True, exist_ok=True)
            same = source_home.resolve() == home.resolve()
            source = None if same else source_home / GEMINI_DIR
            if source is not None:
                claim_folders(dot, source, SHARED_FOLDERS, dot / KEPT)
            if skills:
                link_entries(dot, source, OWN_ENTRIES | {SKILLS})
                link_skills(dot / SKILLS, source / SKILLS if source is not None else None, skills)
            else:
                unlink_skills(dot / SKILLS)
                link_entries(dot, source, OWN_ENTRIES)
            _link_named(home, None if same else source_home, TOP_LINKS)
            user_text = _read_text(source / MEMORY_FILE) if source is not None else None
            write_atomic(dot / MEMORY_FILE, combined_memory(user_text, instructions).encode("utf-8"))
            _write_settings(dot / SETTINGS, source / SETTINGS if source is not None else None, home)
    except OSError as exc:
        where = exc.filename or home
        raise StateError(f"{where}: cannot prepare the agent's Gemini home ({exc.strerror or exc})") from None
    return {ENV_KEY: str(home)}


def user_settings(path: Path | None) -> tuple[dict[str, Any] | None, str | None]:
    """The user's Gemini settings (``{}`` when there are none), or None and what is wrong with their file."""
    if path is None:
        return {}, None
    try:
        data = read_regular(path, SETTINGS_LIMIT)
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    try:
        return parse_settings(data.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "is not UTF-8 text"
    except BadSettings as exc:
        return None, f"is not valid JSON ({exc})"


def _write_settings(target: Path, source: Path | None, home: Path) -> None:
    """The home's settings.json: the user's settings with agentlaunch's hooks, else (unreadable) a link to theirs."""
    user, _problem = user_settings(source)
    if user is None:
        assert source is not None
        # Gemini reads the user's file itself and says what is wrong with it; agentlaunch adds no hooks then.
        _link_over(target, source)
        return
    text = json.dumps(merged(user, hook_settings(sys.executable, home)), indent=2, ensure_ascii=False) + "\n"
    write_atomic(target, text.encode("utf-8"), 0o600)  # the user's settings may hold keys: private like theirs


def _link_over(link: Path, target: Path) -> None:
    """``link`` -> ``target``, replacing whatever is there (a settings file an earlier launch generated)."""
    if link.is_symlink() and os.readlink(link) == str(target):
        return
    fresh = link.with_name(f".{link.name}.{os.getpid()}.link")
    with contextlib.suppress(FileNotFoundError):
        fresh.unlink()
    fresh.symlink_to(target)
    os.replace(fresh, link)


def _link_named(home: Path, source_home: Path | None, names: tuple[str, ...]) -> None:
    """Symlink the named entries of ``source_home`` into ``home`` when the user has them."""
    for name in names:
        link = home / name
        target = source_home / name if source_home is not None else None
        if target is not None and target.exists():
            ensure_link(link, target)
        elif link.is_symlink():
            link.unlink()


def _read_text(path: Path) -> str | None:
    """A UTF-8 file's text (undecodable bytes replaced, as Gemini reads it); None when it does not exist."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
