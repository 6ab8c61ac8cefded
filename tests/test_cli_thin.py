"""cli/ stays thin: its commands parse the command line and hand over; no function there runs over 60 lines."""

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
