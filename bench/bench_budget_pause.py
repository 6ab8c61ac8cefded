"""What a budget's pause costs while it waits: one look at agent.yaml and config.yaml, against reading them again.

Run: ``python bench/bench_budget_pause.py [--pairs 2000]``

A paused launch looks at its two budget files once every ``WATCH_EVERY`` seconds on its own loop
(:func:`agentlaunch.launch.budget_pause.stamp_of`: two ``stat`` calls) and reads the limits again only when a
file changed (``load_agent`` + ``load_settings`` + the store's sums, :meth:`BudgetPause.raised`). This times
both side by side in alternating pairs (a look, then a re-read, then a look...) on the example agent with a
budget, and prints the medians, their ratio, and the share of one core the watch takes at one look a second.
Figures only: no assertion.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentlaunch.definitions.settings import load_settings, settings_path  # noqa: E402
from agentlaunch.definitions.spec import load_agent  # noqa: E402
from agentlaunch.launch.budget_pause import WATCH_EVERY, stamp_of  # noqa: E402
from agentlaunch.usage.budget import limits_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="al-bench-pause-") as folder:
        root = Path(folder)
        os.environ["AGENTLAUNCH_CONFIG_DIR"] = str(root / "config")
        os.environ["AGENTLAUNCH_STATE_DIR"] = str(root / "state")
        (root / "config").mkdir()
        (root / "config" / "config.yaml").write_text("budget: {daily_usd: 40, on_spent: pause}\n")
        agents = root / "agents"
        shutil.copytree(REPO / "agents", agents)
        yaml_path = agents / "demo" / "agent.yaml"
        yaml_path.write_text(yaml_path.read_text() + "budget: {session_usd: 2.5, on_spent: pause}\n")
        files = (yaml_path, settings_path())
        state = root / "state"

        def look() -> None:
            stamp_of(files)

        def reread() -> None:
            spec = load_agent(agents, "demo", state)
            limits_for(spec.budget, load_settings().budget, None)

        reread()  # the first read fills the validation memo, as a launch's own start did
        looks: list[float] = []
        reads: list[float] = []
        for _ in range(args.pairs):
            for sink, job in ((looks, look), (reads, reread)):
                started = time.perf_counter()
                job()
                sink.append(time.perf_counter() - started)
    look_us, read_us = statistics.median(looks) * 1e6, statistics.median(reads) * 1e6
    print(f"pairs: {args.pairs} (a look, then a re-read, alternating)")
    print(f"one look (2 x stat): median {look_us:.1f} us, p90 {statistics.quantiles(looks, n=10)[-1] * 1e6:.1f} us")
    print(
        f"one re-read (agent.yaml + config.yaml, limits): median {read_us:.1f} us, "
        f"p90 {statistics.quantiles(reads, n=10)[-1] * 1e6:.1f} us"
    )
    print(f"re-read / look: {read_us / look_us:.0f}x")
    print(f"the watch at one look every {WATCH_EVERY:g} s: {look_us / (WATCH_EVERY * 1e6) * 100:.4f} % of one core")
    print("(the store's sums, read with a re-read only when a file changed, are not in these figures)")


if __name__ == "__main__":
    main()
