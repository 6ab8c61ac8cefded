"""A headless Codex launch starts its first turn from the last plan before agentlaunch's imports
(launch/early/early_turn); a Gemini launch never does (its early start was removed in issue 40).

Real Codex CLI (prompt in argv) against its fake API: the early-started turn is adopted, answers and is metered
as a cold one; a plan that no longer holds is never used (the CLI it started is killed before its stdin ends: no
call); an agentlaunch killed before it adopted the CLI leaves no call behind. Real Gemini CLI: no plan is kept
and nothing starts early, so a changed definition can never meet a session id an early Gemini already took.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.server import Recorded
from agentlaunch.launch.early import early_plans, early_turn
from agentlaunch.usage.store import Store
from tests.e2e import test_run_codex_gemini as codex_gemini
from tests.e2e.test_run_codex_gemini import SOUL_LINE, Provider
from tests.support.waits import wait_for

provider = codex_gemini.provider  # the fixture of that module

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
CODEX = pytest.mark.parametrize("provider", ["codex"], indirect=True)
OTHER_MODEL = {"codex": "gpt-5.5-mini", "gemini": "gemini-2.5-flash"}

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# agentlaunch's entry point, reporting on stderr what each adoption of an early-started CLI decided.
REPORTING = """
import atexit, sys
from agentlaunch.launch.early import prespawn
real_adopt, seen = prespawn.adopt, []
def adopt(pending, *args):
    child = real_adopt(pending, *args)
    if pending is not None:
        seen.append(child is not None)
    return child
prespawn.adopt = adopt
atexit.register(lambda: sys.stderr.write(f"ADOPTED {seen}\\n"))
from agentlaunch.entry import main
main()
"""


def run_reporting(p: Provider, *args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[bytes], list[bool]]:
    env = {**os.environ, **p.env}
    done = subprocess.run([sys.executable, "-c", REPORTING, *args], cwd=cwd, env=env, capture_output=True, timeout=240)
    line = [ln for ln in done.stderr.decode().splitlines() if ln.startswith("ADOPTED ")]
    assert len(line) == 1, done.stderr.decode()
    return done, json.loads(line[0].removeprefix("ADOPTED ").lower())


def plans(home: Path) -> list[dict[str, object]]:
    return [json.loads(f.read_text()) for f in sorted((home / "state" / early_plans.CACHE_DIR).glob("*.json"))]


def instructions(p: Provider, req: Recorded) -> list[str]:
    """The agent's instructions as the CLI sent them: Codex's developer message, Gemini's system instruction."""
    if p.name == "codex":
        return cfake.message_texts(req.body, "developer")
    return gfake.instruction_texts(req.body)


def model(p: Provider, req: Recorded) -> str | None:
    return str(req.body["model"]) if p.name == "codex" else gfake.model_of(req)


def calls_of(home: Path, session_id: str) -> list[dict[str, int]]:
    with Store.open(home / "state" / "usage.sqlite3") as store:
        return [c.usage.as_dict() for c in store.calls_for_session(session_id)]


@CODEX
def test_the_early_started_first_turn_is_adopted_metered_and_answers_as_a_cold_one(
    provider: Provider, workdir: Path, isolated_home: Path
) -> None:
    p = provider
    p.push_text("answer one")
    p.push_text("answer two")
    cold, seen = run_reporting(p, "run", "planner", "--json", "first question", cwd=workdir)
    assert cold.returncode == 0 and seen == [], cold.stderr.decode()  # nothing to start from yet
    (plan,) = plans(isolated_home)
    at, argv = plan["prompt_at"], plan["argv"]
    assert isinstance(argv, list) and "first question" not in json.dumps(plan)
    assert isinstance(at, int) and argv[at] == ""  # the prompt's element of argv, left empty
    head = str(plan["prompt_head"])  # the startup message, its time and session id as stand-ins
    assert early_turn.NOW in head and f"Session: {early_turn.SESSION}" in head and "<agentlaunch-startup>" in head

    early, seen = run_reporting(p, "run", "planner", "--json", "second question", cwd=workdir)
    assert early.returncode == 0 and seen == [True], early.stderr.decode()
    first, second = p.calls()  # one call each: the early turn was sent once
    texts = [[UUID.sub("SESSION-ID", t) for t in p.user_texts(req.body)] for req in (first, second)]
    assert texts[1] == [t.replace("first question", "second question") for t in texts[0]]
    assert "second question" in texts[1][-1] and "<agentlaunch-startup>" in "\n".join(texts[1])
    assert first.body.get("instructions") == second.body.get("instructions")
    assert instructions(p, first) == instructions(p, second) and SOUL_LINE in "\n".join(instructions(p, second))
    answers = [[json.loads(ln) for ln in r.stdout.decode().splitlines()] for r in (cold, early)]
    for events, expected in zip(answers, ("answer one", "answer two"), strict=True):
        assert "".join(e["text"] for e in events if e["event"] in ("text", "text_delta")) == expected  # Gemini streams
        assert [e["usage"] for e in events if e["event"] == "usage"] == [p.per_call]
    sessions = json.loads(p.run("sessions", "--json", cwd=workdir).stdout)
    assert len(sessions) == 2 and all(s["turns"] == 1 for s in sessions)
    for s in sessions:
        assert calls_of(isolated_home, s["session_id"]) == [p.per_call]


