"""The package graph holds: every import of the product runs down the layers, never up.

cli → deck → prefix → launch → live → usage → providers → definitions → the base modules
(``errors``, ``paths``, ``processes``, ``fsutil``, ``visible``, ``events``, ``sinks``,
``clock``, ``worktree``, and the providers' facts as data, ``providers/descriptors.py``).
A package may import itself and anything below it; nothing imports ``cli/``; only
the doctor's capture endpoint (``prefix/capture.py``) imports the fake APIs; only ``deck/`` imports Textual.
Imports under ``if TYPE_CHECKING:`` are not edges: they never run, so they can neither
cycle nor load a layer; the annotations they serve may name any type.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentlaunch"

LAYERS = ("base", "definitions", "providers", "usage", "live", "launch", "prefix", "deck", "cli")
"""Lowest first: a module may import its own layer and the ones before it."""

BASE_EXTRAS = {"agentlaunch.providers.descriptors"}
"""Modules inside a package that count as base: plain data every layer reads."""

TOP = {"agentlaunch.entry", "agentlaunch.__main__"}
"""The program's entry: it may import any layer (it is what starts them)."""

FAKEAPI_DOOR = {"agentlaunch.prefix.capture"}
"""The one product module that may import the fake APIs: where the doctor starts its capture endpoint."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> str:
    """The layer of an ``agentlaunch`` module (``fakeapi`` is its own)."""
    if module in BASE_EXTRAS:
        return "base"
    parts = module.split(".")
    if len(parts) == 1:
        return "base"
    if (PACKAGE / parts[1]).is_dir():
        return parts[1]
    return "base"


def type_checking_lines(tree: ast.Module) -> set[int]:
    """Line numbers inside ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name | ast.Attribute):
            name = node.test.id if isinstance(node.test, ast.Name) else node.test.attr
            if name == "TYPE_CHECKING":
                for child in node.body:
                    lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(path: Path, module: str | None = None) -> Iterator[tuple[int, str]]:
    """Every module ``path`` (the module ``module``) imports at run time, with its line (relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = type_checking_lines(tree)
    own = (module or module_name(path)).split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None or node.level:
                # `from agentlaunch.x import y` may name a module y: check it as one
                for alias in node.names:
                    yield node.lineno, f"{target}.{alias.name}"
            else:
                yield node.lineno, target
                for alias in node.names:
                    if (PACKAGE.parent / (target.replace(".", "/") + f"/{alias.name}.py")).exists():
                        yield node.lineno, f"{target}.{alias.name}"


def problem(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target``, or None."""
    if target.split(".")[0] == "textual":
        return None if layer(source) == "deck" else "only deck/ imports textual (the deck's own dependency)"
    if not target.startswith("agentlaunch.") and target != "agentlaunch":
        return None
    if source in TOP:
        return None
    src, dst = layer(source), layer(target)
    if dst == "fakeapi":
        return None if src == "fakeapi" or source in FAKEAPI_DOOR else "only prefix/capture.py imports the fake APIs"
    if src == "fakeapi":
        return None if dst == "base" else "the fake APIs import base modules only"
    if dst == "cli" and src != "cli":
        return "nothing imports cli/"
    if src == dst:
        return None
    if LAYERS.index(dst) > LAYERS.index(src):
        return f"{src}/ is below {dst}/ (layers, lowest first: {' → '.join(LAYERS)})"
    return None


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = module_name(path)
        for line, target in imports(path):
            why = problem(source, target)
            if why:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {target}: {why}")
    return found


def test_every_import_runs_down_the_layers() -> None:
    assert violations() == []


def test_the_descriptors_are_data_every_layer_may_read() -> None:
    """descriptors.py counts as a base module only while it imports nothing of agentlaunch but base modules."""
    path = PACKAGE / "providers" / "descriptors.py"
    outside = [t for _, t in imports(path) if t.startswith("agentlaunch") and layer(t) != "base"]
    assert outside == []


def test_the_check_names_the_offending_file_and_line(tmp_path: Path) -> None:
    assert problem("agentlaunch.providers.claude", "agentlaunch.launch.loop") is not None
    assert problem("agentlaunch.definitions.spec", "agentlaunch.providers.claude") is not None
    assert problem("agentlaunch.launch.build", "agentlaunch.cli.common") == "nothing imports cli/"
    assert problem("agentlaunch.prefix.live", "agentlaunch.fakeapi.server") is not None
    assert problem("agentlaunch.prefix.capture", "agentlaunch.fakeapi.server") is None
    assert problem("agentlaunch.launch.build", "agentlaunch.usage.store") is None
    assert problem("agentlaunch.definitions.spec", "agentlaunch.providers.descriptors") is None
    assert problem("agentlaunch.entry", "agentlaunch.cli") is None
    assert problem("agentlaunch.cli.deck", "agentlaunch.deck.app") is None
    assert problem("agentlaunch.deck.app", "agentlaunch.cli.common") == "nothing imports cli/"
    assert problem("agentlaunch.launch.loop", "agentlaunch.deck.rows") is not None
    assert problem("agentlaunch.deck.app", "textual.app") is None
    assert problem("agentlaunch.live.view", "textual.widgets") is not None
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nif TYPE_CHECKING:\n    from agentlaunch.cli import x\nfrom ..launch import loop\n")
    found = list(imports(bad, "agentlaunch.providers.bad"))
    assert (4, "agentlaunch.launch.loop") in found
    assert all(line != 3 for line, _ in found)
    assert problem("agentlaunch.providers.bad", "agentlaunch.launch.loop") is not None
