"""agentlaunch turns Node's compile cache on for Gemini CLI (providers/gemini.compile_cache_env), the user's own
setting first.

Real Gemini CLI on the suite's Node 22 against the fake API: a headless run with no NODE_COMPILE_CACHE of the user's
fills ``<state>/node-compile-cache``; the user's own NODE_COMPILE_CACHE is used instead and the state directory gets
none (NODE_DISABLE_COMPILE_CACHE: tests/test_gemini_home.py). The rest of the suite runs with the tests' own cache set
(tests/support/clis.use_node), so this is the one place where agentlaunch chooses it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.clis import NODE_ENV
from tests.e2e import test_run_codex_gemini as codex_gemini
from tests.e2e.test_run_codex_gemini import Provider

provider = codex_gemini.provider  # the fixture of that module, gemini only here

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(300),
    pytest.mark.parametrize("provider", ["gemini"], indirect=True),
    pytest.mark.skipif(bool(os.environ.get(NODE_ENV)), reason=f"{NODE_ENV} chooses a node that may have no compile cache"),
]


def cached_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []


def run_gemini(p: Provider, workdir: Path, **env: str | None) -> None:
    p.push_text("ok")
    environ = {k: v for k, v in {**os.environ, **p.env, **env}.items() if v is not None}
    argv = [sys.executable, "-m", "agentlaunch", "run", "planner", "hi"]
    done = subprocess.run(argv, cwd=workdir, env=environ, capture_output=True, timeout=240)
    assert done.returncode == 0, done.stderr.decode()


def test_gemini_gets_a_compile_cache_unless_the_user_chose_one(
    provider: Provider, workdir: Path, isolated_home: Path, tmp_path: Path
) -> None:
    ours = isolated_home / "state" / "node-compile-cache"
    theirs = tmp_path / "their-cache"
    run_gemini(provider, workdir, NODE_COMPILE_CACHE=str(theirs))
    assert cached_files(theirs) and not ours.exists()  # Node wrote the user's cache, agentlaunch made none

    run_gemini(provider, workdir, NODE_COMPILE_CACHE=None)
    assert cached_files(ours), "Gemini ran without the compile cache agentlaunch set for it"
