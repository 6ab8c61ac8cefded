"""How a native interface ended, in words a person reads: its error, and the last lines it wrote without their
terminal escape sequences."""

from __future__ import annotations

from agentlaunch.errors import AgentlaunchError, ExitCode


class InterfaceFailed(AgentlaunchError):
    """The provider CLI's interface ended with an error (its exit code is not 0)."""

    exit_code = ExitCode.TURN_FAILED


def last_words(tail: bytes, lines: int = 3) -> list[str]:
    """The last lines of text the CLI wrote, without its escape sequences (what a person can read)."""
    from agentlaunch.visible import visible

    text = strip_escapes(tail.decode("utf-8", "replace"))
    found = [line.strip() for line in text.replace("\r", "\n").split("\n") if line.strip()]
    return [visible(line)[:300] for line in found[-lines:]]


def strip_escapes(text: str) -> str:
    """``text`` without terminal escape sequences (CSI, OSC, and two-byte ones)."""
    import re

    return re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[PX^_][^\x1b]*\x1b\\|\x1b.", "", text)
