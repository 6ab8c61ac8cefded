"""Providers own what they know: outside ``providers/``, a provider's name is never spelled out in the product.

Code that branches on ``spec.provider == "codex"`` keeps a provider fact in the
wrong place: adding or changing a provider then means finding every such
branch. The facts live in the provider's descriptor (``providers/descriptors.py``)
and its adapter, and everything else asks them. Allowed: ``providers/`` itself,
the fake APIs (``fakeapi/``, which are named for the APIs they imitate) and the
YAML schema (``definitions/schemas.py``, whose ``provider`` field lists the
names a test compares with the descriptors). A name counts when a whole string
constant is exactly one provider's name (``"claude"``); the name inside a longer
text (a docstring, a message, ``"gemini-home"``) does not.
"""

from __future__ import annotations

import ast
from pathlib import Path

from agentlaunch.providers import PROVIDERS

PACKAGE = Path(__file__).resolve().parent.parent / "agentlaunch"
ALLOWED = ("providers/", "fakeapi/", "definitions/schemas.py")


def spelled_names(path: Path) -> list[tuple[int, str]]:
    """Every string constant in ``path`` that is exactly a provider's name, with its line."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in PROVIDERS
    ]


def offenders(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(ALLOWED):
            continue
        found += [
            f"agentlaunch/{rel}:{line}: the provider name {name!r}; ask its descriptor or adapter"
            for line, name in spelled_names(path)
        ]
    return found


def test_no_provider_name_is_spelled_outside_providers() -> None:
    assert offenders() == []


def test_the_check_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "launch").mkdir()
    (tmp_path / "providers").mkdir()
    (tmp_path / "launch" / "bad.py").write_text('"""Runs claude."""\nif provider == "codex":\n    x = "gemini-home"\n')
    (tmp_path / "providers" / "ok.py").write_text('NAME = "claude"\n')
    assert offenders(tmp_path) == ["agentlaunch/launch/bad.py:2: the provider name 'codex'; ask its descriptor or adapter"]


def knows(path: Path, provider: str) -> bool:
    """Whether ``path`` names ``provider`` itself: its name, its descriptor (``CODEX``) or its adapter (``CodexAdapter``)."""
    marks = {provider, provider.upper(), f"{provider.capitalize()}Adapter"}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[object] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Constant):
            names = [node.value]
        if marks.intersection(n for n in names if isinstance(n, str)):
            return True
    return False


def own_file(rel: str) -> bool:
    """A provider's own module (``providers/codex.py``, ``codex_home.py``, ``native/codex_hooks.py``...)."""
    name = rel.removeprefix("providers/").removeprefix("native/")
    return rel.startswith("providers/") and "/" not in name and name.startswith(PROVIDERS)


def test_a_provider_is_known_by_name_in_three_shared_files_besides_its_own() -> None:
    """The count in docs/architecture.md ("To add a provider"): its descriptor, the registry, the schema."""
    for provider in PROVIDERS:
        shared = {
            path.relative_to(PACKAGE).as_posix()
            for path in PACKAGE.rglob("*.py")
            if not own_file(path.relative_to(PACKAGE).as_posix())
            and not path.relative_to(PACKAGE).as_posix().startswith("fakeapi/")  # the APIs' fakes, not the providers
            and knows(path, provider)
        }
        assert shared == {"providers/descriptors.py", "providers/__init__.py", "definitions/schemas.py"}, provider
