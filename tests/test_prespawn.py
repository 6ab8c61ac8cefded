"""Starting the provider CLI early from the previous launch's plan, and refusing a plan that no longer holds."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.launch.early import early_plans, prespawn
from agentlaunch.launch.transport import Child
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for


def test_the_early_start_looks_where_paths_keeps_the_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No rule of its own (it looked in ~/.local/state on macOS too): the platform's state dir, as paths says."""
    import platformdirs

    monkeypatch.delenv("AGENTLAUNCH_STATE_DIR")
    monkeypatch.setattr(platformdirs, "user_state_dir", lambda app: str(tmp_path / "platform-state" / app))
    looked: list[Path] = []
    monkeypatch.setattr(prespawn, "read_regular", lambda path, limit: looked.append(path.parent.parent) or b"{}")
    prespawn.start(["run", "demo", "hi"])
    assert looked == [paths.state_dir()] == [tmp_path / "platform-state" / "agentlaunch"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return status != "Z"


def test_adopt_takes_an_exact_match_and_kills_anything_else(tmp_path: Path) -> None:
    def started() -> prespawn.Prespawned:
        child = Child(["sleep", "60"], dict(os.environ), tmp_path)
        return prespawn.Prespawned(child, "sid", ["sleep", "60"], {"A": "1"}, "d1")

    exact = started()
    assert prespawn.adopt(exact, ["sleep", "60"], {"A": "1"}, "d1") is exact.child and exact.adopted
    prespawn.discard(exact)  # adopted: discard leaves it alone
    assert _alive(exact.child.pid)
    exact.child.stop(grace=0.1)

    for argv, env, digest in (
        (["sleep", "61"], {"A": "1"}, "d1"),
        (["sleep", "60"], {"A": "2"}, "d1"),
        (["sleep", "60"], {"A": "1"}, "d2"),
    ):
        other = started()
        assert prespawn.adopt(other, argv, env, digest) is None
        wait_for(lambda pid=other.child.pid: not _alive(pid), timeout=10, what="a plan that does not match to be killed")


def test_second_launch_reuses_the_plan_and_a_stale_plan_is_harmless(agents_dir: Path, isolated_home: Path) -> None:
    first = run_cli("run", "demo", "one", "--agents-dir", str(agents_dir))
    assert first.returncode == 0, first.stderr
    (plan_file,) = (isolated_home / "state" / early_plans.CACHE_DIR).glob("*.json")
    plan = json.loads(plan_file.read_text())
    assert prespawn.SESSION in plan["argv"] and plan["plan_env"] == {"AGENTLAUNCH_FAKE_CONTEXT_WINDOW": "60000"}

    second = run_cli("run", "demo", "two", "--agents-dir", str(agents_dir))
    assert second.returncode == 0 and b'You said: "two"' in second.stdout and b"Startup message received" in second.stdout

    plan["argv"].append("--model-of-another-day")  # the plan no longer matches what the launch computes
    plan_file.write_text(json.dumps(plan))
    third = run_cli("run", "demo", "three", "--agents-dir", str(agents_dir))
    assert third.returncode == 0 and b'You said: "three"' in third.stdout
    assert "--model-of-another-day" not in plan_file.read_text(), "the launch writes its own plan back"
    sessions = json.loads(run_cli_inprocess("sessions", "--json").stdout)
    assert len({s["session_id"] for s in sessions}) == 3 and all(s["turns"] == 1 for s in sessions)


def test_the_agents_env_is_read_again_unless_agent_yaml_is_unchanged_and_had_none(tmp_path: Path) -> None:
    agent_yaml = tmp_path / "agent.yaml"
    agent_yaml.write_text("provider: claude\n")
    plan = {"agent_yaml_digest": hashlib.sha256(agent_yaml.read_bytes()).hexdigest(), "agent_env": False}
    assert early_plans.env_of(agent_yaml, plan) == {}
    # A secret added since the plan: the file is parsed, the child gets it.
    agent_yaml.write_text("provider: claude\nenv:\n  API_KEY: fresh\n")
    assert early_plans.env_of(agent_yaml, plan) == {"API_KEY": "fresh"}
    # Unchanged, but it had an env: parsed every time (never kept in the plan).
    plan = {"agent_yaml_digest": hashlib.sha256(agent_yaml.read_bytes()).hexdigest(), "agent_env": True}
    assert early_plans.env_of(agent_yaml, plan) == {"API_KEY": "fresh"}
    # An older plan without these keys: parsed too. Unreadable or broken: no early start.
    assert early_plans.env_of(agent_yaml, {}) == {"API_KEY": "fresh"}
    agent_yaml.write_bytes(b"env: [\n")
    assert early_plans.env_of(agent_yaml, {}) is None
    assert early_plans.env_of(tmp_path / "missing.yaml", {}) is None


def test_the_plan_records_no_secret(agents_dir: Path, isolated_home: Path) -> None:
    write_agent(agents_dir, "secretive", {"provider": "fake", "env": {"API_KEY": "sk-do-not-store"}, "working_dir": "@scratch"})
    assert run_cli("run", "secretive", "one", "--agents-dir", str(agents_dir)).returncode == 0
    (plan_file,) = (isolated_home / "state" / early_plans.CACHE_DIR).glob("*.json")
    plan = json.loads(plan_file.read_text())
    assert "sk-do-not-store" not in plan_file.read_text() and plan["agent_env"] is True
    assert run_cli("run", "secretive", "two", "--agents-dir", str(agents_dir)).returncode == 0


@pytest.mark.parametrize(("args", "imported"), [(["status", "--json"], False), (["run", "--help"], True)])
def test_only_run_imports_the_early_start(args: list[str], imported: bool, isolated_home: Path) -> None:
    """`status`, `sessions` and the rest answer without the early start's code (imported for `run` only)."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('EARLY %s\\n' % ('agentlaunch.launch.early.prespawn' in sys.modules)))\n"
        f"sys.argv = ['agentlaunch', *{args!r}]\n"
        "from agentlaunch.entry import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"EARLY {imported}" in done.stderr
