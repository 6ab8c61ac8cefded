"""With no agents directory anywhere, the example agents shipped with the package stand in, and say so on stderr."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agentlaunch import paths
from tests.conftest import EXAMPLE_AGENTS
from tests.support.cli_runs import run_cli, run_cli_inprocess


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current directory without ./agents (HOME and the config dir are the test's own, without agents either)."""
    path = tmp_path / "nowhere"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


# -- where the agents directory is found -------------------------------------------------------------


def test_the_bundled_examples_are_the_last_resort(nowhere: Path) -> None:
    found, bundled = paths.find_agents_dir()
    assert bundled and found == paths.bundled_agents_dir()
    assert (found / "demo" / "agent.yaml").is_file()
    assert paths.agents_dir() == found


def test_the_bundled_examples_are_the_package_data(nowhere: Path) -> None:
    # A source checkout: the top-level agents/ folder (a wheel has it as agentlaunch/_data/agents).
    assert paths.bundled_agents_dir().resolve() == EXAMPLE_AGENTS.resolve()


def test_the_config_agents_dir_comes_before_the_bundled_ones(nowhere: Path) -> None:
    mine = paths.user_agents_dir()
    mine.mkdir(parents=True)
    assert paths.find_agents_dir() == (mine, False)


def test_a_local_agents_dir_comes_first(nowhere: Path) -> None:
    paths.user_agents_dir().mkdir(parents=True)
    (nowhere / "agents").mkdir()
    assert paths.find_agents_dir() == (nowhere / "agents", False)


def test_a_named_directory_is_never_replaced_by_the_examples(
    nowhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    typo = tmp_path / "typo"
    assert paths.find_agents_dir(typo) == (typo, False)
    monkeypatch.setenv("AGENTLAUNCH_AGENTS_DIR", str(typo))
    assert paths.find_agents_dir() == (typo, False)


def test_without_the_examples_the_config_dir_is_named(nowhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "bundled_agents_dir", lambda: tmp_path / "not-shipped")
    assert paths.find_agents_dir() == (paths.user_agents_dir(), False)


# -- end to end, in a directory far from any agents folder -------------------------------------------


def test_run_demo_from_anywhere_uses_the_bundled_demo(nowhere: Path) -> None:
    before = tree_digest(EXAMPLE_AGENTS)
    result = run_cli_inprocess("run", "demo", "hello", cwd=nowhere)
    assert result.returncode == 0, result.stderr
    answer = result.stdout.decode()
    assert answer.startswith("Fake provider here, turn 1.") and answer.endswith('You said: "hello"\n')
    assert answer.count("\n") == 1, "stdout carries the answer only"
    stderr = result.stderr.decode().splitlines()
    (notice,) = [line for line in stderr if "bundled examples" in line]
    assert notice.startswith("note: no agents directory (./agents or ~/") and "agentlaunch init" in notice
    assert str(paths.bundled_agents_dir()) in notice
    assert stderr[-1].startswith("tokens in "), "the footer still ends stderr"
    assert list(nowhere.iterdir()) == [], "the demo works in a scratch folder of its own"
    assert tree_digest(EXAMPLE_AGENTS) == before, "nothing is written into the example agents"


def test_json_stays_clean_with_the_bundled_demo(nowhere: Path) -> None:
    result = run_cli_inprocess("run", "demo", "hello", "--json", cwd=nowhere)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert events[0]["event"] == "session" and events[-1]["event"] == "turn_end"
    assert result.stderr.decode().count("\n") == 1 and b"bundled examples" in result.stderr


def test_list_names_the_bundled_agents_and_notes_it(nowhere: Path) -> None:
    result = run_cli_inprocess("list", "--json", cwd=nowhere)
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    assert listing["agents_dir"] == str(paths.bundled_agents_dir())
    assert {"demo", "planner", "reviewer"} <= {a["name"] for a in listing["agents"]}
    assert b"bundled examples" in result.stderr


def test_no_notice_when_an_agents_directory_exists(nowhere: Path, agents_dir: Path) -> None:
    named = run_cli_inprocess("run", "demo", "hello", "--agents-dir", str(agents_dir), cwd=nowhere)
    assert named.returncode == 0 and b"bundled examples" not in named.stderr
    local = run_cli_inprocess("run", "demo", "hello", cwd=agents_dir.parent)
    assert local.returncode == 0 and b"bundled examples" not in local.stderr


def test_a_missing_named_directory_is_still_an_error(nowhere: Path, tmp_path: Path) -> None:
    result = run_cli_inprocess("run", "demo", "hello", "--agents-dir", str(tmp_path / "typo"), cwd=nowhere)
    assert result.returncode == 3 and b"agents directory does not exist" in result.stderr
    assert b"bundled examples" not in result.stderr


def test_completion_prints_no_notice(nowhere: Path) -> None:
    result = run_cli(
        cwd=nowhere, env={"_AGENTLAUNCH_COMPLETE": "complete_bash", "COMP_WORDS": "agentlaunch run de", "COMP_CWORD": "2"}
    )
    assert result.returncode == 0
    assert b"demo" in result.stdout and b"bundled" not in result.stdout + result.stderr
