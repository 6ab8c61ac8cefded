"""The Node.js the real CLIs run on in these tests: the pinned LTS from npm, with its compile cache (testbed/clis.py)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from testbed.clis import NODE_ENV, NODE_PIN, ensure_cli

pytestmark = pytest.mark.e2e


@pytest.mark.skipif(bool(os.environ.get(NODE_ENV)), reason=f"{NODE_ENV} chooses another node for this run")
def test_the_clis_start_on_the_pinned_node_with_its_compile_cache() -> None:
    gemini = ensure_cli("gemini")
    node = shutil.which("node")  # what the CLIs' `#!/usr/bin/env node` finds
    assert node is not None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert version == f"v{NODE_PIN}", f"{node} is {version}: the session start did not put the pinned node first"
    assert "node-compile-cache" in os.environ.get("NODE_COMPILE_CACHE", "")
    done = subprocess.run([str(gemini), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
