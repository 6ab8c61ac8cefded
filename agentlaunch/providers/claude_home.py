"""A per-agent Claude Code folder (``CLAUDE_CONFIG_DIR``) for an agent with skills: its skills with no dialog.

Claude Code 2.1.332 lists the skills under ``$CLAUDE_CONFIG_DIR/skills`` (else
``~/.claude/skills``) as the user's own, in its system prompt and in ``/skills``.
The other ways measured on its interface (against the fake API, no key pressed):

- ``--add-dir <skills root>``: the skills are listed, but the interface stops on
  "Adding a new directory" at every launch and resume (cursor on "No, exit");
  a trust entry for the folder would have to be written into the user's
  ``~/.claude.json``;
- ``--settings`` with ``permissions.additionalDirectories``: no dialog, no skill
  ("No skills yet");
- ``--plugin-dir`` of a plugin holding the skills: no dialog, but each skill is
  renamed ``<plugin>:<name>`` and "locked by plugin";
- this folder: no dialog, each skill listed under its own name (``user``).

So an agent that has skills runs with ``CLAUDE_CONFIG_DIR`` at
``<state>/claude-homes/<agent>/``, a fixed path per agent, in which every entry
of the user's own folder (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``:
settings.json, .credentials.json, projects/, plugins/ …) is a symlink to the
user's, ``skills/`` is a folder of links to the agent's installed skills and
to the user's skills of other names, and ``.claude.json`` links the user's own
state file (``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``: the
onboarding, the trusted folders, the account). Measured: without that file
Claude Code starts its onboarding and exits ("Unable to connect to Anthropic
services"); through the link it starts at once, and writes its own updates
(startup counts, project entries) through it, as it does without agentlaunch,
the link staying a link. Transcripts land where they always do (``projects/``
is a link), so ``claude --resume`` and agentlaunch find the sessions either way.

Claude Code names its credential store after the folder (the keychain item on
macOS is ``Claude Code-credentials-<8 hex of the folder>`` when
``CLAUDE_CONFIG_DIR`` is set), so ``CLAUDE_SECURESTORAGE_CONFIG_DIR`` keeps the
user's own store: empty when the user has no ``CLAUDE_CONFIG_DIR`` (their
``~/.claude`` and the unsuffixed item), else theirs. Measured on Linux: an
OAuth login in the user's ``.credentials.json`` reaches the API as before
(``Authorization: Bearer`` of the user's token). A value the user set is kept.

Nothing is written into the user's files or the working directory; an agent
without skills keeps the user's folder. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentlaunch.errors import StateError
from agentlaunch.providers.home_links import ensure_link, link_entries, link_skills

HOMES_DIR = "claude-homes"
ENV_KEY = "CLAUDE_CONFIG_DIR"
STORE_KEY = "CLAUDE_SECURESTORAGE_CONFIG_DIR"
STATE_FILE = ".claude.json"
SKILLS = "skills"


def home_path(state_dir: Path, agent: str) -> Path:
    """The per-agent Claude Code folder (what ``CLAUDE_CONFIG_DIR`` is set to), stable launch after launch."""
    return state_dir / HOMES_DIR / agent


def user_folder(env: Mapping[str, str]) -> Path:
    """The user's own Claude Code folder: ``$CLAUDE_CONFIG_DIR`` when set (Claude Code's rule), else ``~/.claude``."""
    if env.get(ENV_KEY):
        return Path(env[ENV_KEY]).expanduser()
    return Path(env.get("HOME") or Path.home()).expanduser() / ".claude"


def user_state_file(env: Mapping[str, str]) -> Path:
    """The user's own ``.claude.json``: inside ``$CLAUDE_CONFIG_DIR`` when set, else in the home folder."""
    if env.get(ENV_KEY):
        return Path(env[ENV_KEY]).expanduser() / STATE_FILE
    return Path(env.get("HOME") or Path.home()).expanduser() / STATE_FILE


def prepare_home(state_dir: Path, agent: str, env: Mapping[str, str], skills: Mapping[str, Path]) -> dict[str, str]:
    """Build (or bring up to date) ``agent``'s Claude Code folder; the environment that points Claude Code at it.

    ``skills`` maps each of the agent's installed skills to its folder. Idempotent:
    a link whose entry is gone is removed, an entry Claude Code created in the
    agent's folder is left alone. A state directory where the folder cannot be
    made is a :class:`StateError`.
    """
    home = home_path(state_dir, agent)
    source = user_folder(env)
    try:
        home.mkdir(parents=True, exist_ok=True)
        same = source.resolve() == home.resolve()
        link_entries(home, None if same else source, frozenset({SKILLS, STATE_FILE}), keep=frozenset({STATE_FILE}))
        link_skills(home / SKILLS, None if same else source / SKILLS, skills)
        state = None if same else user_state_file(env)
        if state is not None and state.exists():
            ensure_link(home / STATE_FILE, state)
        elif (home / STATE_FILE).is_symlink():  # the user's file is gone: Claude Code starts as for a new user
            (home / STATE_FILE).unlink()
    except OSError as exc:
        where = exc.filename or home
        raise StateError(f"{where}: cannot prepare the agent's Claude Code folder ({exc.strerror or exc})") from None
    placed = {ENV_KEY: str(home)}
    if STORE_KEY not in env:
        placed[STORE_KEY] = env.get(ENV_KEY, "")
    return placed
