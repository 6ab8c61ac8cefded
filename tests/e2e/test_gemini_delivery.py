"""Gemini's default `delivery: gemini-home` end to end on the real Gemini CLI (fake Gemini API on 127.0.0.1).

Each agent runs with ``GEMINI_CLI_HOME`` at its own home in the state directory,
whose global GEMINI.md carries the agent's text (so it lands in the system
instruction) and whose settings, auth and the rest are links to the user's
``~/.gemini``. Nothing is written into the working directory, so agents share a
repository and the repository's own GEMINI.md keeps arriving as Gemini reads it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi.server import Recorded
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.git_repo import git, make_repo, run_at_once

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO_OWN = "REPO-OWN: the team's committed GEMINI.md"
USER_OWN = "USER-OWN: the user's global GEMINI.md"
EXCLUDED_TOOL = "google_web_search"  # the user's settings.json takes it away; the request shows it


@pytest.fixture
def gemini(isolated_home: Path, agents_dir: Path) -> Iterator[tuple[gfake.GeminiFake, dict[str, str]]]:
    with gfake.GeminiFake() as api:
        env = gfake.prepare_gemini_home(
            isolated_home, api.base_url, max_attempts=1, extra_settings={"tools": {"exclude": [EXCLUDED_TOOL]}}, no_relaunch=True
        )  # no_relaunch: one node process, the tree is not what these tests check (docs/development.md)
        (isolated_home / ".gemini" / "GEMINI.md").write_text(USER_OWN + "\n")
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        yield api, env


def _agent(agents_dir: Path, name: str, workdir: Path, soul: str) -> None:
    write_agent(
        agents_dir,
        name,
        {"provider": "gemini", "model": "gemini-2.5-pro", "command": str(ensure_cli("gemini")), "working_dir": str(workdir)},
        {"soul.md": soul},
    )


def _system(req: Recorded) -> str:
    return "\n".join(gfake.instruction_texts(req.body))


def _tools(req: Recorded) -> set[str]:
    names = set()
    for tool in req.body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            names.add(decl.get("name"))
    return names


def test_two_agents_at_once_in_one_repository_each_get_only_their_own_instructions(
    gemini: tuple[gfake.GeminiFake, dict[str, str]], agents_dir: Path, tmp_path: Path, isolated_home: Path
) -> None:
    api, env = gemini
    repo = make_repo(tmp_path / "shared-repo", {"GEMINI.md": REPO_OWN + "\n"})
    _agent(agents_dir, "alpha", repo, "ALPHA-SOUL: you are Alpha.\n")
    _agent(agents_dir, "beta", repo, "BETA-SOUL: you are Beta.\n")
    api.script.push(gfake.TextReply("one"), gfake.TextReply("two"))
    for code, out, err in run_at_once(["alpha", "beta"], "hello", repo, env):
        assert code == 0, err
        assert out.strip() in ("one", "two")
    requests = api.model_requests
    assert len(requests) == 2
    by_agent = {("alpha" if "ALPHA-SOUL" in _system(r) else "beta"): r for r in requests}
    assert set(by_agent) == {"alpha", "beta"}
    for mine, other in (("alpha", "BETA-SOUL"), ("beta", "ALPHA-SOUL")):
        req = by_agent[mine]
        system = _system(req)
        assert other not in req.raw.decode()
        assert system.count(f"{mine.upper()}-SOUL") == 1
        assert USER_OWN in system and system.index(USER_OWN) < system.index(f"{mine.upper()}-SOUL")
        assert REPO_OWN in req.raw.decode()  # the repository's file, as Gemini reads it
        # the user's settings.json, carried into the agent's generated one: its excluded tool is gone, the others stay
        assert EXCLUDED_TOOL not in _tools(req) and "read_file" in _tools(req)
    assert (repo / "GEMINI.md").read_text() == REPO_OWN + "\n"
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    homes = isolated_home / "state" / "gemini-homes"
    assert sorted(p.name for p in homes.iterdir() if not p.name.endswith(".lock")) == ["alpha", "beta"]
    # Each home's settings.json is generated at each launch (issue 24: the user's settings with agentlaunch's hooks
    # after theirs); the user's own file is read, never written
    user_settings = isolated_home / ".gemini" / "settings.json"
    for name in ("alpha", "beta"):
        generated = homes / name / ".gemini" / "settings.json"
        assert not generated.is_symlink()
        assert json.loads(generated.read_text())["tools"] == json.loads(user_settings.read_text())["tools"]
    assert "agentlaunch" not in user_settings.read_text()


def test_continue_resumes_with_the_same_home_finds_the_session_and_splits_the_calls(
    gemini: tuple[gfake.GeminiFake, dict[str, str]], agents_dir: Path, workdir: Path, isolated_home: Path
) -> None:
    api, env = gemini
    _agent(agents_dir, "alpha", workdir, "ALPHA-SOUL: you are Alpha.\n")
    (workdir / "hello.txt").write_text("hi there\n")
    api.script.push(gfake.TextReply("first", gfake.GeminiUsage(prompt=9000, output=7, cached=6000, thoughts=2)))
    assert run_cli_inprocess("run", "alpha", "one", cwd=workdir, env=env, timeout=240).returncode == 0
    api.script.push(
        gfake.FunctionCallReply("read_file", {"file_path": "hello.txt"}, gfake.GeminiUsage(1000, 20, 0, 5)),
        gfake.TextReply("done", gfake.GeminiUsage(1200, 4, 1000, 0)),
    )
    again = run_cli_inprocess("run", "alpha", "-c", "read hello.txt", cwd=workdir, env=env, timeout=240)
    assert again.returncode == 0, again.stderr.decode()
    first, second, third = api.model_requests
    assert any(t.endswith("one") for t in gfake.user_texts(second.body))  # the same session, resumed
    for req in (first, second, third):
        assert _system(req).count("ALPHA-SOUL") == 1
    home = isolated_home / "state" / "gemini-homes" / "alpha" / ".gemini"
    (session_file,) = (isolated_home / ".gemini").glob("tmp/*/chats/session-*")  # the user's, as without agentlaunch
    assert (home / "tmp").is_symlink() and list(home.glob("tmp/*/chats/session-*")) == [
        home / "tmp" / session_file.relative_to(isolated_home / ".gemini" / "tmp")
    ]
    listed = subprocess.run(  # the user's own Gemini, in that folder, lists the agent's session
        [str(ensure_cli("gemini")), "--list-sessions"], env=env, cwd=workdir, capture_output=True, text=True, timeout=180
    )
    assert listed.returncode == 0 and "sessions for this project (1)" in listed.stdout, listed.stdout + listed.stderr
    sessions = json.loads(run_cli_inprocess("sessions", "--json", cwd=workdir, env=env).stdout)
    assert len(sessions) == 1 and sessions[0]["turns"] == 2
    with Store.open(isolated_home / "state" / "usage.sqlite3") as store:
        calls = store.calls_for_session(sessions[0]["session_id"])
    assert [(c.turn, c.usage.as_dict()) for c in calls] == [
        (1, {"input": 3000, "cache_write": 0, "cache_read": 6000, "output": 9, "reasoning": 2, "cache_write_1h": 0}),
        (2, {"input": 1000, "cache_write": 0, "cache_read": 0, "output": 25, "reasoning": 5, "cache_write_1h": 0}),
        (2, {"input": 200, "cache_write": 0, "cache_read": 1000, "output": 4, "reasoning": 0, "cache_write_1h": 0}),
    ]
    assert list(workdir.iterdir()) == [workdir / "hello.txt"]  # not a git repository: works, nothing written there


def test_no_gemini_folder_at_all_still_runs_and_the_session_lands_in_the_users_gemini_folder(
    gemini: tuple[gfake.GeminiFake, dict[str, str]], agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    api, env = gemini
    bare = tmp_path / "bare-home"
    bare.mkdir()
    _agent(agents_dir, "alpha", workdir, "ALPHA-SOUL: you are Alpha.\n")
    api.script.push(gfake.TextReply("ok"))
    # No ~/.gemini: the fake's auth method comes from the project's own settings instead (with the fake's
    # base URL set, Gemini alone would pick the `gateway` auth and refuse: "Invalid auth method selected").
    project = workdir / ".gemini"
    project.mkdir()
    (project / "settings.json").write_text(json.dumps(gfake.gemini_settings({"general": {"maxAttempts": 1}})))
    bare_env = {**env, "HOME": str(bare)}
    done = run_cli_inprocess("run", "alpha", "hi", cwd=workdir, env=bare_env, timeout=240)
    assert done.returncode == 0, done.stderr.decode()
    (req,) = api.model_requests
    assert _system(req).count("ALPHA-SOUL") == 1 and USER_OWN not in _system(req)
    # agentlaunch writes into the user's home only the folders Gemini's sessions land in, as Gemini without it
    # would. (Gemini 0.61.0 itself leaves projects.json.<uuid>.tmp files in $HOME/.gemini even with
    # GEMINI_CLI_HOME set: its project registry partly ignores the variable.)
    leftovers = [p.name for p in (bare / ".gemini").iterdir() if p.name not in ("tmp", "history")]
    assert all(name.startswith("projects.json") for name in leftovers), leftovers
    assert list((bare / ".gemini").glob("tmp/*/chats/session-*"))
    assert sorted(p.name for p in project.iterdir()) == ["settings.json"]  # nothing written into the project


def test_an_unusable_state_dir_exits_5(
    gemini: tuple[gfake.GeminiFake, dict[str, str]], agents_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    api, env = gemini
    state = tmp_path / "state"
    state.mkdir()
    (state / "gemini-homes").write_text("a file where the agents' Gemini homes go")  # (tests run as root: no chmod)
    _agent(agents_dir, "alpha", workdir, "ALPHA-SOUL: you are Alpha.\n")
    done = run_cli("run", "alpha", "hi", cwd=workdir, env={**env, "AGENTLAUNCH_STATE_DIR": str(state)}, timeout=240)
    assert done.returncode == 5, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"Gemini home" in done.stderr
    assert api.model_requests == []


def test_a_user_context_file_name_keeps_both_their_global_file_and_the_agents_text(
    agents_dir: Path, isolated_home: Path, workdir: Path
) -> None:
    # Gemini 0.61 adds the names in `context.fileName` to GEMINI.md (it never drops the default), so the
    # agent's text in the home's GEMINI.md still arrives, and the user's global AGENTS.md (a link) with it.
    with gfake.GeminiFake() as api:
        env = gfake.prepare_gemini_home(
            isolated_home, api.base_url, max_attempts=1, extra_settings={"context": {"fileName": ["AGENTS.md"]}}, no_relaunch=True
        )  # one node process
        (isolated_home / ".gemini" / "AGENTS.md").write_text("USER-AGENTS-MD: the user's global AGENTS.md\n")
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        (workdir / "AGENTS.md").write_text("REPO-AGENTS-MD: the project's AGENTS.md\n")
        _agent(agents_dir, "alpha", workdir, "ALPHA-SOUL: you are Alpha.\n")
        api.script.push(gfake.TextReply("ok"))
        done = run_cli_inprocess("run", "alpha", "hello", cwd=workdir, env=env, timeout=240)
        assert done.returncode == 0, done.stderr.decode()
        (req,) = api.model_requests
    system = _system(req)
    assert system.count("ALPHA-SOUL") == 1 and "USER-AGENTS-MD" in system
    assert "REPO-AGENTS-MD" in req.raw.decode()
