"""The suite's CPU per test (tests/support/cpu_times.py) and bench/bench_suite.py reading it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

SAMPLE = """
import subprocess, sys

def test_burns_in_a_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)

def test_idle():
    pass
"""


def test_each_test_gets_a_line_with_its_own_and_its_childrens_cpu_and_the_bench_sums_them(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    out = tmp_path / "cpu.jsonl"
    env = {**os.environ, "AGENTLAUNCH_CPU_TIMES": str(out), "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.support.cpu_times",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path / "test_sample.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = {line["id"].split("::")[-1]: line for line in map(json.loads, out.read_text().splitlines())}
    assert set(lines) == {"test_burns_in_a_child", "test_idle"}
    burn, idle = lines["test_burns_in_a_child"], lines["test_idle"]
    assert burn["children"] > 0.05 and idle["children"] == 0.0  # the child's CPU counts for the test that waited for it
    assert all(line["self"] >= 0 for line in lines.values())
    # when and where: one process (-n 0), the child's run inside its test's span, the idle test after it
    assert {line["worker"] for line in lines.values()} == {"main"}
    assert burn["start"] <= burn["end"] <= idle["start"] <= idle["end"]

    bench = subprocess.run([sys.executable, str(REPO / "bench" / "bench_suite.py"), str(out)], capture_output=True, text=True)
    assert bench.returncode == 0, bench.stderr
    total = burn["self"] + burn["children"] + idle["self"] + idle["children"]
    assert f"2 tests  summed CPU {total:.0f} s" in bench.stdout
    assert "main: 2 tests" in bench.stdout and "idle 0 s before the run's end" in bench.stdout
    assert "seconds with k workers running a test: 1: " in bench.stdout  # one process, busy from start to end
    assert bench.stdout.rstrip().endswith("main  test_sample.py::test_idle")  # the last test still running
