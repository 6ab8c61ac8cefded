"""``--json``: the provider's normalized events, one JSON object per line on stdout."""

from __future__ import annotations

import json
import sys
from typing import TextIO

from agentlaunch.events import Event, Unknown
from agentlaunch.sinks import LaunchView, SinkEvent


class JsonLines:
    """A sink that prints every normalized event (never the launch's own, never an unknown type) as JSON."""

    def __init__(self, stdout: TextIO | None = None) -> None:
        self.out = stdout or sys.stdout

    def event(self, event: SinkEvent, launch: LaunchView | None = None) -> None:
        if not isinstance(event, Event) or isinstance(event, Unknown):
            return
        self.out.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
        self.out.flush()
