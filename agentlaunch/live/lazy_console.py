"""A rich Console made on first use: importing rich costs a launch ~7 ms of CPU it mostly never needs.

A headless ``agentlaunch run AGENT PROMPT --quiet`` prints nothing through rich,
yet its consoles were built (and rich imported) at start-up, beside the CLI that
is starting. :class:`LazyConsole` takes the Console's arguments and builds it
the first time anything asks for an attribute (``print``, ``width``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class LazyConsole:
    """Stands for ``rich.console.Console(**kwargs)``, made when first used."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        """The real Console (made now if it was not yet), for APIs that want one, e.g. ``Live(console=...)``."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._kwargs)
        return self._console

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not the Console's: never build it for a probe of private names (copy, pickle)
            raise AttributeError(name)
        return getattr(self.console, name)
