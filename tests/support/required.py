"""The machine's tools a test module needs (tmux, OpenSSH's sshd): a module whose tool is missing here is skipped on a
person's machine, and fails (never skips) where the run must test everything: ``AGENTLAUNCH_REQUIRE_REAL_CLIS=1``
(the real CLIs required, docs/development.md) or CI. A skip there would hide that the test never ran.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.support.ssh_server import SSHD

HAVE_TMUX = shutil.which("tmux") is not None
HAVE_SSHD = SSHD is not None
INSTALL = {"tmux": "apt-get install tmux", "sshd": "apt-get install openssh-server"}


def required() -> bool:
    """Whether a missing tool fails the run: ``AGENTLAUNCH_REQUIRE_REAL_CLIS=1`` or CI."""
    return os.environ.get("AGENTLAUNCH_REQUIRE_REAL_CLIS") == "1" or bool(os.environ.get("CI"))


def missing(*tools: str) -> list[str]:
    """Which of ``tools`` (``tmux``, ``sshd``) this machine lacks."""
    have = {"tmux": HAVE_TMUX, "sshd": HAVE_SSHD}
    return [tool for tool in tools if not have[tool]]


def reason(gone: list[str]) -> str:
    return f"{' and '.join(gone)} not installed ({'; '.join(INSTALL[t] for t in gone)}; .ci/run installs them)"


def need(*tools: str) -> None:
    """At a test module's top: skip the module when one of ``tools`` is missing, fail it when :func:`required`."""
    gone = missing(*tools)
    if not gone:
        return
    if required():
        pytest.fail(f"{reason(gone)}: AGENTLAUNCH_REQUIRE_REAL_CLIS=1 or CI requires them", pytrace=False)
    pytest.skip(reason(gone), allow_module_level=True)


def needs(*tools: str) -> pytest.MarkDecorator:
    """A test's mark: skipped when one of ``tools`` is missing, unless :func:`required` (then it runs, and fails)."""
    gone = missing(*tools)
    return pytest.mark.skipif(bool(gone) and not required(), reason=reason(gone) if gone else "")
