"""cli/ stays thin (no function there runs over 60 lines), and so does Launch (200 lines: its jobs are in parts)."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parent.parent / "agentlaunch" / "cli"
LIMIT = 60


def test_no_function_in_cli_is_over_sixty_lines() -> None:
    long = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LIMIT:
                    long.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    assert long == [], "move the work out of cli/: " + ", ".join(long)


LAUNCH = CLI.parent / "launch" / "session.py"
LAUNCH_LIMIT = 200


def test_launch_keeps_identity_state_sinks_and_closing_in_two_hundred_lines() -> None:
    """The rest of a launch lives in its parts (start.py, drivers.py, turn_cycle.py, tool_gates.py, resumed.py)."""
    tree = ast.parse(LAUNCH.read_text(), str(LAUNCH))
    launch = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Launch")
    lines = (launch.end_lineno or launch.lineno) - launch.lineno + 1
    assert lines <= LAUNCH_LIMIT, f"Launch is {lines} lines: give the new job a part of its own"
