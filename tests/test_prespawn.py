"""Starting the provider CLI early from the previous launch's plan, and refusing a plan that no longer holds."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from agentlaunch import paths
from agentlaunch.cli import load_commands
from agentlaunch.launch import early_plans, prespawn
from agentlaunch.launch.transport import Child
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.waits import wait_for


def run_command() -> Any:
    """The click command of `agentlaunch run`, as the CLI builds it."""
    return typer.main.get_command(load_commands(["run"])).commands["run"]


def run_table() -> dict[str, Any]:
    """`run`'s option table, as the CLI hands it to the early start."""
    group = typer.main.get_command(load_commands(["run"]))
    return prespawn.option_table(run_command().params, group.context_settings["help_option_names"])


@pytest.mark.parametrize(
    ("args", "shape"),
    [
        (["run", "demo", "hi"], ("demo", None, None)),
        (["run", "demo", "-p", "hi", "--agents-dir", "/a", "--json"], ("demo", "/a", None)),
        (["run", "--working-dir=/w", "demo", "-"], ("demo", None, "/w")),
        (["run", "demo"], None),  # the chat: not a headless turn
        (["run", "demo", "-c", "hi"], None),  # resumes: the session id is not new
        (["run", "demo", "-r", "x", "hi"], None),
        (["run", "demo", "--resume=x", "hi"], None),
        (["run", "demo", "--something-new", "hi"], None),  # unknown option: leave it to the full launch
        (["list"], None),
        ([], None),
    ],
)
def test_only_headless_new_sessions_are_started_early(args: list[str], shape: tuple[str, str | None, str | None] | None) -> None:
    assert prespawn.headless_new_session(args, run_table()) == shape


def test_every_parameter_of_run_has_a_meaning_for_the_early_start() -> None:
    """Fails when `run` gains a parameter: say in prespawn whether it shapes the plan, resumes, or does neither."""
    groups = (prespawn.PLAN_PLACE, prespawn.NOT_NEW, prespawn.PROMPT, prespawn.INERT)
    names = [p.name for p in run_command().params] + ["help"]
    for name in names:
        assert sum(name in group for group in groups) == 1, f"run's parameter {name!r} is unknown to launch/prespawn.py"
    assert sorted(prespawn.KNOWN_PARAMS) == sorted(names), "prespawn names a parameter `run` no longer has"


def test_the_option_table_follows_the_click_definition() -> None:
    table = run_table()
    assert table["arguments"] == ["agent", "prompt"]
    assert table["options"]["--timeout"] == ["timeout", 1] and table["options"]["-q"] == ["quiet", 0]
    assert table["options"]["-h"] == ["help", 0] and table["options"]["--resume"] == ["resume", 1]
    # An option the table has but the early start does not know (a newer agentlaunch's): the full launch decides.
    newer = {**table, "options": {**table["options"], "--model": ["model", 1]}}
    assert prespawn.headless_new_session(["run", "demo", "--model", "x", "hi"], newer) is None
    # No table (nothing was ever remembered): nothing to start early.
    assert prespawn.headless_new_session(["run", "demo", "hi"], None) is None


def test_a_launch_keeps_runs_option_table_for_the_next_early_start(agents_dir: Path, isolated_home: Path) -> None:
    state = isolated_home / "state"
    assert prespawn.read_run_options(state) is None
    assert run_cli("run", "demo", "one", "--agents-dir", str(agents_dir)).returncode == 0
    kept = prespawn.read_run_options(state)
    assert kept == json.loads(json.dumps(run_table()))
    assert prespawn.headless_new_session(["run", "demo", "two", "--agents-dir", "/a"], kept) == ("demo", "/a", None)
    # A table another version of agentlaunch wrote is not trusted.
    (state / early_plans.RUN_OPTIONS).write_text(json.dumps({**run_table(), "version": "0.0.0-other"}))
    assert prespawn.read_run_options(state) is None


def test_the_early_start_looks_where_paths_keeps_the_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No rule of its own (it looked in ~/.local/state on macOS too): the platform's state dir, as paths says."""
    import platformdirs

    monkeypatch.delenv("AGENTLAUNCH_STATE_DIR")
    monkeypatch.setattr(platformdirs, "user_state_dir", lambda app: str(tmp_path / "platform-state" / app))
    looked: list[Path] = []
    monkeypatch.setattr(prespawn, "read_run_options", lambda state_dir: looked.append(state_dir))
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
        "atexit.register(lambda: sys.stderr.write('EARLY %s\\n' % ('agentlaunch.launch.prespawn' in sys.modules)))\n"
        f"sys.argv = ['agentlaunch', *{args!r}]\n"
        "from agentlaunch.entry import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"EARLY {imported}" in done.stderr
