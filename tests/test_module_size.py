"""No module of agentlaunch/ is over 400 lines: a module a newcomer can read has one job (issue 40, part 4)."""

from __future__ import annotations

from tests.conftest import REPO

LIMIT = 400


def module_lengths() -> dict[str, int]:
    return {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((REPO / "agentlaunch").rglob("*.py"))
    }


def test_no_module_is_over_400_lines() -> None:
    lengths = module_lengths()
    assert len(lengths) > 100  # the walk sees the package
    over = {name: n for name, n in lengths.items() if n > LIMIT}
    assert over == {}, f"split these by job (a module named for what it owns): {over}"
