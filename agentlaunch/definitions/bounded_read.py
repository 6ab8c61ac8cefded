"""A file of an agents directory read safely: inside the directory, a regular file, bounded, UTF-8; every problem a
``FILE: FIELD: message`` DefinitionError."""

from __future__ import annotations

from pathlib import Path

from agentlaunch.errors import DefinitionError
from agentlaunch.fsutil import read_regular

# Each file read has a size limit: more is surely a mistake, and would cost every launch (a 200 MB soul: 38 s, 1 GB).
PART_LIMIT = 4 << 20  # a soul, agent.md, bundle or SKILL.md: about a million tokens, more than any model's context


def read_text(path: Path, root: Path, label: str, limit: int = PART_LIMIT) -> str:
    """Read a UTF-8 file that must lie inside ``root``; problems become DefinitionErrors.

    Only a regular file of at most ``limit`` bytes is read: a FIFO, device or
    directory in its place is refused without blocking (:func:`agentlaunch.fsutil.read_regular`).
    """
    from agentlaunch.fsutil import FileTooLarge, NotRegularFile

    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise DefinitionError(f"{path}: {label}: refers outside the agents directory {root}")
    try:
        data = read_regular(resolved, limit)
    except FileNotFoundError:
        raise DefinitionError(f"{path}: {label}: file not found") from None
    except NotRegularFile as exc:
        raise DefinitionError(f"{path}: {label}: {exc.strerror}; it must be a file") from None
    except FileTooLarge as exc:
        raise DefinitionError(f"{path}: {label}: {exc.strerror} for one file") from None
    except OSError as exc:
        raise DefinitionError(f"{path}: {label}: cannot read ({exc.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DefinitionError(f"{path}: {label}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
