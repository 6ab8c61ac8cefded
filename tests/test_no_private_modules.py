"""agentlaunch imports the standard library's public modules only: no private CPython module (``_json``,
``_socket``, ``_sha256``, ``_operator``...) and no ``TYPE_CHECKING = False`` standing in for ``typing``'s."""

from __future__ import annotations

import ast
import sys

from tests.conftest import REPO

PACKAGE = REPO / "agentlaunch"


def _is_private_stdlib(name: str) -> bool:
    """A private CPython module: a top-level name starting with ``_`` that is this Python's (``_json``,
    ``_socket``...), or another version's (``_sha2`` is 3.12's, ``_sha256`` 3.11's: no package agentlaunch
    depends on has a top-level name starting with ``_``)."""
    top = name.split(".")[0]
    if not top.startswith("_") or top == "__future__":
        return False
    return top in sys.stdlib_module_names or top in sys.builtin_module_names or not top.startswith("__")


def private_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """The line and name of each import of a private CPython module in ``tree``: ``import``, ``from ... import``
    and ``__import__``/``importlib.import_module`` with a literal name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if _is_private_stdlib(alias.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _is_private_stdlib(node.module):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            callee = node.func
            called = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else ""
            name = node.args[0].value
            if called in ("__import__", "import_module") and isinstance(name, str) and _is_private_stdlib(name):
                found.append((node.lineno, name))
    return found


def type_checking_stand_ins(tree: ast.AST) -> list[int]:
    """The lines that assign ``TYPE_CHECKING`` (anything but ``from typing import TYPE_CHECKING``)."""
    lines = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "TYPE_CHECKING" for t in targets):
            lines.append(node.lineno)
    return lines


def _modules() -> list[tuple[str, ast.AST]]:
    return [
        (p.relative_to(REPO).as_posix(), ast.parse(p.read_text(encoding="utf-8"), str(p))) for p in sorted(PACKAGE.rglob("*.py"))
    ]


def test_no_module_imports_a_private_cpython_module() -> None:
    found = [f"{path}:{line}: {name}" for path, tree in _modules() for line, name in private_imports(tree)]
    assert found == []


def test_no_module_stands_in_for_typings_type_checking() -> None:
    found = [f"{path}:{line}" for path, tree in _modules() for line in type_checking_stand_ins(tree)]
    assert found == []


def test_the_checks_see_what_they_look_for() -> None:
    """Each form the checks refuse is found, and the public modules, ``__future__`` and a third party's private
    name pass."""
    refused = ast.parse(
        "import _json\nimport _socket as socket\nfrom _sha2 import sha256\nfrom _operator import _compare_digest\n"
        "import os, _posixsubprocess\n__import__('_json')\nimportlib.import_module('_io')\n"
    )
    assert [name for _, name in private_imports(refused)] == [
        "_json",
        "_socket",
        "_sha2",
        "_operator",
        "_posixsubprocess",
        "_json",
        "_io",
    ]
    allowed = ast.parse(
        "from __future__ import annotations\nimport json, socket, hashlib\nfrom genai_prices.units import _get_registry\n"
        "from . import _private\nfrom typing import TYPE_CHECKING\n"
    )
    assert private_imports(allowed) == [] and type_checking_stand_ins(allowed) == []
    stand_ins = ast.parse("TYPE_CHECKING = False\nif True:\n    TYPE_CHECKING: bool = False\n")
    assert type_checking_stand_ins(stand_ins) == [1, 3]
