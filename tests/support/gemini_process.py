"""Whether a test runs Gemini CLI as one node process or as shipped (its parent and relaunched child)."""

from __future__ import annotations

from typing import Any


def one_gemini_process(request: Any) -> bool:
    """Whether the Gemini CLI a fixture starts for this test may run as one node process (``no_relaunch``).

    Gemini CLI restarts itself in a child node by default (a parent that ignores SIGINT/SIGTERM and a child that
    does the work): about 0.6 CPU-s more per start. A test whose subject is that tree (a signal, a stop, the
    children under agentlaunch) is marked ``gemini_relaunch`` and keeps it; the contract tests and the doctor
    always run Gemini as shipped.
    """
    return request.node.get_closest_marker("gemini_relaunch") is None
