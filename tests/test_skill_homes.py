"""Per-agent Claude Code, Gemini and Codex homes with skills: a folder of links, the user's entries kept, runtime state apart."""

from __future__ import annotations

import os
from pathlib import Path

from agentlaunch.providers import claude_home, codex_home, gemini_home


def _skill(folder: Path, name: str) -> Path:
    path = folder / name
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {name}\n---\n")
    return path


def test_gemini_skills_become_a_folder_of_links_with_the_agents_skill_winning_a_name_clash(tmp_path: Path) -> None:
    user = tmp_path / "user"
    _skill(user / ".gemini" / "skills", "users-own")
    _skill(user / ".gemini" / "skills", "probe")  # the user's skill of the same name as the agent's
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    gemini_home.prepare_home(state, "gem", "text", {"HOME": str(user)}, skills={"probe": installed})
    folder = gemini_home.home_path(state, "gem") / ".gemini" / "skills"
    assert folder.is_dir() and not folder.is_symlink()
    assert sorted(p.name for p in folder.iterdir()) == ["probe", "users-own"]
    assert (folder / "probe").resolve() == installed
    assert (folder / "users-own").resolve() == user / ".gemini" / "skills" / "users-own"
    # a skill the user adds later is linked on the next launch; one they remove goes
    _skill(user / ".gemini" / "skills", "later")
    (user / ".gemini" / "skills" / "users-own" / "SKILL.md").unlink()
    (user / ".gemini" / "skills" / "users-own").rmdir()
    gemini_home.prepare_home(state, "gem", "text", {"HOME": str(user)}, skills={"probe": installed})
    assert sorted(p.name for p in folder.iterdir()) == ["later", "probe"]


def test_a_gemini_agent_that_drops_its_skills_gets_the_link_to_the_users_folder_back(tmp_path: Path) -> None:
    user = tmp_path / "user"
    _skill(user / ".gemini" / "skills", "users-own")
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    gemini_home.prepare_home(state, "gem", "text", {"HOME": str(user)}, skills={"probe": installed})
    gemini_home.prepare_home(state, "gem", "text", {"HOME": str(user)})
    folder = gemini_home.home_path(state, "gem") / ".gemini" / "skills"
    assert folder.is_symlink() and folder.resolve() == user / ".gemini" / "skills"


