"""One module reads the status records and one runs `tmux list-panes`: both in the fleet's room.

An AST scan of the product: outside ``agentlaunch/fleet/`` no module names ``list-panes``, lists or reads a folder
named for the status records (``status_dir``, ``status_folder``, ``STATUS_DIR``, ``"status"``), or defines a reader
of them; every other module asks :mod:`agentlaunch.fleet`.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentlaunch"
ROOM = PACKAGE / "fleet"
STATUS_NAMES = {"status_dir", "status_folder", "STATUS_DIR"}
READS = {"listdir", "scandir", "iterdir", "glob", "rglob", "read_regular", "read_text", "read_bytes", "open", "walk"}
READERS = {"read_records", "read_folder", "read_record", "checked_record", "list_panes", "parse_panes"}


def outside() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if ROOM not in p.parents)


def names_in(node: ast.AST) -> set[str]:
    """The names, attributes and string constants an expression mentions."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found.add(sub.value)
    return found


def runs_list_panes(text: str) -> bool:
    """``"list-panes"`` as an argument, or a command line running it (``tmux list-panes -a``)."""
    return text == "list-panes" or "list-panes -" in text


def called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(PACKAGE.parent)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and runs_list_panes(node.value):
            found.append(f"{where}:{node.lineno}: runs tmux list-panes")
        elif isinstance(node, ast.Call) and called(node) in READS:
            # the folder read, on the object a method is called on, or in its arguments
            target = node.func.value if isinstance(node.func, ast.Attribute) else None
            mentioned = set().union(*(names_in(a) for a in [*node.args, *([target] if target is not None else [])]))
            if mentioned & STATUS_NAMES:
                found.append(f"{where}:{node.lineno}: reads the status folder ({called(node)})")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if isinstance(node.right, ast.Constant) and node.right.value == "status":
                found.append(f"{where}:{node.lineno}: names the status folder itself")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in READERS:
            found.append(f"{where}:{node.lineno}: defines a reader of its own ({node.name})")
    return found


def test_only_the_fleet_runs_list_panes_or_reads_the_status_folder() -> None:
    assert [o for path in outside() for o in offences(path)] == []


def test_the_scan_finds_what_the_rule_forbids(tmp_path: Path) -> None:
    """The scan is not blind: each way of breaking the rule is found."""
    bad = tmp_path / "agentlaunch" / "x.py"
    bad.parent.mkdir()
    bad.write_text(
        "import os\n"
        "def read_records(d): return os.listdir(status_dir())\n"
        "def panes(t): return t.run('list-panes', '-a')\n"
        "def mine(state): return sorted((state / 'status').iterdir())\n"
        "def theirs(s): return s.status_dir.iterdir()\n"
    )
    global PACKAGE
    kept, PACKAGE = PACKAGE, tmp_path / "agentlaunch"
    try:
        said = offences(bad)
    finally:
        PACKAGE = kept
    assert sorted(s.split(": ", 1)[1] for s in said) == [
        "defines a reader of its own (read_records)",
        "names the status folder itself",
        "reads the status folder (iterdir)",
        "reads the status folder (listdir)",
        "runs tmux list-panes",
    ]


def test_the_room_itself_holds_the_reader_and_the_listing() -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in ROOM.glob("*.py"))
    assert '"list-panes"' in text and "def read_folder(" in text and "def parse(" in text
