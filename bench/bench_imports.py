"""Benchmark what a headless launch imports: this tree against another checkout, side by side.

Run: ``python bench/bench_imports.py --before CHECKOUT [--rounds 21] [--module M ...]``

Each round imports the same modules (by default what `agentlaunch run AGENT PROMPT` loads before and while it
builds a headless launch: Typer's `run` of ``cli/run.py``, the launch, the per-turn providers, the store)
in a fresh ``python -X importtime`` of this tree and of a byte-compiled copy of ``--before``'s package (e.g.
/work/main before a change), in alternating order. Prints, for each side, the median and the smallest total of
the agentlaunch modules' own import time, the process's CPU, and the ratio of the medians; also how many
dataclasses each side creates while importing and which heavier modules (``dataclasses``, ``inspect``, jinja2,
rich, ...) it loads (each counted in a separate run). Bytecode is compiled first on both sides (this machine
sets ``PYTHONDONTWRITEBYTECODE=1``, under which a source checkout compiles every module on every run).
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

REPO = Path(__file__).resolve().parent.parent
MODULES = [
    "agentlaunch.cli.run",
    "agentlaunch.launch.build",
    "agentlaunch.launch.session",
    "agentlaunch.launch.start",
    "agentlaunch.launch.turn_cycle",
    "agentlaunch.providers.codex",
    "agentlaunch.providers.gemini",
    "agentlaunch.providers.claude",
    "agentlaunch.usage.store",
    "agentlaunch.usage.meter",
]
COUNT = """
import dataclasses, sys
made = []
real = dataclasses._process_class
def counting(cls, *args, **kwargs):
    made.append(cls.__module__ + "." + cls.__qualname__)
    return real(cls, *args, **kwargs)
dataclasses._process_class = counting
for name in sys.argv[1:]:
    __import__(name)
print(len([m for m in made if m.startswith("agentlaunch.")]))
"""
HEAVY = ("dataclasses", "inspect", "jinja2", "rich", "typer", "decimal", "ctypes")
LOADED = f"""
import sys
for name in sys.argv[1:]:
    __import__(name)
print(" ".join(m for m in {HEAVY!r} if m in sys.modules) or "none")
"""


def one(tree: Path, modules: list[str]) -> tuple[float, float]:
    """(agentlaunch's own import time, the process's CPU) of one fresh interpreter importing ``modules``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import sys\nfor m in sys.argv[1:]: __import__(m)", *modules],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = 0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        self_us, _, name = line.removeprefix("import time:").split("|")
        if name.strip().startswith("agentlaunch") and self_us.strip().isdigit():
            own += int(self_us)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return own / 1e6, cpu


def made_and_loaded(tree: Path, modules: list[str]) -> tuple[int, str]:
    """How many classes ``dataclasses`` makes while importing ``modules`` (a datarecord is not one), and which of
    the standard library's and the dependencies' heavier modules (``HEAVY``) the import loads."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    made, loaded = (
        subprocess.run(
            [sys.executable, "-c", script, *modules], env=env, cwd="/", capture_output=True, text=True, check=True
        ).stdout.strip()
        for script in (COUNT, LOADED)
    )
    return int(made), loaded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a checkout to compare with (e.g. /work/main)")
    parser.add_argument("--rounds", type=int, default=21, help="alternating pairs (default 21)")
    parser.add_argument("--module", action="append", help="import these instead of the launch's modules")
    args = parser.parse_args()
    modules = args.module or MODULES
    with tempfile.TemporaryDirectory(prefix="bench-imports-") as folder:
        before = Path(folder) / "before"
        shutil.copytree(args.before / "agentlaunch", before / "agentlaunch")
        for tree in (before, REPO):
            compileall.compile_dir(str(tree / "agentlaunch"), quiet=1)
        sides: dict[str, tuple[Path, list[float], list[float]]] = {"before": (before, [], []), "this tree": (REPO, [], [])}
        for i in range(args.rounds):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for name in order:
                own, cpu = one(sides[name][0], modules)
                sides[name][1].append(own)
                sides[name][2].append(cpu)
        load = os.getloadavg()[0]
        print(f"{args.rounds} alternating rounds, importing {len(modules)} modules; load average {load:.2f}")
        for name, (tree, owns, cpus) in sides.items():
            made, loaded = made_and_loaded(tree, modules)
            print(
                f"{name:10s}: agentlaunch's own import time median {median(owns) * 1000:6.1f} ms,"
                f" min {min(owns) * 1000:6.1f} ms; process CPU median {median(cpus) * 1000:6.1f} ms;"
                f" dataclasses made {made}; loads {loaded}"
            )
        ratio = median(sides["this tree"][1]) / median(sides["before"][1])
        cpu_ratio = median(sides["this tree"][2]) / median(sides["before"][2])
        print(f"ratio this tree / before: import time {ratio:.3f}, process CPU {cpu_ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
