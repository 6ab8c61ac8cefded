"""A daily cap shared by agents running at once: overspent by at most the calls in flight, then no agent starts."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from agentlaunch import paths
from agentlaunch.sinks import PricedCall
from agentlaunch.token_usage import Usage
from agentlaunch.usage.budget import BudgetGuard, Limits
from agentlaunch.usage.records import CallRecord
from agentlaunch.usage.store import Store
from tests.support.cli_runs import run_cli
from tests.support.waits import wait_for
from tests.test_budget import RATES, Clock, View

# The fake CLI whose first model call waits for the file $FLEET_GO once it has written $FLEET_DIR/started-<pid>:
# the test holds every agent's call in flight until all of them are, whatever the machine's load.
HELD = """#!{python}
import os, sys, time
from agentlaunch.providers import fake_cli

_call = fake_cli.FakeCLI.call


def call(self, *args, **kwargs):
    if self.state["calls"] == 0:
        open(os.path.join(os.environ["FLEET_DIR"], f"started-{{os.getpid()}}"), "w").close()
        while not os.path.exists(os.environ["FLEET_GO"]):
            time.sleep(0.01)
    return _call(self, *args, **kwargs)


fake_cli.FakeCLI.call = call
sys.exit(fake_cli.main())
"""


def fleet(agents_dir: Path, names: list[str]) -> None:
    """Agents ``names`` on the fake provider through the held CLI."""
    wrapper = agents_dir.parent / "held-fake"
    wrapper.write_text(HELD.format(python=sys.executable))
    wrapper.chmod(0o755)
    for name in names:
        (agents_dir / name).mkdir()
        (agents_dir / name / "agent.yaml").write_text(
            f"provider: fake\nmodel: fake-1\nworking_dir: '@scratch'\ncommand: {wrapper}\n"
        )


def stored() -> list[CallRecord]:
    with Store.open(paths.store_path()) as store:
        return [c for s in store.list_sessions() for c in store.calls_for_session(s.session_id)]


def test_agents_at_once_overspend_a_shared_cap_by_the_calls_in_flight_and_later_ones_are_refused(agents_dir: Path) -> None:
    (agents_dir / "pricing.yaml").write_text(RATES)
    names = ["f0", "f1", "f2", "late0", "late1"]
    fleet(agents_dir, names)
    held = agents_dir.parent / "held"
    held.mkdir()
    env = dict(os.environ, FLEET_DIR=str(held), FLEET_GO=str(held / "go"))
    probe = run_cli("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=agents_dir.parent)
    assert probe.returncode == 0, probe.stderr.decode()
    (first,) = stored()
    cost = first.cost_usd or 0.0
    assert cost > 0
    cap = cost * 2.5  # the probe's call, then the second of the three below crosses it
    config = Path(os.environ["AGENTLAUNCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.yaml").write_text(f"budget: {{daily_usd: {cap!r}}}\n")

    cmd = [sys.executable, "-m", "agentlaunch", "run"]
    running = [
        subprocess.Popen(
            [*cmd, name, "hello", "--agents-dir", str(agents_dir)],
            cwd=agents_dir.parent,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for name in names[:3]
    ]
    # All three pass their checks while nothing is spent beyond the probe: three calls in flight at once.
    wait_for(lambda: len(list(held.glob("started-*"))) == 3, 120, "three calls in flight")
    (held / "go").touch()
    codes = [p.wait(timeout=120) for p in running]
    errors = [p.stderr.read().decode() if p.stderr else "" for p in running]
    calls = stored()
    spent = sum(c.cost_usd or 0.0 for c in calls)
    in_flight = len(calls) - 1  # each of the three: let go before the crossing call was stored
    assert in_flight == 3, errors  # one call each: none started after the cap was crossed
    assert cap <= spent <= cap + in_flight * cost * 1.01, (spent, cap)  # (a call's cost varies with its agent's name)
    assert 6 in codes and set(codes) <= {0, 6}, errors
    with Store.open(paths.store_path()) as store:  # every reservation released once its call was stored
        assert store.in_flight("").calls == 0

    for name in names[3:]:  # started after the cap is spent: refused before any call
        late = subprocess.run(
            [*cmd, name, "hello", "--agents-dir", str(agents_dir)],
            cwd=agents_dir.parent,
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert late.returncode == 6, late.stderr.decode()
        assert "budget: not starting: today's budget for all agents" in late.stderr.decode()
    assert len(stored()) == 4


def test_a_check_counts_the_calls_other_agents_have_in_flight_but_not_those_of_a_dead_process(tmp_path: Path) -> None:
    now = datetime(2026, 12, 1, 12, 0).astimezone()
    with Store.open(tmp_path / "usage.sqlite3") as store:
        store.start_session("s-today", agent="demo", provider="fake", working_dir="/w", model="fake-1")
        limits = Limits(all_agents_daily_usd=3.0)
        one, two = BudgetGuard(limits, store, Clock(now), priceable=True), BudgetGuard(limits, store, Clock(now), priceable=True)
        a, b = View(), View()
        call = CallRecord(agent="demo", provider="fake", usage=Usage(input=1), session_id="s-today", cost_usd=2.0, at=now)
        one.check(a)  # a lets its first call go
        store.record_call(call)
        one.event(PricedCall(call), a)  # $2 of $3: a goes on
        one.check(a)  # and lets its next call go, expected to cost what the last one did
        assert a.stopped is None and store.in_flight("").calls == 1
        two.check(b)  # $2 spent and $2 in flight: b makes no call
        assert b.stopped is not None
        assert "is spent with the calls in flight: $2.00 so far and $2.00 in 1 call other agents are making" in b.stopped.message

        store.record_call(call)  # a's call stored: it counts as spent, no longer in flight
        one.event(PricedCall(call), a)
        assert store.in_flight("").calls == 0 and a.stopped is not None and "is spent: $4.00 so far" in a.stopped.message

    # A reservation whose process is gone (kill -9) counts for nothing, and the next check deletes it.
    with Store.open(tmp_path / "other.sqlite3") as store:
        gone = subprocess.Popen([sys.executable, "-c", ""])
        gone.wait()
        store._conn.execute(
            "INSERT INTO inflight (holder, pid, pid_start, agent, at, usd, tokens) VALUES ('dead', ?, NULL, 'x', 0, 100, 0)",
            (gone.pid,),
        )
        c = View()
        BudgetGuard(Limits(all_agents_daily_usd=3.0), store, Clock(now), priceable=True).check(c)
        assert c.stopped is None
        assert ("dead",) not in store._conn.execute("SELECT holder FROM inflight").fetchall()
