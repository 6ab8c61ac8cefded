"""Where agentlaunch finds definitions and keeps its state.

Every location can be overridden by an environment variable, which is how
the tests keep away from a real home directory. The platform's own rule
(XDG on Linux, ``~/Library/Application Support`` on macOS) comes from
platformdirs, imported only when no variable says: the early start of a
launch (:mod:`agentlaunch.launch.early.prespawn`) asks for the state directory
before anything heavier is loaded.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "agentlaunch"


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    """``$AGENTLAUNCH_CONFIG_DIR``, else the XDG config dir (``~/.config/agentlaunch``)."""
    if (path := _env_path("AGENTLAUNCH_CONFIG_DIR")) is not None:
        return path
    import platformdirs  # about 2 ms: only when no variable names the folder

    return Path(platformdirs.user_config_dir(APP))


def state_dir() -> Path:
    """``$AGENTLAUNCH_STATE_DIR``, else the platform's state dir (``~/.local/state/agentlaunch`` on Linux)."""
    if (path := _env_path("AGENTLAUNCH_STATE_DIR")) is not None:
        return path
    import platformdirs  # about 2 ms: only when no variable names the folder

    return Path(platformdirs.user_state_dir(APP))


def agents_dir(explicit: Path | None = None) -> Path:
    """The agents directory: ``--agents-dir``, ``$AGENTLAUNCH_AGENTS_DIR``,
    ``./agents`` when it exists, else ``<config dir>/agents`` when it exists,
    else the example agents shipped with the package (:func:`bundled_agents_dir`).

    A directory named explicitly (option or variable) is returned as given, even
    when it does not exist, so that a typo is reported instead of replaced.
    """
    return find_agents_dir(explicit)[0]


def find_agents_dir(explicit: Path | None = None) -> tuple[Path, bool]:
    """:func:`agents_dir` and whether it is the bundled fallback (nothing else was found)."""
    if explicit is not None:
        return explicit.expanduser(), False
    from_env = _env_path("AGENTLAUNCH_AGENTS_DIR")
    if from_env is not None:
        return from_env, False
    local = Path.cwd() / "agents"
    if local.is_dir():
        return local, False
    configured = user_agents_dir()
    if configured.is_dir():
        return configured, False
    bundled = bundled_agents_dir()
    if bundled.is_dir():
        return bundled, True
    # No examples either (a broken install): the config dir is the one to name in the error.
    return configured, False


def user_agents_dir() -> Path:
    """``<config dir>/agents``: the agents directory found from any working directory."""
    return config_dir() / "agents"


def bundled_agents_dir() -> Path:
    """The example agents shipped with the package (read only: nothing is ever written there)."""
    return package_data("agents")


def store_path() -> Path:
    """The SQLite usage store."""
    return state_dir() / "usage.sqlite3"


def package_data(name: str) -> Path:
    """A data folder shipped with the package (``templates``, ``agents``).

    In a wheel the folders live inside the package (``agentlaunch/_data``);
    in a source checkout they sit at the repository's top level.
    """
    found = _package_data.get(name)
    if found is None:  # resolved once a process (a launch asks for the templates two or three times)
        here = Path(__file__).resolve().parent
        installed = here / "_data" / name
        found = _package_data[name] = installed if installed.is_dir() else here.parent / name
    return found


_package_data: dict[str, Path] = {}
