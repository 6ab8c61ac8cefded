"""Gemini's ``delivery: gemini-home``: the per-agent home's layout, its GEMINI.md, its links, its errors."""

from __future__ import annotations

import json
import os
import stat
from datetime import date
from pathlib import Path

import pytest

from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import StateError
from agentlaunch.launch.placement import instructions_path, place_instructions
from agentlaunch.providers.descriptors import GEMINI
from agentlaunch.providers.gemini_home import combined_memory, home_path, prepare_home
from testbed.agent_files import write_agent

USER_FILES = {
    "settings.json": '{"general": {"maxAttempts": 1}}',
    "oauth_creds.json": "{}",
    "google_accounts.json": "{}",
    "installation_id": "inst",
    "user_id": "uid",
    "trustedFolders.json": "{}",
    "GEMINI.md": "The user's own rules.\n",
    "projects.json": "{}",
}


def _user_home(root: Path, with_memory: bool = True) -> Path:
    """A user's HOME with a populated ~/.gemini (files, extensions/, skills/, their tmp/ and history/)."""
    home = root / "userhome"
    dot = home / ".gemini"
    for sub in ("extensions/ext1", "skills/s1", "tmp/proj/chats", "history/proj"):
        (dot / sub).mkdir(parents=True)
    for name, text in USER_FILES.items():
        if name != "GEMINI.md" or with_memory:
            (dot / name).write_text(text)
    (home / ".agents" / "skills").mkdir(parents=True)
    return home


def _place(tmp_path: Path, env: dict[str, str], soul: str = "You are Gem.\n") -> tuple[Path, Path, object]:
    agents, work, state = tmp_path / "agents", tmp_path / "work", tmp_path / "state"
    work.mkdir(exist_ok=True)
    write_agent(agents, "gem", {"provider": "gemini"}, {"soul.md": soul})
    spec = load_agent(agents, "gem")
    return work, state, place_instructions(spec, work, state, date(2026, 1, 1), env=env)


def test_gemini_defaults_to_gemini_home() -> None:
    assert GEMINI.default_delivery == "gemini-home"
    assert GEMINI.deliveries == ("gemini-home", "file")


def test_the_home_links_the_users_entries_and_session_state_and_keeps_its_own_memory(tmp_path: Path) -> None:
    user = _user_home(tmp_path)
    work, state, placed = _place(tmp_path, {"HOME": str(user)})
    home = home_path(state, "gem")
    assert home == state / "gemini-homes" / "gem"
    cache = str(state / "node-compile-cache")  # no NODE_COMPILE_CACHE of the user's in this environment
    assert placed.env == {"GEMINI_CLI_HOME": str(home), "NODE_COMPILE_CACHE": cache}  # type: ignore[attr-defined]
    dot = home / ".gemini"
    linked = {p.name for p in dot.iterdir() if p.is_symlink()}
    assert linked == {
        "oauth_creds.json",
        "google_accounts.json",
        "installation_id",
        "user_id",
        "trustedFolders.json",
        "extensions",
        "skills",
        "tmp",
        "history",
    }
    # settings.json is generated: the user's settings with agentlaunch's hooks added
    settings = dot / "settings.json"
    assert not settings.is_symlink() and stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert json.loads(settings.read_text())["general"] == {"maxAttempts": 1}
    for name in linked:
        assert os.readlink(dot / name) == str(user / ".gemini" / name)
    assert (home / ".agents").is_symlink() and os.readlink(home / ".agents") == str(user / ".agents")
    # Gemini's sessions are the user's (tmp/, history/: a bare `gemini --resume` lists them); its registry of
    # project names stays the agent's own (Gemini replaces it by a rename)
    assert not (dot / "projects.json").exists()
    memory = dot / "GEMINI.md"
    assert not memory.is_symlink()
    assert memory.read_text() == "The user's own rules.\n\n" + placed.rendered.text  # type: ignore[attr-defined]
    assert list(work.iterdir()) == []


def test_the_rendered_text_is_kept_as_gemini_md_in_the_agents_state_folder(tmp_path: Path) -> None:
    work, state, placed = _place(tmp_path, {"HOME": str(_user_home(tmp_path))})
    spec = load_agent(tmp_path / "agents", "gem")
    assert placed.path == instructions_path(spec, work, state, "GEMINI.md")  # type: ignore[attr-defined]
    assert placed.path == state / "system-prompts" / "gem" / "GEMINI.md"  # type: ignore[attr-defined]
    assert placed.path.read_text("utf-8") == placed.rendered.text  # type: ignore[attr-defined]


