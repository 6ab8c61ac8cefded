"""Per-agent homes hide nothing from the CLIs' own tools: Claude Code's session files land in the user's folder,
what earlier versions left in agentlaunch's state folder moves there, a later ``~/.claude.json`` reaches the agent,
and launches of one agent at once prepare its home without failing (processes, as launches are)."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.context
import multiprocessing.synchronize
import os
from pathlib import Path

import pytest

from agentlaunch.providers import claude_home, claude_state_file, codex_home, gemini_home


def _skill(folder: Path, name: str) -> Path:
    path = folder / name
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name}\n---\n")
    return path


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_first_session_with_no_claude_folder_writes_into_the_users_own_projects(isolated_home: Path, tmp_path: Path) -> None:
    state = isolated_home / "state"
    installed = _skill(tmp_path / "installed", "probe")
    claude_home.prepare_home(state, "cl", {"HOME": str(isolated_home)}, {"probe": installed})
    home = claude_home.home_path(state, "cl")
    user = isolated_home / ".claude"
    for name in ("projects", "sessions", "file-history", "backups"):
        assert (home / name).is_symlink() and (home / name).resolve() == user / name and (user / name).is_dir()
    # the files Claude Code creates (history, its state file) are links already, to names the user does not have yet
    assert os.readlink(home / "history.jsonl") == str(user / "history.jsonl")
    assert os.readlink(home / ".claude.json") == str(isolated_home / ".claude.json")
    transcript = home / "projects" / "-work" / "s1.jsonl"  # what Claude Code writes, as it writes it
    transcript.parent.mkdir()
    transcript.write_text('{"type":"user"}\n')
    (home / "history.jsonl").write_text('{"display":"hello"}\n')
    assert (user / "projects" / "-work" / "s1.jsonl").read_text() == '{"type":"user"}\n'
    assert (user / "history.jsonl").read_text() == '{"display":"hello"}\n'
    assert sorted(p.name for p in home.iterdir() if not p.is_symlink()) == ["skills"]


def _earlier_home(state: Path, installed: Path) -> Path:
    """An agent's folder as an earlier version left it: Claude Code's session files real, inside the state folder."""
    home = claude_home.home_path(state, "cl")
    (home / "skills").mkdir(parents=True)
    (home / "skills" / "probe").symlink_to(installed)
    (home / "projects" / "-work").mkdir(parents=True)
    (home / "projects" / "-work" / "old.jsonl").write_text('{"agent":1}\n')
    (home / "projects" / "-work" / "both.jsonl").write_text('{"same":1}\n')
    (home / "projects" / "-other" / "memory").mkdir(parents=True)
    (home / "history.jsonl").write_text('{"display":"agent 1"}\n{"display":"shared"}\n')
    (home / ".credentials.json").write_text('{"agent": "login"}')
    (home / "plugins" / "store").mkdir(parents=True)
    (home / "plugins" / "store" / "p.json").write_text("{}")
    (home / ".claude.json.lock").mkdir()  # Claude Code's write lock of the moment: not Claude's data, left alone
    return home


def test_what_earlier_versions_left_in_the_state_folder_moves_to_the_users_folder_never_over_a_users_file(
    isolated_home: Path, tmp_path: Path
) -> None:
    state = isolated_home / "state"
    installed = _skill(tmp_path / "installed", "probe")
    home = _earlier_home(state, installed)
    user = isolated_home / ".claude"
    (user / "projects" / "-work").mkdir(parents=True)
    (user / "projects" / "-work" / "both.jsonl").write_text('{"same":1}\n')
    (user / "projects" / "-work" / "mine.jsonl").write_text('{"user":1}\n')
    (user / "history.jsonl").write_text('{"display":"shared"}\n{"display":"user 1"}')  # no newline at the end
    (user / ".credentials.json").write_text('{"user": "login"}')
    claude_home.prepare_home(state, "cl", {"HOME": str(isolated_home)}, {"probe": installed})
    assert _files(user / "projects") == {
        "-work/both.jsonl": b'{"same":1}\n',
        "-work/mine.jsonl": b'{"user":1}\n',
        "-work/old.jsonl": b'{"agent":1}\n',
    }
    assert (user / "projects" / "-other" / "memory").is_dir()
    assert (user / "history.jsonl").read_text().splitlines() == [
        '{"display":"shared"}',
        '{"display":"user 1"}',
        '{"display":"agent 1"}',
    ]
    assert (user / ".credentials.json").read_text() == '{"user": "login"}'  # the user's file is never replaced
    assert (home / ".agentlaunch-kept" / ".credentials.json").read_text() == '{"agent": "login"}'  # nor the agent's lost
    assert (user / "plugins" / "store" / "p.json").read_text() == "{}"
    for name in ("projects", "history.jsonl", ".credentials.json", "plugins"):
        assert (home / name).is_symlink() and os.readlink(home / name) == str(user / name), name
    assert (home / ".claude.json.lock").is_dir()
    before = _files(user), sorted((p.name, p.is_symlink()) for p in home.iterdir())
    claude_home.prepare_home(state, "cl", {"HOME": str(isolated_home)}, {"probe": installed})  # idempotent
    assert (_files(user), sorted((p.name, p.is_symlink()) for p in home.iterdir())) == before


def test_an_earlier_private_claude_json_moves_to_the_user_who_has_none(isolated_home: Path, tmp_path: Path) -> None:
    state = isolated_home / "state"
    installed = _skill(tmp_path / "installed", "probe")
    home = claude_home.home_path(state, "cl")
    home.mkdir(parents=True)
    (home / ".claude.json").write_text('{"hasCompletedOnboarding": true, "userID": "u1"}')
    claude_home.prepare_home(state, "cl", {"HOME": str(isolated_home)}, {"probe": installed})
    assert json.loads((isolated_home / ".claude.json").read_text()) == {"hasCompletedOnboarding": True, "userID": "u1"}
    assert os.readlink(home / ".claude.json") == str(isolated_home / ".claude.json")
    assert not (home / ".agentlaunch-kept").exists()


def test_a_claude_json_the_user_made_after_the_first_launch_reaches_the_agent_with_the_private_copys_entries(
    isolated_home: Path, tmp_path: Path
) -> None:
    state = isolated_home / "state"
    installed = _skill(tmp_path / "installed", "probe")
    home = claude_home.home_path(state, "cl")
    home.mkdir(parents=True)
    private = {
        "hasCompletedOnboarding": True,
        "userID": "agent",
        "numStartups": 9,
        "projects": {"/work": {"hasTrustDialogAccepted": True}, "/both": {"allowedTools": ["agent"]}},
        "mcpServers": {"agent-mcp": {"command": "a"}},
    }
    (home / ".claude.json").write_text(json.dumps(private))
    users = {"userID": "user", "projects": {"/both": {"allowedTools": ["user"]}}, "mcpServers": {"probe": {"command": "p"}}}
    (isolated_home / ".claude.json").write_text(json.dumps(users))
    claude_home.prepare_home(state, "cl", {"HOME": str(isolated_home)}, {"probe": installed})
    assert os.readlink(home / ".claude.json") == str(isolated_home / ".claude.json")
    assert json.loads((home / ".claude.json").read_text()) == {
        "userID": "user",
        "hasCompletedOnboarding": True,
        "numStartups": 9,
        "projects": {"/both": {"allowedTools": ["user"]}, "/work": {"hasTrustDialogAccepted": True}},
        "mcpServers": {"probe": {"command": "p"}, "agent-mcp": {"command": "a"}},
    }  # (the user's value wins every clash; what only the agent had is added)
    assert json.loads((home / ".agentlaunch-kept" / ".claude.json").read_text()) == private
    assert not (isolated_home / ".claude.json.lock").exists() and not (home / ".claude.json.lock").exists()


def test_a_private_claude_json_under_claude_codes_own_lock_is_left_for_the_next_launch(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claude_state_file, "LOCK_TRIES", 2)
    monkeypatch.setattr(claude_state_file, "LOCK_PAUSE", 0.0)
    state = isolated_home / "state"
    home = claude_home.home_path(state, "cl")
    home.mkdir(parents=True)
    (home / ".claude.json").write_text('{"userID": "agent"}')
    (isolated_home / ".claude.json").write_text('{"userID": "user"}')
    (isolated_home / ".claude.json.lock").mkdir()  # a Claude Code of the user's writing its file right now
    claude_home.prepare_home(state, "cl", {"HOME": str(isolated_home)}, {})
    assert not (home / ".claude.json").is_symlink() and (home / ".claude.json").read_text() == '{"userID": "agent"}'
    (isolated_home / ".claude.json.lock").rmdir()
    claude_home.prepare_home(state, "cl", {"HOME": str(isolated_home)}, {})
    assert (home / ".claude.json").is_symlink()


def test_gemini_sessions_an_earlier_version_kept_in_the_state_folder_move_to_the_users_gemini_folder(
    isolated_home: Path,
) -> None:
    state = isolated_home / "state"
    dot = gemini_home.home_path(state, "gem") / ".gemini"
    (dot / "tmp" / "work" / "chats").mkdir(parents=True)
    (dot / "tmp" / "work" / ".project_root").write_text("/work")
    (dot / "tmp" / "work" / "chats" / "session-a.jsonl").write_text('{"sessionId":"a"}\n')
    (dot / "history" / "work").mkdir(parents=True)
    (dot / "projects.json").write_text('{"projects": {"/work": "work"}}')
    user = isolated_home / ".gemini"
    (user / "tmp" / "work" / "chats").mkdir(parents=True)
    (user / "tmp" / "work" / ".project_root").write_text("/work")
    (user / "tmp" / "work" / "chats" / "session-b.jsonl").write_text('{"sessionId":"b"}\n')
    gemini_home.prepare_home(state, "gem", "text", {"HOME": str(isolated_home)})
    assert sorted(p.name for p in (user / "tmp" / "work" / "chats").iterdir()) == ["session-a.jsonl", "session-b.jsonl"]
    assert (user / "history" / "work").is_dir()
    for name in ("tmp", "history"):
        assert os.readlink(dot / name) == str(user / name)
    assert (dot / "projects.json").read_text() == '{"projects": {"/work": "work"}}'  # the agent's registry stays its own
    assert not (user / "projects.json").exists()


def test_codex_sessions_an_earlier_version_kept_in_the_state_folder_move_to_the_users_codex_home(
    isolated_home: Path,
) -> None:
    state = isolated_home / "state"
    home = codex_home.home_path(state, "cx")
    day = home / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    (day / "rollout-a.jsonl").write_text('{"thread":"a"}\n')
    (home / "history.jsonl").write_text('{"text":"agent"}\n')
    (home / "state_5.sqlite").write_bytes(b"the agent's own index")
    user = isolated_home / ".codex"
    (user / "sessions" / "2026" / "12" / "01").mkdir(parents=True)
    (user / "sessions" / "2026" / "12" / "01" / "rollout-b.jsonl").write_text('{"thread":"b"}\n')
    (user / "config.toml").write_text('model = "x"\n')
    env = codex_home.prepare_home(state, "cx", {"HOME": str(isolated_home)}, {})
    assert sorted(p.name for p in (user / "sessions" / "2026" / "12" / "01").iterdir()) == ["rollout-a.jsonl", "rollout-b.jsonl"]
    assert (user / "history.jsonl").read_text() == '{"text":"agent"}\n'
    assert os.readlink(home / "sessions") == str(user / "sessions") and os.readlink(home / "history.jsonl") == str(
        user / "history.jsonl"
    )
    assert (home / "state_5.sqlite").read_bytes() == b"the agent's own index"  # left where it was, unused
    assert env["CODEX_SQLITE_HOME"] == str(user) and not (user / "state_5.sqlite").exists()
    (user / "config.toml").write_text('sqlite_home = "/elsewhere"\n')  # the user's own choice is kept
    assert "CODEX_SQLITE_HOME" not in codex_home.prepare_home(state, "cx", {"HOME": str(isolated_home)}, {})


# -- launches at once ---------------------------------------------------------------------------------------------

LAUNCHES = 64


def _prepare(provider: str, state: str, user: str, skills: dict[str, str], start: multiprocessing.synchronize.Event) -> None:
    env = {"HOME": user}
    links = {name: Path(path) for name, path in skills.items()}
    start.wait()
    if provider == "gemini":
        gemini_home.prepare_home(Path(state), "agent", "text", env, skills=links or None)
    elif provider == "claude":
        claude_home.prepare_home(Path(state), "agent", env, links)
    else:
        codex_home.prepare_home(Path(state), "agent", env, links)


@pytest.mark.parametrize("provider", ["gemini", "claude", "codex"])
def test_64_launches_of_one_agent_at_once_while_its_skills_change_all_prepare_its_home(
    provider: str, isolated_home: Path, tmp_path: Path
) -> None:
    state = isolated_home / "state"
    for folder in (".gemini/skills", ".claude/skills", ".codex/skills"):
        _skill(isolated_home / folder, "users-own")
    one, two = str(_skill(tmp_path / "s", "one")), str(_skill(tmp_path / "s", "two"))
    skill_sets: list[dict[str, str]] = [{}, {"one": one}, {"one": one, "two": two}]
    context = multiprocessing.get_context("fork")
    start = context.Event()
    launches = [
        context.Process(target=_prepare, args=(provider, str(state), str(isolated_home), skill_sets[i % 3], start))
        for i in range(LAUNCHES)
    ]
    for launch in launches:
        launch.start()
    start.set()
    for launch in launches:
        launch.join(120)
    assert [launch.exitcode for launch in launches] == [0] * LAUNCHES
    # the home is whole afterwards: one more launch (two skills) brings it to exactly those and the user's
    _prepare(provider, str(state), str(isolated_home), skill_sets[2], _set(context))
    skills = {
        "gemini": gemini_home.home_path(state, "agent") / ".gemini" / "skills",
        "claude": claude_home.home_path(state, "agent") / "skills",
        "codex": codex_home.home_path(state, "agent") / "skills",
    }[provider]
    assert sorted(p.name for p in skills.iterdir() if not p.name.startswith(".")) == ["one", "two", "users-own"]


def _set(context: multiprocessing.context.ForkContext) -> multiprocessing.synchronize.Event:
    event = context.Event()
    event.set()
    return event


def _migrate(state: str, user: str, agent: str, start: multiprocessing.synchronize.Event) -> None:
    start.wait()
    claude_home.prepare_home(Path(state), agent, {"HOME": user}, {})


def test_agents_moving_their_files_into_one_user_folder_at_once_lose_nothing(isolated_home: Path) -> None:
    state = isolated_home / "state"
    agents = [f"a{i}" for i in range(8)]
    for agent in agents:
        project = claude_home.home_path(state, agent) / "projects" / "-work"
        project.mkdir(parents=True)
        (project / f"{agent}.jsonl").write_text(f'{{"agent":"{agent}"}}\n')
        (claude_home.home_path(state, agent) / "history.jsonl").write_text(f'{{"display":"{agent}"}}\n')
    context = multiprocessing.get_context("fork")
    start = context.Event()
    launches = [context.Process(target=_migrate, args=(str(state), str(isolated_home), a, start)) for a in agents * 4]
    for launch in launches:
        launch.start()
    start.set()
    for launch in launches:
        launch.join(120)
    assert [launch.exitcode for launch in launches] == [0] * len(launches)
    user = isolated_home / ".claude"
    assert sorted(p.name for p in (user / "projects" / "-work").iterdir()) == sorted(f"{a}.jsonl" for a in agents)
    assert sorted((user / "history.jsonl").read_text().splitlines()) == sorted(f'{{"display":"{a}"}}' for a in agents)
    for agent in agents:
        assert (claude_home.home_path(state, agent) / "projects").is_symlink()
