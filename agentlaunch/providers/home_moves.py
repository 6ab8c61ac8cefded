"""Moving what a CLI wrote inside a per-agent home into the user's own folder: never over a user's file.

Earlier versions of agentlaunch let Claude Code write a session's files (the
transcripts under ``projects/``, ``history.jsonl``, …) into the per-agent
folder in agentlaunch's state folder whenever the user's own folder lacked
that entry; and a CLI still makes an entry nobody foresaw there. Each launch
moves such entries to where the CLI without agentlaunch would have written
them, then links them back (:mod:`agentlaunch.providers.home_links`).

The rules, entry by entry (:func:`move_into`):

- nothing of that name in the user's folder: the entry is renamed (a folder)
  or hard-linked (a file: ``link`` fails where a name exists, so a file the
  user made meanwhile is never replaced) into place, then its old name goes;
- a folder on both sides: the same, one entry down;
- the same file on both sides (same bytes): the agent's copy goes;
- a ``.jsonl`` file on both sides (an append-only log: ``history.jsonl``, a
  transcript): the agent's lines the user's file lacks are appended to it;
- any other clash: the agent's copy is kept aside (``aside``, under the
  agent's home, never deleted) and the user's stays as it is.

Two launches (of two agents) may move into one user folder at once: an entry
another launch moved first (``FileNotFoundError``) or placed first
(``FileExistsError``) is taken as done or as a clash. Across file systems a
file is copied beside its target and linked into place the same way.
Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path


def move_into(source: Path, target: Path, aside: Path) -> None:
    """Move the entry ``source`` (not a link to follow) to ``target``; what clashes with the user's goes to ``aside``."""
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        return  # another launch moved it
    if stat.S_ISDIR(info.st_mode):
        _move_folder(source, target, aside)
    else:
        _move_file(source, target, aside)


def _move_folder(source: Path, target: Path, aside: Path) -> None:
    if not os.path.lexists(target):
        try:
            # Atomic, and never over anything but an empty folder made meanwhile (which holds nothing to lose).
            os.rename(source, target)
            return
        except FileNotFoundError:
            if not source.exists():
                return
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise
            if exc.errno == errno.EXDEV:
                with contextlib.suppress(FileExistsError):
                    target.mkdir()
    if not target.is_dir():  # a file of that name is the user's: the folder is kept aside whole
        set_aside(source, aside)
        return
    try:
        children = sorted(p.name for p in source.iterdir())
    except FileNotFoundError:
        return
    for name in children:
        move_into(source / name, target / name, aside / name)
    with contextlib.suppress(FileNotFoundError, OSError):
        source.rmdir()  # not empty: a CLI wrote into it meanwhile; the next launch moves the rest


def _move_file(source: Path, target: Path, aside: Path) -> None:
    try:
        os.link(source, target, follow_symlinks=False)
    except FileNotFoundError:
        if not os.path.lexists(source):
            return
        raise
    except FileExistsError:
        _clash(source, target, aside)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        if not _copy_across(source, target):
            _clash(source, target, aside)
            return
    with contextlib.suppress(FileNotFoundError):
        source.unlink()


def _copy_across(source: Path, target: Path) -> bool:
    """``source`` copied beside ``target`` and linked into place; False when ``target`` exists."""
    if source.is_symlink():
        fresh = target.with_name(f".{target.name}.{os.getpid()}.link")
        with contextlib.suppress(FileNotFoundError):
            fresh.unlink()
        fresh.symlink_to(os.readlink(source))
    else:
        import tempfile

        fd, name = tempfile.mkstemp(".moving", f".{target.name}.", target.parent)
        fresh = Path(name)
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        os.chmod(fresh, stat.S_IMODE(os.stat(source).st_mode))
    try:
        os.link(fresh, target, follow_symlinks=False)
        return True
    except FileExistsError:
        return False
    finally:
        fresh.unlink()


def _clash(source: Path, target: Path, aside: Path) -> None:
    """Both sides hold a file of this name: the same one, a log to append to, or the agent's copy kept aside."""
    try:
        if os.path.samefile(source, target) or _same_bytes(source, target):
            source.unlink()
            return
    except FileNotFoundError:
        return
    if source.suffix == ".jsonl" and target.is_file() and not source.is_symlink():
        _append_missing_lines(source, target)
        source.unlink()
        return
    set_aside(source, aside)


def _same_bytes(one: Path, other: Path) -> bool:
    if one.is_symlink() or other.is_symlink():
        return one.is_symlink() and other.is_symlink() and os.readlink(one) == os.readlink(other)
    if one.stat().st_size != other.stat().st_size:
        return False
    return one.read_bytes() == other.read_bytes()


def _append_missing_lines(source: Path, target: Path) -> None:
    """The lines of ``source`` that ``target`` lacks, appended to it in one write (``O_APPEND``: beside a CLI's own)."""
    have = set(target.read_bytes().splitlines())
    missing = [line for line in source.read_bytes().splitlines() if line.strip() and line not in have]
    if not missing:
        return
    with open(target, "ab") as out:
        if out.tell() and not _ends_with_newline(target):
            missing.insert(0, b"")
        out.write(b"\n".join(missing) + b"\n")


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def claim_folders(home: Path, source: Path, names: tuple[str, ...], aside: Path) -> None:
    """Each folder ``names`` of the user's ``source`` made when missing (as the CLI makes it at a first session),
    what a launch left in ``home`` under that name moved there (:func:`move_into`), and ``home``'s name a link to it."""
    from agentlaunch.providers.home_links import ensure_link

    for name in names:
        (source / name).mkdir(parents=True, exist_ok=True)
        entry = home / name
        if os.path.lexists(entry) and not entry.is_symlink():
            move_into(entry, source / name, aside / name)
        if not os.path.lexists(entry):
            ensure_link(entry, source / name)


def keep_aside(source: Path, aside: Path) -> None:
    """A second name for the file ``source`` at ``aside`` (a free name beside it when that is taken); ``source`` stays."""
    aside.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = aside, 1
    while True:
        try:
            os.link(source, candidate, follow_symlinks=False)
            return
        except FileExistsError:
            n += 1
            candidate = aside.with_name(f"{aside.name}.{n}")


def set_aside(source: Path, aside: Path) -> None:
    """``source`` renamed to ``aside`` (a free name beside it when that is taken): kept, out of the CLI's way."""
    aside.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = aside, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = aside.with_name(f"{aside.name}.{n}")
    with contextlib.suppress(FileNotFoundError):
        os.rename(source, candidate)