def test_without_a_users_global_gemini_md_the_memory_is_the_agents_text_alone(tmp_path: Path) -> None:
    user = _user_home(tmp_path, with_memory=False)
    _, state, placed = _place(tmp_path, {"HOME": str(user)})
    assert (home_path(state, "gem") / ".gemini" / "GEMINI.md").read_text() == placed.rendered.text  # type: ignore[attr-defined]


def test_no_gemini_folder_at_all_makes_only_the_session_folders_gemini_makes_and_still_works(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    _, state, placed = _place(tmp_path, {"HOME": str(bare)})
    home = home_path(state, "gem")
    assert sorted(p.name for p in (home / ".gemini").iterdir()) == ["GEMINI.md", "history", "settings.json", "tmp"]
    assert not (home / ".agents").exists()
    assert (home / ".gemini" / "GEMINI.md").read_text() == placed.rendered.text  # type: ignore[attr-defined]
    # the sessions land where Gemini without agentlaunch writes them; nothing else of the user's is written
    assert sorted(p.name for p in bare.joinpath(".gemini").iterdir()) == ["history", "tmp"]
    assert (home / ".gemini" / "tmp").resolve() == bare / ".gemini" / "tmp"


def test_the_users_own_gemini_cli_home_is_the_source_when_set(tmp_path: Path) -> None:
    user = _user_home(tmp_path)
    _, state, _ = _place(tmp_path, {"HOME": str(tmp_path / "elsewhere"), "GEMINI_CLI_HOME": str(user)})
    generated = json.loads((home_path(state, "gem") / ".gemini" / "settings.json").read_text())
    assert generated["general"] == {"maxAttempts": 1}


def test_relaunch_is_idempotent_and_follows_the_users_home(tmp_path: Path) -> None:
    user = _user_home(tmp_path)
    env = {"HOME": str(user)}
    _, state, first = _place(tmp_path, env)
    dot = home_path(state, "gem") / ".gemini"
    before = {p.name: os.readlink(p) for p in dot.iterdir() if p.is_symlink()}
    (dot / "tmp" / "proj" / "session.json").write_text("{}")  # what Gemini writes there: in the user's tmp/
    _, _, again = _place(tmp_path, env)
    assert {p.name: os.readlink(p) for p in dot.iterdir() if p.is_symlink()} == before
    assert (dot / "tmp" / "proj" / "session.json").read_text() == "{}", "the agent's sessions survive a relaunch"
    assert (user / ".gemini" / "tmp" / "proj" / "session.json").read_text() == "{}"
    assert (dot / "GEMINI.md").read_text() == "The user's own rules.\n\n" + again.rendered.text  # type: ignore[attr-defined]
    # the user removes one entry and adds another: the next launch follows
    (user / ".gemini" / "user_id").unlink()
    (user / ".gemini" / "policies").mkdir()
    _place(tmp_path, env)
    names = {p.name for p in dot.iterdir() if p.is_symlink()}
    assert "user_id" not in names and "policies" in names


def test_a_users_file_that_changes_is_seen_through_the_link(tmp_path: Path) -> None:
    user = _user_home(tmp_path)
    _, state, _ = _place(tmp_path, {"HOME": str(user)})
    (user / ".gemini" / "oauth_creds.json").write_text('{"changed": true}')
    assert (home_path(state, "gem") / ".gemini" / "oauth_creds.json").read_text() == '{"changed": true}'


def test_settings_are_the_users_with_agentlaunchs_hooks_after_theirs_regenerated_at_each_launch(tmp_path: Path) -> None:
    user = _user_home(tmp_path)
    own = user / ".gemini" / "settings.json"
    theirs = {"type": "command", "command": "my-hook"}
    hook = json.dumps(theirs)
    text = '// mine\n{"hooks": {"BeforeTool": [{"hooks": [' + hook + ']}]}, /* kept */ "ui": {"theme": "x // y"}}'
    own.write_text(text)
    _, state, _ = _place(tmp_path, {"HOME": str(user)})
    settings = json.loads((home_path(state, "gem") / ".gemini" / "settings.json").read_text())
    assert settings["ui"] == {"theme": "x // y"}, "comments go, strings stay (Gemini reads JSON with comments)"
    before_tool = settings["hooks"]["BeforeTool"]
    assert before_tool[0] == {"hooks": [theirs]} and before_tool[1]["hooks"][0]["name"] == "agentlaunch"
    assert set(settings["hooks"]) == {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification"}
    command = settings["hooks"]["Notification"][0]["hooks"][0]["command"]
    assert "$GEMINI_SESSION_ID" in command and str(home_path(state, "gem") / "agentlaunch-hooks") in command
    assert own.read_text() == text, "the user's own file is only read"
    own.write_text('{"ui": {"theme": "new"}}')
    _place(tmp_path, {"HOME": str(user)})
    again = json.loads((home_path(state, "gem") / ".gemini" / "settings.json").read_text())
    assert again["ui"] == {"theme": "new"} and again["hooks"]["BeforeTool"][0]["hooks"][0]["name"] == "agentlaunch"


def test_invalid_user_settings_are_linked_as_they_are_and_the_interface_says_so(tmp_path: Path) -> None:
    from agentlaunch.providers.native.gemini import hooks_problem

    user = _user_home(tmp_path)
    _, state, _ = _place(tmp_path, {"HOME": str(user)})  # valid first: a generated file is there
    own = user / ".gemini" / "settings.json"
    own.write_text('{"ui": ')
    _place(tmp_path, {"HOME": str(user)})
    home = home_path(state, "gem")
    link = home / ".gemini" / "settings.json"
    assert link.is_symlink() and os.readlink(link) == str(own)
    problem = hooks_problem(home)
    assert problem is not None and "is not valid JSON" in problem and str(own) in problem
    assert own.read_text() == '{"ui": '
    own.write_text('{"hooksConfig": {"enabled": false}}')
    _place(tmp_path, {"HOME": str(user)})
    assert not link.is_symlink()
    assert "hooksConfig.enabled: false" in (hooks_problem(home) or "")


def test_a_changed_soul_or_user_memory_rewrites_the_homes_gemini_md(tmp_path: Path) -> None:
    user = _user_home(tmp_path)
    _place(tmp_path, {"HOME": str(user)})
    (user / ".gemini" / "GEMINI.md").write_text("Newer user rules")
    _, state, placed = _place(tmp_path, {"HOME": str(user)}, soul="You are Gem, changed.\n")
    text = (home_path(state, "gem") / ".gemini" / "GEMINI.md").read_text()
    assert text == "Newer user rules\n\n" + placed.rendered.text  # type: ignore[attr-defined]
    assert "You are Gem, changed." in text


def test_combined_memory_puts_one_blank_line_between() -> None:
    assert combined_memory("a\n\n\n", "b\n") == "a\n\nb\n"
    assert combined_memory(None, "b\n") == "b\n"
    assert combined_memory("", "b\n") == "b\n"


def test_an_unusable_state_dir_is_a_state_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "gemini-homes").write_text("a file where the homes' folder goes")
    with pytest.raises(StateError, match="cannot prepare the agent's Gemini home"):
        prepare_home(state, "gem", "text", {"HOME": str(_user_home(tmp_path))})


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_state_dir_is_a_state_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with pytest.raises(StateError, match="cannot"):
            prepare_home(state, "gem", "text", {"HOME": str(_user_home(tmp_path))})
    finally:
        state.chmod(stat.S_IRWXU)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "ours"),
        ({"NODE_COMPILE_CACHE": ""}, "ours"),  # empty: not set
        ({"NODE_COMPILE_CACHE": "/their/cache"}, None),  # the user's own stays (child_env keeps it)
        ({"NODE_DISABLE_COMPILE_CACHE": "1"}, None),  # turned off by the user
    ],
)
def test_gemini_gets_nodes_compile_cache_in_the_state_directory_unless_the_user_set_or_disabled_it(
    env: dict[str, str], expected: str | None, tmp_path: Path
) -> None:
    from agentlaunch.providers.gemini import compile_cache_env

    got = compile_cache_env(tmp_path / "state", env)
    assert got == ({"NODE_COMPILE_CACHE": str(tmp_path / "state" / "node-compile-cache")} if expected else {})