def test_a_gemini_agent_with_skills_and_no_user_gemini_folder(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    gemini_home.prepare_home(state, "gem", "text", {"HOME": str(bare)}, skills={"probe": installed})
    folder = gemini_home.home_path(state, "gem") / ".gemini" / "skills"
    assert [p.name for p in folder.iterdir()] == ["probe"]
    assert sorted(p.name for p in (bare / ".gemini").iterdir()) == ["history", "tmp"]  # only where sessions land


def _user_codex(root: Path) -> Path:
    home = root / "user" / ".codex"
    home.mkdir(parents=True)
    for name in ("config.toml", "auth.json", "work.config.toml", "AGENTS.md", "installation_id"):
        (home / name).write_text(name)
    for name in ("state_5.sqlite", "state_5.sqlite-wal", "state_5.sqlite-shm", "logs_2.sqlite", "history.jsonl"):
        (home / name).write_text(name)
    for name in ("sessions/2026", "log", "shell_snapshots", "rules", "prompts"):
        (home / name).mkdir(parents=True)
    _skill(home / "skills", "users-own")
    (home / "skills" / ".system").mkdir()
    return home


def test_the_codex_home_links_config_auth_and_sessions_and_points_codex_at_the_users_databases(tmp_path: Path) -> None:
    user = _user_codex(tmp_path)
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    env = codex_home.prepare_home(state, "cx", {"HOME": str(tmp_path / "user")}, {"probe": installed})
    home = codex_home.home_path(state, "cx")
    assert env == {"CODEX_HOME": str(home), "CODEX_SQLITE_HOME": str(user)}  # the user's thread index, not a copy
    linked = {p.name for p in home.iterdir() if p.is_symlink()}
    sessions = {"sessions", "archived_sessions", "shell_snapshots", "thread-writer-locks", "log", "history.jsonl"}
    users = {"config.toml", "auth.json", "work.config.toml", "AGENTS.md", "installation_id", "rules", "prompts"}
    assert linked == users | sessions
    for name in linked:
        assert os.readlink(home / name) == str(user / name)
    assert sorted(p.name for p in home.iterdir() if not p.is_symlink()) == ["skills"]  # no database of the user's linked
    skills = home / "skills"
    assert sorted(p.name for p in skills.iterdir()) == ["probe", "users-own"]  # not the user's .system
    assert (skills / "probe").resolve() == installed


def test_the_codex_home_follows_codex_home_from_the_environment_and_is_idempotent(tmp_path: Path) -> None:
    user = _user_codex(tmp_path)
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    env = {"CODEX_HOME": str(user), "HOME": str(tmp_path / "elsewhere")}
    assert "CODEX_SQLITE_HOME" in codex_home.prepare_home(state, "cx", env, {"probe": installed})
    assert "CODEX_SQLITE_HOME" not in codex_home.prepare_home(state, "cx", {**env, "CODEX_SQLITE_HOME": "/theirs"}, {})
    home = codex_home.home_path(state, "cx")
    (home / "skills" / ".system").mkdir()  # Codex's built-in skills: the agent home's own
    before = sorted((p.name, p.is_symlink()) for p in home.iterdir())
    codex_home.prepare_home(state, "cx", env, {"probe": installed})
    assert sorted((p.name, p.is_symlink()) for p in home.iterdir()) == before
    assert (home / "skills" / ".system").is_dir() and not (home / "skills" / ".system").is_symlink()
    (user / "AGENTS.md").unlink()
    codex_home.prepare_home(state, "cx", env, {})
    assert not (home / "AGENTS.md").exists() and not (home / "AGENTS.md").is_symlink()
    assert sorted(p.name for p in (home / "skills").iterdir()) == [".system", "users-own"]


def test_is_own_covers_sqlite_journals_and_runtime_folders() -> None:
    for name in ("state_5.sqlite", "state_5.sqlite-wal", "x.sqlite-shm", "x.db-journal", "tmp", "sessions", "history.jsonl"):
        assert codex_home.is_own(name), name
    for name in ("config.toml", "auth.json", "rules", "AGENTS.md", "sqlite-notes.md"):
        assert not codex_home.is_own(name), name


def test_ensure_link_replaces_a_stale_link_in_one_rename_and_keeps_a_real_entry(tmp_path: Path) -> None:
    from agentlaunch.providers.home_links import ensure_link

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    link = tmp_path / "home" / "entry"
    link.parent.mkdir()
    link.symlink_to(old)
    (link.parent / f".entry.{os.getpid()}.link").symlink_to(old)  # left by a launch that died mid-way
    ensure_link(link, new)
    assert link.resolve() == new and sorted(p.name for p in link.parent.iterdir()) == ["entry"]
    real = tmp_path / "home" / "real"
    real.mkdir()
    ensure_link(real, new)
    assert real.is_dir() and not real.is_symlink()


def _user_claude(root: Path, *, config_dir: Path | None = None) -> tuple[Path, dict[str, str]]:
    """A user's Claude Code files: ``~/.claude`` (or ``config_dir``) with settings, credentials, projects, a skill."""
    folder = config_dir or root / ".claude"
    (folder / "projects").mkdir(parents=True)
    (folder / "settings.json").write_text("{}")
    (folder / ".credentials.json").write_text("{}")
    _skill(folder / "skills", "users-own")
    state_file = (config_dir or root) / ".claude.json"
    state_file.write_text('{"hasCompletedOnboarding": true}')
    env = {"HOME": str(root)} if config_dir is None else {"HOME": str(root), "CLAUDE_CONFIG_DIR": str(config_dir)}
    return state_file, env


def _tree(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    return {
        str(p): (p.stat().st_mtime_ns, os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else b"")
        for p in sorted(folder.rglob("*"))
    }


def test_the_claude_folder_links_the_users_entries_and_state_file_and_keeps_their_credential_store(tmp_path: Path) -> None:
    user = tmp_path / "user"
    state_file, env = _user_claude(user)
    before = _tree(user)
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    placed = claude_home.prepare_home(state, "cl", env, {"probe": installed})
    home = claude_home.home_path(state, "cl")
    # Claude Code's store of the user's login is named after the folder: kept as the user's (no CLAUDE_CONFIG_DIR: empty)
    assert placed == {"CLAUDE_CONFIG_DIR": str(home), "CLAUDE_SECURESTORAGE_CONFIG_DIR": ""}
    assert (home / ".claude.json").is_symlink() and (home / ".claude.json").resolve() == state_file
    for name in ("settings.json", ".credentials.json", "projects"):
        assert (home / name).is_symlink() and (home / name).resolve() == user / ".claude" / name
    assert sorted(p.name for p in (home / "skills").iterdir()) == ["probe", "users-own"]
    assert (home / "skills" / "probe").resolve() == installed
    # nothing of the user's was changed; only the folders a session writes into were added, as Claude Code adds them
    after = _tree(user)
    added = {Path(p).name for p in set(after) - set(before)}
    assert added == set(claude_home.SHARED_FOLDERS) - {"projects"}
    assert {p: v for p, v in after.items() if p in before and p != str(user / ".claude")} == {
        p: v for p, v in before.items() if p != str(user / ".claude")
    }


def test_the_claude_folder_follows_the_users_config_dir_and_is_idempotent(tmp_path: Path) -> None:
    user = tmp_path / "user"
    state_file, env = _user_claude(user, config_dir=tmp_path / "cfg")
    env["CLAUDE_SECURESTORAGE_CONFIG_DIR"] = "/theirs"
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    assert claude_home.prepare_home(state, "cl", env, {"probe": installed}) == {
        "CLAUDE_CONFIG_DIR": str(claude_home.home_path(state, "cl"))  # the user's own store setting stays theirs
    }
    home = claude_home.home_path(state, "cl")
    assert (home / ".claude.json").resolve() == state_file
    link_before = os.lstat(home / ".claude.json").st_ino
    (tmp_path / "cfg" / "settings.json").unlink()  # gone from the user's folder: its link goes
    (home / "statsig").mkdir()  # made by Claude Code in the agent's folder: moved to the user's at the next launch
    del env["CLAUDE_SECURESTORAGE_CONFIG_DIR"]
    assert claude_home.prepare_home(state, "cl", env, {"probe": installed})["CLAUDE_SECURESTORAGE_CONFIG_DIR"] == str(
        tmp_path / "cfg"
    )
    assert os.lstat(home / ".claude.json").st_ino == link_before  # never replaced while a CLI may read it
    assert not (home / "settings.json").exists()
    assert (home / "statsig").is_symlink() and (tmp_path / "cfg" / "statsig").is_dir()


def test_the_claude_folder_without_a_user_state_file_links_the_name_claude_code_will_create(tmp_path: Path) -> None:
    user = tmp_path / "user"
    state_file, env = _user_claude(user)
    installed = _skill(tmp_path / "installed", "probe")
    state = tmp_path / "state"
    claude_home.prepare_home(state, "cl", env, {"probe": installed})
    state_file.unlink()
    claude_home.prepare_home(state, "cl", env, {"probe": installed})
    link = claude_home.home_path(state, "cl") / ".claude.json"
    assert not link.exists() and os.readlink(link) == str(state_file)  # Claude Code starts as for a new user
