"""The package graph holds: every import of the product runs down the layers, never up.

cli → deck → prefix → launch → live → hosts → fleet → usage → providers → definitions → the base modules
(``errors``, ``paths``, ``processes``, ``fsutil``, ``visible``, ``events``, ``sinks``,
``clock``, the ``worktrees`` package, and the providers' facts as data, ``providers/descriptors.py``).
A package may import itself and anything below it; nothing imports ``cli/``; only
the doctor's capture endpoint (``prefix/capture.py``) imports the fake APIs; only ``deck/`` imports Textual;
only ``cli/mcp_server.py`` imports the MCP SDK, only ``cli/acp_server.py`` and ``cli/acp_prompt.py`` the ACP SDK,
and neither `run` nor `status` loads either.
Imports under ``if TYPE_CHECKING:`` are not edges of the layers: they never run, so they load no layer;
the annotations they serve may name any type.

No import circle either (see the note above :func:`import_graph` for which imports count there: all of them,
``TYPE_CHECKING`` ones included).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentlaunch"

LAYERS = ("base", "definitions", "providers", "usage", "fleet", "hosts", "live", "launch", "prefix", "deck", "cli")
"""Lowest first: a module may import its own layer and the ones before it."""

BASE_EXTRAS = {"agentlaunch.providers.descriptors", "agentlaunch.hosts.config"}
"""Modules inside a package that count as base: plain data every layer reads (config.yaml's ``hosts:`` is read with
the rest of the settings, by the definitions layer)."""

BASE_PACKAGES = {"worktrees"}
"""Packages of base modules: a room of the base, not a layer (they import only base modules)."""

TOP = {"agentlaunch.entry", "agentlaunch.__main__"}
"""The program's entry: it may import any layer (it is what starts them)."""

MCP_DOOR = {"agentlaunch.cli.mcp_server"}
"""The one module that imports the MCP SDK: `agentlaunch mcp` imports it when it runs (about a second of CPU)."""

ACP_DOOR = {"agentlaunch.cli.acp_server", "agentlaunch.cli.acp_prompt"}
"""The modules that import the Agent Client Protocol SDK (``acp``): `agentlaunch acp` imports them when it runs."""

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
    if len(parts) == 1 or parts[1] in BASE_PACKAGES:
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


def imports(path: Path, module: str | None = None, *, type_checking: bool = False) -> Iterator[tuple[int, str]]:
    """Every module ``path`` (the module ``module``) imports at run time, with its line (relative imports resolved).

    With ``type_checking``, the imports under ``if TYPE_CHECKING:`` too (the circle check counts them).
    """
    tree = ast.parse(path.read_text(), str(path))
    skip = set() if type_checking else type_checking_lines(tree)
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
                # `from agentlaunch.x import y` names the package x only when some y is not a module of it:
                # `from agentlaunch.providers import untrusted` reads untrusted.py, not the registry in __init__.py
                names_package = False
                for alias in node.names:
                    folder = PACKAGE.parent / target.replace(".", "/")
                    if (folder / f"{alias.name}.py").exists() or (folder / alias.name / "__init__.py").exists():
                        yield node.lineno, f"{target}.{alias.name}"
                    else:
                        names_package = True
                if names_package:
                    yield node.lineno, target


