"""Per-agent CLI homes made of links to the user's own entries (Gemini's and Codex's homes share these).

A per-agent home keeps the user's settings, auth and the rest working by
linking each entry of the user's own folder into it; the CLI writes through
those links (Codex 0.171.0 and Gemini 0.61.0 resolve them before they write
auth or config files). What the CLI creates there itself is its own and left
alone. ``skills/`` is the one folder that can differ: a folder of links to
the agent's installed skills and to the user's skills of other names.
Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from agentlaunch.fsutil import exclusive_lock


@contextlib.contextmanager
def home_lock(home: Path) -> Iterator[None]:
    """One launch at a time prepares the home ``home`` (an ``flock`` on ``.<name>.lock`` beside it).

    Launches of one agent at once (a team, a script) each bring the home up to date; without the lock one
    launch's removal of a link raced another's new one (64 Gemini launches at once while the agent's skills
    changed: 3 failed with "Directory not empty"). The kernel drops the lock of a launch that dies.
    """
    home.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(home.parent / f".{home.name}.lock"):
        yield


def link_entries(dot: Path, source: Path | None, own: frozenset[str], keep: frozenset[str] = frozenset()) -> None:
    """Symlink every entry of ``source`` (except ``own``) into ``dot``; drop links to entries that are gone.

    A link named in ``keep`` is the caller's to manage (it points elsewhere): left as it is, so a CLI
    running from this home meanwhile never finds it missing."""
    names = sorted(p.name for p in source.iterdir()) if source is not None and source.is_dir() else []
    wanted = {name for name in names if name not in own}
    for entry in dot.iterdir():
        if entry.is_symlink() and entry.name not in wanted | keep and not _in_flight(entry.name):
            entry.unlink()
    for name in sorted(wanted):
        assert source is not None
        ensure_link(dot / name, source / name)


def link_skills(folder: Path, source: Path | None, skills: Mapping[str, Path], keep: frozenset[str] = frozenset()) -> None:
    """``folder`` as a folder of links: the agent's skills, then the user's entries of other names (not ``keep``'s,
    which the CLI writes there itself)."""
    if folder.is_symlink():  # the link to the user's folder an earlier launch (without skills) made
        folder.unlink()
    folder.mkdir(exist_ok=True)
    users = sorted(p.name for p in source.iterdir()) if source is not None and source.is_dir() else []
    wanted = {name: source / name for name in users if name not in skills and name not in keep and source is not None}
    wanted.update(skills)
    for entry in folder.iterdir():
        if entry.is_symlink() and entry.name not in wanted and not _in_flight(entry.name):
            entry.unlink()
    for name, target in sorted(wanted.items()):
        ensure_link(folder / name, target)


def unlink_skills(folder: Path) -> None:
    """Undo :func:`link_skills` for an agent that has no skills now: its links go, and the folder when that empties it."""
    if folder.is_symlink() or not folder.is_dir():
        return
    for entry in folder.iterdir():
        if entry.is_symlink():
            entry.unlink()
    if not any(folder.iterdir()):
        folder.rmdir()  # so the link to the user's own folder takes its place


def replace_with_link(path: Path, target: Path) -> None:
    """The file (or link) ``path`` replaced by a link to ``target`` in one rename: a reader always finds the name."""
    fresh = path.with_name(f".{path.name}.{os.getpid()}.link")
    with contextlib.suppress(FileNotFoundError):
        fresh.unlink()
    fresh.symlink_to(target)
    os.replace(fresh, path)


def _in_flight(name: str) -> bool:
    """A link :func:`ensure_link` is about to rename into place (another launch's, perhaps)."""
    return name.startswith(".") and name.endswith(".link")


def ensure_link(link: Path, target: Path) -> None:
    """``link`` -> ``target``, replacing a stale link; a real file or folder there (the CLI's own) is kept.

    The new link is made beside and renamed into place, so two launches of one agent at once never
    fail on each other's link (``FileExistsError``) and a reader never finds the name missing.
    """
    if link.is_symlink():
        if os.readlink(link) == str(target):
            return
    elif link.exists():
        return
    fresh = link.with_name(f".{link.name}.{os.getpid()}.link")
    with contextlib.suppress(FileNotFoundError):
        fresh.unlink()
    fresh.symlink_to(target)
    try:
        os.replace(fresh, link)
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            fresh.unlink()
        if not link.exists():  # a real folder that appeared meanwhile is the CLI's own: keep it
            raise
