"""Global settings: ``<config dir>/config.yaml`` (``$AGENTLAUNCH_CONFIG_DIR``, else ``~/.config/agentlaunch``).

Optional; every key may be left out. Today it holds what applies to every
agent unless its agent.yaml says otherwise:

```yaml
notify: [notify-send, agentlaunch]   # run when an agent needs you: an argv list, or one string split as a shell would
                                      # (never run by a shell); it reads one JSON object on stdin
notify_after: 30                      # seconds a turn must take before its end is announced (asking always is)
bell: true                            # ring the terminal bell when an agent needs you
desktop_notify: true                  # a desktop notification (notify-send) when an agent needs you and no notify is set
worktrees_dir: ~/agent-worktrees      # where `worktree: true` agents get their git worktrees (default: <state dir>/worktrees)
budget: {daily_usd: 40, daily_tokens: 50000000}   # per local day, all agents together (exit 6 once spent)
#   on_spent: pause under budget: pauses an agent instead (agentlaunch resume-budget AGENT, or raise the limit)
otel: true                            # export every call over OTLP (AGENTLAUNCH_OTEL, when set, wins)
ready_timeout: 20                     # seconds a CLI's interface may take to report it is up before it is `asking`
stall_timeout: 300                    # seconds a turn may hear nothing from its CLI before it is `stalled`
max_starting: 3                       # `tmux up` starts at most this many CLIs at a time (each next one when one is up)
hosts: {devbox: me@devbox}            # agents on other hosts over SSH (agentlaunch.hosts.config, docs/hosts.md)
```

A file that is there but wrong is a definition error (exit 3) naming the
file, key and problem (a bad ``max_starting`` is exit 2, as a bad
``--max-starting`` is: it is the same throttle); a missing file is no settings. The file is read with
the same limits as agent.yaml (a regular file, at most 1 MiB).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentlaunch import paths
from agentlaunch.datarecord import datarecord, field
from agentlaunch.errors import DefinitionError, ExitCode
from agentlaunch.fsutil import read_regular
from agentlaunch.hosts.config import Host, parse_hosts

SETTINGS_FILE = "config.yaml"
SETTINGS_LIMIT = 1 << 20
KEYS = (
    "notify",
    "notify_after",
    "bell",
    "desktop_notify",
    "worktrees_dir",
    "budget",
    "otel",
    "ready_timeout",
    "stall_timeout",
    "max_starting",
    "hosts",
)
DEFAULT_MAX_STARTING = 3  # CLIs `tmux up` starts at a time: a team of 20 started at once is a swap storm on a laptop
THROTTLE_EXPECTED = "expected a whole number of agents started at a time, 1 or more"


class BadThrottle(DefinitionError):
    """``max_starting:`` is not a whole number from 1: a usage error (exit 2), as the same value given to the flag."""

    exit_code = ExitCode.USAGE


@datarecord(frozen=True)
class Settings:
    notify: tuple[str, ...] | None = None
    notify_after: float | None = None
    bell: bool = True
    desktop_notify: bool = True
    """``notify-send`` when an agent needs you, where there is one and a desktop (a notify command replaces it)."""
    worktrees_dir: Path | None = None
    budget: Mapping[str, Any] = field(default_factory=dict)
    """Daily limits for all agents together (see :mod:`agentlaunch.usage.budget`)."""
    otel: bool | None = None
    """Export over OTLP (see docs/telemetry.md); ``AGENTLAUNCH_OTEL``, when set, wins."""
    ready_timeout: float | None = None
    """Seconds a native interface may stay ``starting`` before it is ``asking`` (None: the launch's default)."""
    stall_timeout: float | None = None
    """Seconds a turn may hear nothing from its CLI before it is ``stalled`` (None: the launch's default, 300)."""
    max_starting: int | None = None
    """CLIs ``tmux up`` starts at a time (None: :data:`DEFAULT_MAX_STARTING`, or ``--max-starting``)."""
    hosts: tuple[Host, ...] = ()
    """Other hosts reached over SSH (:mod:`agentlaunch.hosts.config`)."""


def settings_path(config_dir: Path | None = None) -> Path:
    return (config_dir or paths.config_dir()) / SETTINGS_FILE


def notify_command(value: object, where: str) -> tuple[str, ...] | None:
    """A ``notify:`` value as an argument list: a list of strings, or one string split as a shell would split it."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            raise DefinitionError(f"{where}: notify: cannot split {value!r} ({exc})") from None
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        argv = list(value)
    else:
        raise DefinitionError(f"{where}: notify: expected a command: a list of strings or one string")
    if not argv or not argv[0]:
        raise DefinitionError(f"{where}: notify: the command is empty")
    return tuple(argv)


def ready_timeout(value: object, where: str, key: str = "ready_timeout") -> float | None:
    """``ready_timeout:`` (or ``stall_timeout:``) as seconds, a number above 0 (0 would mark every interface as
    waiting on its screen, every turn as stalled)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise DefinitionError(f"{where}: {key}: expected seconds, a number above 0 (got {value!r})")
    return float(value)


def max_starting(value: object, where: str) -> int | None:
    """``max_starting:`` as a whole number of agents from 1 (0 would start nobody; ``true`` is not a number)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadThrottle(f"{where}: max_starting: {THROTTLE_EXPECTED} (got {value!r})")
    return value


def notify_after(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise DefinitionError(f"{where}: notify_after: expected seconds, a number from 0 (got {value!r})")
    return float(value)


ON_SPENT = ("stop", "pause")
"""What a spent budget does (``budget.on_spent``): end the agent (the default), or pause it for the person."""


def global_budget(budget: object, where: str) -> dict[str, Any]:
    """``budget:`` of the global settings (``daily_usd``, ``daily_tokens`` for all agents; ``on_spent``, what an
    agent whose agent.yaml does not say does once a budget is spent), checked; {} when absent.

    A malformed value is a DefinitionError naming ``where`` (the file) and the field.
    """
    if budget is None:
        return {}
    if not isinstance(budget, dict):
        raise DefinitionError(f"{where}: budget: must be a mapping with daily_usd and/or daily_tokens")
    problems = []
    out: dict[str, Any] = {}
    for key, value in budget.items():
        if key == "daily_usd":
            ok = type(value) in (int, float) and math.isfinite(value) and value > 0
            what = "an amount of US dollars above 0"
        elif key == "daily_tokens":
            ok = type(value) is int and value > 0
            what = "a whole number of tokens above 0"
        elif key == "on_spent":
            ok = value in ON_SPENT
            what = "stop or pause"
        else:
            problems.append(
                f"{where}: budget.{key}: unknown key (allowed: daily_usd, daily_tokens, on_spent; budgets are in US dollars)"
            )
            continue
        if ok:
            out[key] = value
        else:
            problems.append(f"{where}: budget.{key}: must be {what} (got {value!r})")
    if problems:
        raise DefinitionError(problems)
    return out


def load_settings(config_dir: Path | None = None) -> Settings:
    """The global settings (defaults when there is no file); a bad file is a DefinitionError."""
    path = settings_path(config_dir)
    try:
        data = read_regular(path, SETTINGS_LIMIT)
    except FileNotFoundError:
        return Settings()
    except OSError as exc:
        raise DefinitionError(f"{path}: cannot read ({exc.strerror or exc})") from None
    import yaml

    from agentlaunch.definitions.yamlload import safe_load

    try:
        raw: Any = safe_load(data.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise DefinitionError(f"{path}: yaml: {getattr(exc, 'problem', None) or exc}") from None
    if raw is None:
        return Settings()
    if not isinstance(raw, dict):
        raise DefinitionError(f"{path}: yaml: expected a mapping of keys, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in KEYS)
    if unknown:
        raise DefinitionError([f"{path}: {k}: unknown key (allowed: {', '.join(KEYS)})" for k in unknown])
    bell = raw.get("bell", True)
    if not isinstance(bell, bool):
        raise DefinitionError(f"{path}: bell: expected true or false (got {bell!r})")
    desktop = raw.get("desktop_notify", True)
    if not isinstance(desktop, bool):
        raise DefinitionError(f"{path}: desktop_notify: expected true or false (got {desktop!r})")
    otel = raw.get("otel")
    if otel is not None and not isinstance(otel, bool):
        raise DefinitionError(f"{path}: otel: expected true or false (got {otel!r})")
    folder = raw.get("worktrees_dir")
    if folder is not None and (not isinstance(folder, str) or not folder.strip()):
        raise DefinitionError(f"{path}: worktrees_dir: expected a folder path")
    return Settings(
        notify=notify_command(raw.get("notify"), str(path)),
        notify_after=notify_after(raw.get("notify_after"), str(path)),
        bell=bell,
        desktop_notify=desktop,
        worktrees_dir=Path(folder).expanduser() if folder else None,
        budget=global_budget(raw.get("budget"), str(path)),
        otel=otel,
        ready_timeout=ready_timeout(raw.get("ready_timeout"), str(path)),
        stall_timeout=ready_timeout(raw.get("stall_timeout"), str(path), "stall_timeout"),
        max_starting=max_starting(raw.get("max_starting"), str(path)),
        hosts=parse_hosts(raw.get("hosts"), str(path)),
    )
