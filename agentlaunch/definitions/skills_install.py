"""An agent's skills, installed where its CLI discovers them: one copy per agent in the state directory.

Each skill the agent lists (its folder ``skills/NAME/`` in the agents
directory: SKILL.md and whatever files sit beside it) is copied, byte for
byte, to ``<state>/skills/<agent>/.claude/skills/<name>/``: a fixed path per
agent, the same bytes on every launch, so what the CLI lists stays inside the
prompt prefix it shares with the agent's other sessions. That layout is the
one Claude Code reads from a directory given with ``--add-dir``; the agent's
Gemini home links to the same folders (:mod:`agentlaunch.providers.gemini_home`).
Nothing is written into the working directory, and only this agent's skills
are there, so a second agent in the same repository does not get them.

A launch rewrites only a skill whose files differ (it is built beside, then
swapped in with two renames, under a lock, so two launches of one agent never
interleave), removes the skills the agent no longer lists, and removes the
whole folder when the agent lists none. Bad skill folders are refused with
a :class:`DefinitionError` naming the file: a symlink that leads outside the
agents directory, a symlinked folder, a FIFO or device, an unreadable file,
a file over the per-file limit SKILL.md itself has, a folder over
:data:`FOLDER_LIMIT` bytes or :data:`FILES_LIMIT` files, or two skills that
give the same name. This module uses the standard library only.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from agentlaunch.datarecord import datarecord
from agentlaunch.definitions.bounded_read import PART_LIMIT
from agentlaunch.definitions.skills import Skill
from agentlaunch.definitions.spec import check_name
from agentlaunch.errors import DefinitionError, StateError
from agentlaunch.fsutil import FileTooLarge, NotRegularFile, current_umask, exclusive_lock, human_size, read_regular

SKILLS_DIR = "skills"
LAYOUT = (".claude", "skills")
"""Where the skill folders sit inside an agent's skills root: Claude Code's ``--add-dir`` layout."""
FILE_LIMIT = PART_LIMIT
"""One file of a skill: the limit SKILL.md (and a soul, a bundle) has when it is read as a definition."""
FOLDER_LIMIT = 16 << 20
"""All files of one agent's skills together: what the template sandbox lets one render write (MAX_OUTPUT)."""
FILES_LIMIT = 1000
"""Files in one agent's skills together: more is a copied-in checkout, not a skill."""
DEPTH_LIMIT = 16


@datarecord(frozen=True)
class SkillFolder:
    """One skill's files as read from the agents directory: (path inside the folder, bytes, executable)."""

    name: str
    source: Path
    files: tuple[tuple[str, bytes, bool], ...]


@datarecord(frozen=True)
class InstalledSkills:
    """Where an agent's skills were installed, which ones, and whether this launch changed any file."""

    root: Path
    """The agent's skills root (what Claude Code gets with ``--add-dir``)."""
    folder: Path
    """``root/.claude/skills``: one folder per skill, named for it."""
    names: tuple[str, ...]
    changed: bool

    def links(self) -> dict[str, Path]:
        """Each installed skill's folder by name (what a per-agent CLI home links to)."""
        return {name: self.folder / name for name in self.names}


def skills_root(state_dir: Path, agent: str) -> Path:
    """The agent's skills root in the state directory, stable launch after launch."""
    return state_dir / SKILLS_DIR / agent


def skills_folder(state_dir: Path, agent: str) -> Path:
    """The folder holding one folder per installed skill of ``agent``."""
    return skills_root(state_dir, agent).joinpath(*LAYOUT)


def read_skills(skills: Sequence[Skill], agents_dir: Path) -> list[SkillFolder]:
    """Every file of ``skills`` (each the folder of its SKILL.md), checked and within the limits.

    Raises :class:`DefinitionError` for a skill name that is not a plain name,
    two skills with one name, and every bad file (see the module docstring).
    """
    root = agents_dir.resolve()
    seen: dict[str, Path] = {}
    folders: list[SkillFolder] = []
    budget = _Budget()
    for skill in skills:
        folder = skill.path.parent
        if problem := check_name(skill.name, "skill"):
            raise DefinitionError(f"{skill.path}: name: {problem}")
        if skill.name in seen:
            raise DefinitionError(
                f"{skill.path}: name: skill {skill.name!r} is also the name of {seen[skill.name]}",
                hint="give each skill its own name in its front matter; the CLI finds skills by name",
            )
        seen[skill.name] = skill.path
        resolved = folder.resolve()
        if not resolved.is_relative_to(root):
            raise DefinitionError(f"{folder}: skill {skill.name}: refers outside the agents directory {root}")
        files = tuple(_read_tree(resolved, folder, root, skill.name, budget, 0))
        folders.append(SkillFolder(skill.name, folder, files))
    return folders


class _Budget:
    """What one agent's skills may add up to; every file read is counted."""

    def __init__(self) -> None:
        self.bytes = FOLDER_LIMIT
        self.files = FILES_LIMIT

    def take(self, path: Path, size: int, name: str) -> None:
        self.bytes -= size
        self.files -= 1
        if self.files < 0:
            raise DefinitionError(f"{path}: skill {name}: the agent's skills hold more than {FILES_LIMIT:,} files")
        if self.bytes < 0:
            raise DefinitionError(
                f"{path}: skill {name}: the agent's skills add up to more than {human_size(FOLDER_LIMIT)}",
                hint="keep large data out of skill folders; a skill is instructions and small helper files",
            )


