"""`tmux up` starts a team a few at a time: the throttle, in process, on a fake clock with fake panes and records.

Each fake agent follows a script from the moment its pane is made: its record appears saying ``starting``,
then its CLI reports that it is up (``waiting``), or it goes ``asking``, or its pane dies, or it never says
anything. The bad throttle values go through the real command line (`tmux up`) and the real config.yaml.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.definitions.settings import BadThrottle, load_settings
from agentlaunch.errors import ExitCode
from agentlaunch.live.startup_wait import POLL, AgentStart
from agentlaunch.live.team_start import Pending, start_team
from tests.support.cli_runs import run_cli, run_cli_inprocess


@dataclass
class Script:
    """What a fake agent does, in seconds after its pane is made: ``None`` never."""

    record: float | None = 0.3  # its status record appears (saying starting)
    up: float | None = 2.0  # its CLI reports that it is up: waiting
    asking: float | None = None  # still starting then: asking (the launch's ready_timeout)
    dies: float | None = None  # its pane dies (agentlaunch ended with an error)


@dataclass
class FakeTeam:
    """Panes, records and a clock for :func:`start_team`; it counts how many agents were starting at each look."""

    scripts: dict[str, Script]
    t: float = 0.0
    made: dict[str, float] = field(default_factory=dict)  # agent -> when its pane was made
    most_starting: int = 0

    def clock(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds

    def pending(self) -> list[Pending]:
        return [Pending(agent, self.launcher(agent)) for agent in self.scripts]

    def launcher(self, agent: str) -> Callable[[], str]:
        def launch() -> str:
            self.made[agent] = self.t
            return self.pane(agent)

        return launch

    def pane(self, agent: str) -> str:
        return f"%{list(self.scripts).index(agent)}"

    def pid(self, agent: str) -> int:
        return 10_000 + list(self.scripts).index(agent)

    def age(self, agent: str) -> float:
        return self.t - self.made[agent]

    def happened(self, agent: str, when: float | None) -> bool:
        return when is not None and self.age(agent) >= when

    def state(self, agent: str) -> str | None:
        script = self.scripts[agent]
        if not self.happened(agent, script.record):
            return None
        if self.happened(agent, script.up):
            return "waiting"
        return "asking" if self.happened(agent, script.asking) else "starting"

    # PaneSource
    def panes(self) -> dict[str, tuple[int, bool, str]]:
        return {self.pane(a): (self.pid(a), self.happened(a, self.scripts[a].dies), "1") for a in self.made}

    def screen(self, pane_id: str) -> str:
        return "error: the provider CLI exited (code 3)\n"

    # the records
    def records(self) -> dict[object, dict[str, Any]]:
        alive = [a for a in self.made if not self.happened(a, self.scripts[a].dies)]
        starting = [a for a in alive if self.state(a) in (None, "starting")]
        self.most_starting = max(self.most_starting, len(starting))
        return {self.pid(a): {"pid": self.pid(a), "state": self.state(a), "turns": 0} for a in alive if self.state(a)}


def run(team: FakeTeam, max_starting: int, timeout: float = 30.0) -> tuple[list[AgentStart], list[str]]:
    said: list[str] = []
    outcomes = start_team(
        team,
        team.pending(),
        max_starting=max_starting,
        timeout=timeout,
        say=said.append,
        records=team.records,
        settle=1.0,
        clock=team.clock,
        sleep=team.sleep,
    )
    return outcomes, said


def test_at_most_n_start_at_once_and_each_next_one_starts_when_one_is_up() -> None:
    ups = [2.0, 5.0, 3.0, 1.0, 4.0, 2.5, 1.5]
    team = FakeTeam({f"a{i}": Script(up=u) for i, u in enumerate(ups)})
    outcomes, said = run(team, max_starting=3)
    assert [o.started for o in outcomes] == [True] * 7 and {o.state for o in outcomes} == {"waiting"}
    assert team.most_starting == 3  # the throttle was reached, never passed
    assert [team.made[a] for a in ("a0", "a1", "a2")] == [0.0, 0.0, 0.0]
    # a0 was the first up (at 2.0 s): a3 started then, not before; a2 was next (3.0 s): a4 then.
    assert team.made["a3"] == pytest.approx(2.0, abs=POLL * 1.5)
    assert team.made["a4"] == pytest.approx(3.0, abs=POLL * 1.5)
    assert all(team.made[f"a{i}"] > 0 for i in range(3, 7))
    assert said[0] == "started 3 of 7, 3 starting… (at most 3 at a time)"
    assert said[1].startswith("a0 is up (waiting) after 2.0s: its place goes to the next")
    assert said[2] == "started 4 of 7, 3 starting…"
    assert "started 7 of 7, 3 starting…" in said
    assert said[-1].startswith("a") and "its place goes to the next" not in said[-1]  # nobody left to start
    assert sum("is up (waiting)" in line for line in said) == 7


def test_an_agent_asking_while_starting_frees_its_place_and_says_so() -> None:
    team = FakeTeam({"shy": Script(up=None, asking=20.0), "b": Script(up=2.0), "c": Script(up=2.0)})
    outcomes, said = run(team, max_starting=1)
    by_agent = {o.agent: o for o in outcomes}
    assert by_agent["shy"] == AgentStart("shy", "%0", True, "started", "asking")  # up: on its own screen, for the person
    assert by_agent["b"].started and by_agent["c"].started
    assert team.made["b"] == pytest.approx(20.0, abs=POLL * 1.5)  # b waited for shy's place, no longer
    assert "shy is asking after 20.0s: its CLI waits on its own screen (look at its pane): its place goes to the next" in said
    assert team.most_starting == 1


def test_an_agent_dying_while_starting_frees_its_place_and_the_rest_of_the_team_starts() -> None:
    team = FakeTeam({"broken": Script(up=None, dies=1.0), "b": Script(up=2.0), "c": Script(up=2.0), "d": Script(up=1.0)})
    outcomes, said = run(team, max_starting=2)
    by_agent = {o.agent: o for o in outcomes}
    assert not by_agent["broken"].started and by_agent["broken"].detail.startswith("failed (exit 1): error: the provider")
    assert all(by_agent[a].started for a in "bcd")
    assert any(line.startswith("broken failed while starting, after 1.") for line in said)
    assert team.made["c"] == pytest.approx(1.0, abs=POLL * 1.5)  # broken's place, as soon as its pane died
    assert team.most_starting == 2


def test_an_agent_that_never_says_it_started_holds_its_place_only_for_the_wait() -> None:
    team = FakeTeam({"mute": Script(record=None, up=None), "b": Script(up=1.0)})
    outcomes, said = run(team, max_starting=1, timeout=8.0)
    assert outcomes[0] == AgentStart("mute", "%0", False, outcomes[0].detail)
    assert outcomes[0].detail.startswith("not started after 8s")
    assert team.made["b"] == pytest.approx(8.0, abs=POLL * 1.5) and outcomes[1].started
    assert said[1].startswith("mute still starting after 8.")
    assert said[1].endswith(": counted as failed: its place goes to the next")


def test_a_team_that_fits_the_throttle_starts_at_once_and_says_nothing_more() -> None:
    team = FakeTeam({"a": Script(up=1.0), "b": Script(up=3.0), "c": Script(up=2.0)})
    outcomes, said = run(team, max_starting=3)
    assert set(team.made.values()) == {0.0} and all(o.started for o in outcomes)
    assert said == []


def test_a_team_is_reported_in_the_order_it_was_named_whatever_order_it_came_up_in() -> None:
    team = FakeTeam({"slow": Script(up=6.0), "fast": Script(up=0.5), "mid": Script(up=2.0)})
    outcomes, _ = run(team, max_starting=1)
    assert [o.agent for o in outcomes] == ["slow", "fast", "mid"]
    assert team.made["fast"] > team.made["slow"]


# -- bad throttles: the flag and config.yaml, exit 2 -------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "-5", "three", "2.5", ""])
def test_a_bad_max_starting_flag_is_a_usage_error_and_nothing_starts(value: str, agents_dir: Path, workdir: Path) -> None:
    socket = f"al-thr-none-{os.getpid()}"
    result = run_cli_inprocess(
        "tmux",
        "up",
        "demo",
        "--socket",
        socket,
        "--no-attach",
        "--agents-dir",
        str(agents_dir),
        f"--max-starting={value}",
        cwd=workdir,
    )
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert "--max-starting" in err and "a whole number of agents started at a time, 1 or more" in err
    assert f"(got {value!r})" in err
    assert "Traceback" not in err


def test_a_negative_max_starting_flag_given_apart_is_read_as_its_value(agents_dir: Path, workdir: Path) -> None:
    result = run_cli(
        "tmux",
        "up",
        "demo",
        "--no-attach",
        "--agents-dir",
        str(agents_dir),
        "--max-starting",
        "-1",
        cwd=workdir,
        env={"AGENTLAUNCH_TMUX_SOCKET": f"al-thr-none-{os.getpid()}"},
    )
    assert result.returncode == 2 and b"1 or more (got '-1')" in result.stderr and b"Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["0", "-2", "three", "2.5", "true", "'3'"])
def test_a_bad_max_starting_in_config_yaml_is_exit_2_naming_the_file_and_key(
    value: str, isolated_home: Path, agents_dir: Path, workdir: Path
) -> None:
    config = isolated_home / "config"
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text(f"max_starting: {value}\n")
    with pytest.raises(BadThrottle) as caught:
        load_settings()
    assert caught.value.exit_code == ExitCode.USAGE
    result = run_cli_inprocess(
        "tmux",
        "up",
        "demo",
        "--socket",
        f"al-thr-none-{os.getpid()}",
        "--no-attach",
        "--agents-dir",
        str(agents_dir),
        cwd=workdir,
    )
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert f"{config / 'config.yaml'}: max_starting: expected a whole number of agents started at a time, 1 or more" in err
    assert "Traceback" not in err


def test_max_starting_in_config_yaml_is_read(isolated_home: Path) -> None:
    config = isolated_home / "config"
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text("max_starting: 5\n")
    assert load_settings().max_starting == 5
    (config / "config.yaml").write_text("ready_timeout: 20\n")
    assert load_settings().max_starting is None  # the default (3) is the command's
