"""A tool the suite needs (tmux, sshd) missing here: skipped on a person's machine, failed (never skipped) under
AGENTLAUNCH_REQUIRE_REAL_CLIS=1 or CI (tests/support/required.py)."""

from __future__ import annotations

import pytest

from tests.support import required


@pytest.fixture
def no_tools(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(required, "HAVE_TMUX", False)
    monkeypatch.setattr(required, "HAVE_SSHD", False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("AGENTLAUNCH_REQUIRE_REAL_CLIS", raising=False)
    return monkeypatch


@pytest.mark.parametrize(("variable", "value"), [("AGENTLAUNCH_REQUIRE_REAL_CLIS", "1"), ("CI", "true")])
def test_a_missing_tool_fails_the_module_when_the_run_requires_everything(
    no_tools: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    no_tools.setenv(variable, value)
    with pytest.raises(pytest.fail.Exception, match=r"sshd and tmux not installed .*openssh-server.*requires them"):
        required.need("sshd", "tmux")
    mark = required.needs("tmux")
    assert mark.args == (False,)  # the test runs (and fails on the missing tool), never skipped


def test_a_missing_tool_skips_the_module_on_a_persons_machine(no_tools: pytest.MonkeyPatch) -> None:
    with pytest.raises(pytest.skip.Exception, match="tmux not installed"):
        required.need("tmux")
    assert required.needs("tmux").args == (True,)
    no_tools.setenv("AGENTLAUNCH_REQUIRE_REAL_CLIS", "0")  # only "1" requires them
    with pytest.raises(pytest.skip.Exception):
        required.need("sshd")


def test_tools_present_neither_skip_nor_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(required, "HAVE_TMUX", True)
    monkeypatch.setattr(required, "HAVE_SSHD", True)
    monkeypatch.setenv("AGENTLAUNCH_REQUIRE_REAL_CLIS", "1")
    required.need("tmux", "sshd")
    assert required.needs("tmux", "sshd").args == (False,)