def _read_tree(real: Path, shown: Path, root: Path, name: str, budget: _Budget, depth: int) -> Iterator[tuple[str, bytes, bool]]:
    """The files under ``real`` (``shown`` is its path as the user wrote it), sorted, as (relative path, bytes, executable)."""
    if depth > DEPTH_LIMIT:
        raise DefinitionError(f"{shown}: skill {name}: folders nest more than {DEPTH_LIMIT} deep")
    try:
        entries = sorted(os.scandir(real), key=lambda e: e.name)
    except OSError as exc:
        raise DefinitionError(f"{shown}: skill {name}: cannot read the folder ({exc.strerror})") from None
    for entry in entries:
        path = shown / entry.name
        try:
            info = os.stat(entry.path, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                target = Path(entry.path).resolve()
                if not target.is_relative_to(root):
                    raise DefinitionError(f"{path}: skill {name}: a symlink to {target}, outside the agents directory {root}")
                info = os.stat(target)
                if stat.S_ISDIR(info.st_mode):
                    raise DefinitionError(
                        f"{path}: skill {name}: a symlinked folder", hint="put the files in the skill folder itself"
                    )
        except FileNotFoundError:
            raise DefinitionError(f"{path}: skill {name}: a symlink to nothing") from None
        except OSError as exc:
            raise DefinitionError(f"{path}: skill {name}: cannot read ({exc.strerror})") from None
        if stat.S_ISDIR(info.st_mode):
            for rel, data, executable in _read_tree(Path(entry.path), path, root, name, budget, depth + 1):
                yield f"{entry.name}/{rel}", data, executable
            continue
        yield entry.name, _read_file(Path(entry.path), path, name, budget), bool(info.st_mode & 0o111)


def _read_file(real: Path, shown: Path, name: str, budget: _Budget) -> bytes:
    try:
        data = read_regular(real, FILE_LIMIT)
    except NotRegularFile as exc:
        raise DefinitionError(f"{shown}: skill {name}: {exc.strerror}; a skill holds files and folders only") from None
    except FileTooLarge as exc:
        raise DefinitionError(f"{shown}: skill {name}: {exc.strerror} for one file") from None
    except OSError as exc:
        raise DefinitionError(f"{shown}: skill {name}: cannot read ({exc.strerror})") from None
    budget.take(shown, len(data), name)
    return data


def install_skills(skills: Sequence[Skill], agents_dir: Path, state_dir: Path, agent: str) -> InstalledSkills | None:
    """Bring ``agent``'s installed skills in line with ``skills``; None (and nothing left behind) when it has none.

    Bad skill folders raise :class:`DefinitionError` before anything is
    written; a state directory where the skills cannot be written is a
    :class:`StateError`.
    """
    wanted = read_skills(skills, agents_dir)
    root = skills_root(state_dir, agent)
    folder = root.joinpath(*LAYOUT)
    try:
        if not wanted:
            if root.exists() or root.is_symlink():
                with _locked(state_dir, agent):
                    _remove(root)
            return None
        root.parent.mkdir(parents=True, exist_ok=True)
        with _locked(state_dir, agent):
            changed = _sync(root, folder, wanted)
    except OSError as exc:
        where = exc.filename or root
        raise StateError(f"{where}: cannot install the agent's skills ({exc.strerror or exc})") from None
    return InstalledSkills(root=root, folder=folder, names=tuple(s.name for s in wanted), changed=changed)


def _locked(state_dir: Path, agent: str) -> contextlib.AbstractContextManager[None]:
    """One installer per agent at a time (a lock file beside the agent's skills root, not inside it)."""
    lock_path = state_dir / SKILLS_DIR / f".{agent}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    return exclusive_lock(lock_path)


def _sync(root: Path, folder: Path, wanted: list[SkillFolder]) -> bool:
    """Make ``folder`` hold exactly ``wanted``; True when any file changed."""
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        _remove(root)
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in root.iterdir():  # from a launch that died mid-swap
        if leftover.name.startswith((".new-", ".old-")):
            _remove(leftover)
    import tempfile  # here: a launch whose skills are installed already writes none

    changed = False
    names = {s.name for s in wanted}
    for entry in sorted(folder.iterdir()):
        if entry.name not in names:
            _remove(entry)
            changed = True
    for skill in wanted:
        target = folder / skill.name
        if _installed_files(target) == _as_installed(skill.files):
            continue
        fresh = Path(tempfile.mkdtemp(prefix=".new-", dir=root))
        _write_tree(fresh, skill.files)
        if target.exists() or target.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=".old-", dir=root))
            os.rename(target, old / skill.name)
            os.rename(fresh, target)
            _remove(old)
        else:
            os.rename(fresh, target)
        changed = True
    return changed


def _as_installed(files: tuple[tuple[str, bytes, bool], ...]) -> dict[str, tuple[bytes, bool]]:
    return {rel: (data, executable) for rel, data, executable in files}


def _installed_files(target: Path) -> dict[str, tuple[bytes, bool]] | None:
    """What an installed skill folder holds now (None when it is missing or not a plain folder of files)."""
    if target.is_symlink() or not target.is_dir():
        return None
    found: dict[str, tuple[bytes, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(target):
        base = Path(dirpath)
        for d in dirnames:
            if (base / d).is_symlink():
                return None
        for f in filenames:
            path = base / f
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                return None
            found[path.relative_to(target).as_posix()] = (path.read_bytes(), bool(info.st_mode & 0o111))
    return found


def _write_tree(dest: Path, files: tuple[tuple[str, bytes, bool], ...]) -> None:
    """Write ``files`` under the new folder ``dest``, with the modes a plain copy would get under the umask."""
    umask = current_umask()
    os.chmod(dest, 0o777 & ~umask)
    for rel, data, executable in files:
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, (0o777 if executable else 0o666) & ~umask)


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        import shutil  # only here: ~3 ms of every launch's imports otherwise

        shutil.rmtree(path)