def problem(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target``, or None."""
    if target.split(".")[0] == "textual":
        return None if layer(source) == "deck" else "only deck/ imports textual (the deck's own dependency)"
    if target.split(".")[0] in ("mcp", "mcp_types"):
        return None if source in MCP_DOOR else "only cli/mcp_server.py imports the MCP SDK (`agentlaunch mcp`'s own)"
    if target.split(".")[0] == "acp":
        return None if source in ACP_DOOR else "only cli/acp_server.py and cli/acp_prompt.py import the ACP SDK (`acp`'s own)"
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
    assert problem("agentlaunch.cli.mcp_server", "mcp.server.mcpserver") is None
    assert problem("agentlaunch.cli.mcp", "mcp.server.mcpserver") is not None
    assert problem("agentlaunch.cli.mcp_tools", "mcp_types") is not None
    assert problem("agentlaunch.cli.acp_server", "acp.schema") is None
    assert problem("agentlaunch.cli.acp_turn", "acp") is not None
    assert problem("agentlaunch.cli.acp", "acp.schema") is not None
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nif TYPE_CHECKING:\n    from agentlaunch.cli import x\nfrom ..launch import loop\n")
    found = list(imports(bad, "agentlaunch.providers.bad"))
    assert (4, "agentlaunch.launch.loop") in found
    assert all(line != 3 for line, _ in found)
    assert problem("agentlaunch.providers.bad", "agentlaunch.launch.loop") is not None


# --- Import circles -------------------------------------------------------------------------------
#
# An edge is every import of one agentlaunch module by another, wherever it stands: at module level,
# inside a function (a deferred import still means "this module needs that one": a reader must hold
# both in mind, and only the order of calls keeps it from failing at import time), and under
# ``if TYPE_CHECKING:`` (a type-only import still says "this helper knows the whole Launch"; the
# circle it closes is the knot the ports design removes). ``from pkg import mod`` is an edge to
# ``pkg.mod``, not to ``pkg/__init__.py``: the package's own code runs first, but naming a module
# through its package asks nothing of the package's names.


def modules() -> dict[str, Path]:
    """Every module of the package, by name."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def import_graph() -> dict[str, set[str]]:
    """Each module to the agentlaunch modules it imports (every edge the note above counts)."""
    known = modules()

    def resolve(target: str) -> str | None:
        # `from agentlaunch.x import name` yields agentlaunch.x.name: the module is its longest known prefix
        parts = target.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        return ".".join(parts) or None

    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        found = {resolve(target) for _, target in imports(path, module, type_checking=True)}
        graph[module] = {target for target in found if target is not None and target != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def describe_circle(component: frozenset[str], graph: dict[str, set[str]]) -> str:
    """A circle as its members and the edges between them, for the failure message."""
    edges = [f"  {source} -> {target}" for source in sorted(component) for target in sorted(graph[source] & component)]
    return "\n".join([f"{len(component)} modules:", *edges])


def test_no_import_circle() -> None:
    """Issue 40 §3: the launch's helpers take narrow ports (Protocols), never ``Launch`` itself, so none imports it back."""
    graph = import_graph()
    found = [describe_circle(c, graph) for c in circles(graph)]
    assert found == [], "import circles:\n" + "\n".join(found)


def test_the_circle_check_finds_deferred_and_type_only_edges(tmp_path: Path) -> None:
    helper = tmp_path / "helper.py"
    helper.write_text(
        "if TYPE_CHECKING:\n    from agentlaunch.launch.session import Launch\n"
        "def later() -> None:\n    from agentlaunch.launch import drivers\n"
    )
    found = {target for _, target in imports(helper, "agentlaunch.launch.helper", type_checking=True)}
    assert found == {"agentlaunch.launch.session", "agentlaunch.launch.drivers"}
    assert {target for _, target in imports(helper, "agentlaunch.launch.helper")} == {"agentlaunch.launch.drivers"}
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [frozenset({"a", "b", "c"})]
    assert circles({"a": {"b"}, "b": set()}) == []
    graph["c"].add("d")  # d joins the circle
    assert circles(graph) == [frozenset({"a", "b", "c", "d"})]


def test_only_the_wiring_names_launch() -> None:
    """Issue 40 §3: the helpers and the mode runners take narrow ports, never ``Launch``; the one module that imports
    ``launch/session.py`` (type-only or not) is ``launch/build.py``, which makes the launch."""
    graph = import_graph()
    importers = sorted(module for module, targets in graph.items() if "agentlaunch.launch.session" in targets)
    assert importers == ["agentlaunch.launch.build"]


def test_run_status_and_the_mcp_commands_help_never_import_the_mcp_sdk() -> None:
    """`run` and `status` load only their own command; help loads every command, `mcp` and `acp` too, whose modules
    import their SDK only when the server starts."""
    probe = (
        "import sys; from agentlaunch.cli import load_commands; load_commands(['run', 'demo', 'hi']); "
        "load_commands(['status']); load_commands(['--help']); "
        "import agentlaunch.launch.build, agentlaunch.launch.loop, agentlaunch.live.status_fast, agentlaunch.entry; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'acp') "
        "or m.endswith(('mcp_server', 'acp_server', 'acp_prompt'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
