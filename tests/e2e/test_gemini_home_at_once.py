"""Launches of one Gemini agent at once, while its definition's skills change, all run (the real Gemini CLI, fake
API on 127.0.0.1): each prepares the agent's one home (issue 39: 3 of 64 such launches failed with
"StateError … .gemini/skills (Directory not empty)"). The 64-process run of the preparation alone is in
tests/test_home_claims.py; this smaller one goes through the CLI.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi import gemini as gfake
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

LAUNCHES = 6


@pytest.fixture
def gemini(isolated_home: Path, agents_dir: Path) -> Iterator[tuple[gfake.GeminiFake, dict[str, str]]]:
    with gfake.GeminiFake() as api:
        # Gemini 0.61.0's session cleanup at start (sessionRetention, on by default) deletes every session file it
        # cannot read as a session, also the one another Gemini in the same folder has just begun (strace: a Gemini
        # unlinked another launch's new file; 1 of 6 files gone in about half the runs, on main's per-agent tmp/ as
        # on the user's). Off here: this test is about preparing the home; docs/providers.md says what it means.
        retention = {"general": {"sessionRetention": {"enabled": False}}}
        env = gfake.prepare_gemini_home(isolated_home, api.base_url, max_attempts=1, no_relaunch=True, extra_settings=retention)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        yield api, env


def _define(agents_dir: Path, workdir: Path, skills: list[str]) -> None:
    config = {
        "provider": "gemini",
        "model": "gemini-2.5-pro",
        "command": str(ensure_cli("gemini")),
        "working_dir": str(workdir),
        "skills": skills,
        "startup": "",
    }
    write_agent(agents_dir, "gem", config)  # type: ignore[arg-type]


def test_launches_of_one_gemini_agent_at_once_while_its_skills_change_all_run(
    gemini: tuple[gfake.GeminiFake, dict[str, str]], agents_dir: Path, workdir: Path, isolated_home: Path
) -> None:
    api, env = gemini
    for name in ("one", "two"):
        folder = agents_dir / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name}\n---\n")
    api.script.push(*[gfake.TextReply(f"answer {i}") for i in range(LAUNCHES)])
    started = []
    for i in range(LAUNCHES):  # the definition alternates between skills and none while the launches run
        _define(agents_dir, workdir, [[], ["one"], ["one", "two"]][i % 3])
        started.append(
            subprocess.Popen(
                [sys.executable, "-m", "agentlaunch", "run", "gem", f"prompt {i}"],
                cwd=workdir,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    errors = [proc.communicate(timeout=240)[1].decode() for proc in started]
    results = [(proc.returncode, err) for proc, err in zip(started, errors, strict=True)]
    assert [code for code, _ in results] == [0] * LAUNCHES, [err for _, err in results]
    assert len(api.model_requests) == LAUNCHES
    sessions = list((isolated_home / ".gemini").glob("tmp/*/chats/session-*"))
    assert len(sessions) == LAUNCHES  # every one in the user's own folder