@CODEX
def test_a_changed_definition_never_uses_the_stale_plan(provider: Provider, workdir: Path, agents_dir: Path) -> None:
    p = provider
    for i in range(3):
        p.push_text(f"answer {i}")
    assert p.run("run", "planner", "one", cwd=workdir).returncode == 0
    agent_yaml = agents_dir / "planner" / "agent.yaml"
    definition = yaml.safe_load(agent_yaml.read_text())

    definition["model"] = OTHER_MODEL[p.name]  # the argv changes: started from the plan, then refused unseen
    agent_yaml.write_text(yaml.safe_dump(definition))
    stale, seen = run_reporting(p, "run", "planner", "two", cwd=workdir)
    assert stale.returncode == 0 and stale.stdout.decode().strip() == "answer 1", stale.stderr.decode()
    assert seen == [False]
    assert len(p.calls()) == 2 and model(p, p.calls()[1]) == OTHER_MODEL[p.name]  # the refused one sent nothing

    (agents_dir / "planner" / "soul.md").write_text("You are Planner, changed today.\n")  # other instructions
    changed, seen = run_reporting(p, "run", "planner", "three", cwd=workdir)
    assert changed.returncode == 0 and changed.stdout.decode().strip() == "answer 2", changed.stderr.decode()
    assert len(p.calls()) == 3 and "changed today" in "\n".join(instructions(p, p.calls()[2]))


# Gemini as shipped: a parent node that relaunches itself in a child, both in the PTY's session.
@CODEX
def test_an_agentlaunch_killed_before_adopting_the_early_turn_leaves_no_call(
    provider: Provider, workdir: Path, isolated_home: Path
) -> None:
    p = provider
    p.push_text("answer one")
    p.push_text("never asked for")
    assert p.run("run", "planner", "one", cwd=workdir).returncode == 0
    dies = (
        "import os, signal, sys\n"
        "from agentlaunch.launch.early import prespawn\n"
        "prespawn.start(sys.argv[1:])\n"
        "pending = prespawn.take()\n"
        "print(pending.child.pid if pending is not None else 0, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, **p.env}
    done = subprocess.run(
        [sys.executable, "-c", dies, "run", "planner", "two"], cwd=workdir, env=env, capture_output=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    group = int(done.stdout.decode().strip())
    assert group > 0, "the plan of the first launch started the second one's turn early"

    def in_group() -> list[int]:
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                pids.append(int(stat.parent.name))
        return pids

    wait_for(lambda: not in_group(), timeout=60, what="the orphaned early CLI (node launcher and binary) to end")
    assert len(p.calls()) == 1, "the CLI of a launch that died before adopting it sent its turn"


@pytest.mark.parametrize("provider", ["gemini"], indirect=True)
def test_gemini_keeps_no_plan_starts_nothing_early_and_a_changed_model_is_used(
    provider: Provider, workdir: Path, agents_dir: Path, isolated_home: Path
) -> None:
    """What failed under load while Gemini's first turn started early: the plan's Gemini, killed because the
    model changed, had already made its session file, and the launch's own Gemini refused that session id."""
    p = provider
    for i in range(2):
        p.push_text(f"answer {i}")
    first, seen = run_reporting(p, "run", "planner", "one", cwd=workdir)
    assert first.returncode == 0 and seen == [], first.stderr.decode()
    assert plans(isolated_home) == []  # nothing to start the next launch from
    # The next launch, its model changed (what failed once), starts no CLI before it chose one and uses the new model.
    # (A next launch with the definition unchanged was a launch of its own; it shows nothing more: no plan is kept.)
    agent_yaml = agents_dir / "planner" / "agent.yaml"
    definition = yaml.safe_load(agent_yaml.read_text())
    definition["model"] = OTHER_MODEL[p.name]
    agent_yaml.write_text(yaml.safe_dump(definition))
    changed, seen = run_reporting(p, "run", "planner", "two", cwd=workdir)
    assert changed.returncode == 0 and changed.stdout.decode().strip() == "answer 1", changed.stderr.decode()
    assert seen == [] and len(p.calls()) == 2 and model(p, p.calls()[1]) == OTHER_MODEL[p.name]
    assert plans(isolated_home) == []
