"""Agent definitions: loading, defaults, and every bad input named in the foundation issue."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.definitions import agent_yaml
from agentlaunch.definitions.spec import agent_names, load_agent, resolve_working_dir
from agentlaunch.errors import DefinitionError
from testbed.agent_files import write_agent


def problems_of(agents_dir: Path, name: str) -> list[str]:
    with pytest.raises(DefinitionError) as info:
        load_agent(agents_dir, name)
    return info.value.problems


def test_example_agents_load_with_defaults(agents_dir: Path) -> None:
    assert agent_names(agents_dir) == ["demo", "planner", "reviewer"]
    spec = load_agent(agents_dir, "reviewer")
    assert spec.display == "Reviewer" and spec.id == "reviewer" and spec.provider == "claude"
    assert [b.name for b in spec.bundles] == ["house-style", "security-basics"]
    assert [s.name for s in spec.skills] == ["git-hygiene", "code-review"]
    assert spec.peers == ("demo", "planner")  # default: every other agent
    assert spec.compaction_buffer == 33000
    assert load_agent(agents_dir, "planner").peers == ("reviewer",)


def test_skills_all_lists_every_skill_sorted(agents_dir: Path) -> None:
    assert [s.name for s in load_agent(agents_dir, "demo").skills] == ["code-review", "git-hygiene"]


def test_soul_and_instructions_are_optional_by_default(agents_dir: Path) -> None:
    write_agent(agents_dir, "bare", {"provider": "claude"})
    spec = load_agent(agents_dir, "bare")
    assert spec.soul is None and spec.instructions is None and spec.display == "bare"


def test_yaml_syntax_error_names_the_line(agents_dir: Path) -> None:
    write_agent(agents_dir, "broken", "provider: claude\nbundles: [a, b\nmodel: x\n")
    (problem,) = problems_of(agents_dir, "broken")
    assert "broken/agent.yaml: yaml: line " in problem


def test_missing_agent_yaml(agents_dir: Path) -> None:
    (agents_dir / "ghost").mkdir()
    (problem,) = problems_of(agents_dir, "ghost")
    assert "ghost/agent.yaml: agent 'ghost' not found" in problem


def test_agent_yaml_that_is_not_a_mapping(agents_dir: Path) -> None:
    write_agent(agents_dir, "listy", "- provider\n- claude\n")
    assert "expected a mapping" in problems_of(agents_dir, "listy")[0]


def test_unknown_key_is_an_error(agents_dir: Path) -> None:
    write_agent(agents_dir, "typo", {"provider": "claude", "modle": "x"})
    (problem,) = problems_of(agents_dir, "typo")
    assert problem.endswith("typo/agent.yaml: modle: unknown key (allowed: " + problem.split("(allowed: ")[1])
    assert "modle: unknown key" in problem


def test_wrong_types_are_reported_per_field(agents_dir: Path) -> None:
    write_agent(agents_dir, "types", {"provider": "openai", "bundles": "house-style", "context_window": "big"})
    problems = problems_of(agents_dir, "types")
    fields = sorted(p.split(": ")[1] for p in problems)
    assert fields == ["bundles", "context_window", "provider"]
    assert all("types/agent.yaml: " in p for p in problems)


def test_provider_is_required(agents_dir: Path) -> None:
    write_agent(agents_dir, "noprov", {"model": "x"})
    (problem,) = problems_of(agents_dir, "noprov")
    assert "provider: Field required" in problem


def test_explicit_soul_file_missing(agents_dir: Path) -> None:
    write_agent(agents_dir, "nosoul", {"provider": "claude", "soul": "identity.md", "instructions": "todo.md"})
    problems = problems_of(agents_dir, "nosoul")
    assert any("nosoul/identity.md: soul: file not found" in p for p in problems)
    assert any("nosoul/todo.md: instructions: file not found" in p for p in problems)


def test_unknown_bundle_and_skill(agents_dir: Path) -> None:
    write_agent(agents_dir, "refs", {"provider": "claude", "bundles": ["nope"], "skills": ["ghost"]})
    problems = problems_of(agents_dir, "refs")
    assert any("bundles.0: unknown bundle 'nope'" in p for p in problems)
    assert any("skills.0: unknown skill 'ghost'" in p for p in problems)


def test_skill_without_front_matter(agents_dir: Path) -> None:
    (agents_dir / "skills" / "plain").mkdir()
    (agents_dir / "skills" / "plain" / "SKILL.md").write_text("# Just text\n")
    write_agent(agents_dir, "s", {"provider": "claude", "skills": ["plain"]})
    (problem,) = problems_of(agents_dir, "s")
    assert "skills/plain/SKILL.md: front matter: missing" in problem


def test_skill_without_description(agents_dir: Path) -> None:
    (agents_dir / "skills" / "nodesc").mkdir()
    (agents_dir / "skills" / "nodesc" / "SKILL.md").write_text("---\nname: nodesc\n---\nbody\n")
    write_agent(agents_dir, "s", {"provider": "claude", "skills": ["nodesc"]})
    assert "description: missing" in problems_of(agents_dir, "s")[0]


@pytest.mark.parametrize("bad", ["../outside", "a/b", "..", "x/../../etc"])
def test_path_like_bundle_names_are_rejected(agents_dir: Path, bad: str) -> None:
    secret = agents_dir.parent / "outside.md"
    secret.write_text("secret")
    write_agent(agents_dir, "sneaky", {"provider": "claude", "bundles": [bad], "skills": [bad]})
    problems = problems_of(agents_dir, "sneaky")
    assert any("bundles.0: bundle name" in p and "not allowed" in p for p in problems)
    assert any("skills.0: skill name" in p for p in problems)


@pytest.mark.parametrize("bad", ["../reviewer", "a/b", ".."])
def test_path_like_agent_names_are_rejected(agents_dir: Path, bad: str) -> None:
    (problem,) = problems_of(agents_dir, bad)
    assert "agent name" in problem and "not allowed" in problem


def test_soul_path_outside_the_agent_folder_is_rejected(agents_dir: Path) -> None:
    (agents_dir.parent / "stolen.md").write_text("not yours")
    write_agent(agents_dir, "esc", {"provider": "claude", "soul": "../../stolen.md"})
    (problem,) = problems_of(agents_dir, "esc")
    assert "soul: '../../stolen.md' must be a file inside the agent folder" in problem


def test_symlink_out_of_the_agents_directory_is_not_read(agents_dir: Path) -> None:
    outside = agents_dir.parent / "outside.md"
    outside.write_text("secret")
    (agents_dir / "bundles" / "linked.md").symlink_to(outside)
    write_agent(agents_dir, "link", {"provider": "claude", "bundles": ["linked"]})
    (problem,) = problems_of(agents_dir, "link")
    assert "refers outside the agents directory" in problem


def test_non_utf8_file(agents_dir: Path) -> None:
    write_agent(agents_dir, "latin", {"provider": "claude"}, {"soul.md": "caf\xe9".encode("latin-1")})
    (problem,) = problems_of(agents_dir, "latin")
    assert "latin/soul.md: soul: not valid UTF-8 (byte 0xe9 at offset 3)" in problem


def test_agents_directory_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="agents directory does not exist"):
        load_agent(tmp_path / "nowhere", "x")


def test_working_dir_that_does_not_exist(agents_dir: Path, tmp_path: Path) -> None:
    write_agent(agents_dir, "wd", {"provider": "claude", "working_dir": str(tmp_path / "missing")})
    spec = load_agent(agents_dir, "wd")
    with pytest.raises(DefinitionError, match="working_dir: working directory .*missing does not exist"):
        resolve_working_dir(spec, None, tmp_path / "state")


def test_working_dir_expands_home_and_scratch(agents_dir: Path, tmp_path: Path, isolated_home: Path) -> None:
    (isolated_home / "proj").mkdir()
    write_agent(agents_dir, "wd", {"provider": "claude", "working_dir": "~/proj"})
    assert resolve_working_dir(load_agent(agents_dir, "wd"), None, tmp_path) == (isolated_home / "proj").resolve()
    scratch = resolve_working_dir(load_agent(agents_dir, "demo"), None, tmp_path / "state")
    assert scratch == (tmp_path / "state" / "scratch" / "demo").resolve() and scratch.is_dir()


# -- the memo of what the schema accepted (a launch of an unchanged agent skips pydantic) --------


def test_a_launch_remembers_a_valid_agent_yaml_by_content_without_its_env(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_agent(agents_dir, "memo", {"provider": "claude", "model": "m1", "env": {"API_TOKEN": "s3cret-value"}})
    first = load_agent(agents_dir, "memo", state)
    memos = list((state / "validated").iterdir())
    assert len(memos) == 1
    assert b"s3cret-value" not in memos[0].read_bytes() and b"API_TOKEN" not in memos[0].read_bytes()
    again = load_agent(agents_dir, "memo", state)
    assert again == first and again.env == {"API_TOKEN": "s3cret-value"}
    # A new env value is the file's, not the memo's; it needs no new memo.
    write_agent(agents_dir, "memo", {"provider": "claude", "model": "m1", "env": {"API_TOKEN": "rotated"}})
    assert load_agent(agents_dir, "memo", state).env == {"API_TOKEN": "rotated"}
    # Any other change is a new content: checked again, remembered apart.
    write_agent(agents_dir, "memo", {"provider": "claude", "model": "m2"})
    assert load_agent(agents_dir, "memo", state).model == "m2"
    assert len(list((state / "validated").iterdir())) == 2


def test_a_bad_agent_yaml_is_reported_every_time_and_never_remembered(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_agent(agents_dir, "memo", {"provider": "claude", "context_window": 0, "env": {"K": 5}})
    for _ in range(2):
        with pytest.raises(DefinitionError) as info:
            load_agent(agents_dir, "memo", state)
        assert any("context_window" in p for p in info.value.problems)
        assert any("env.K" in p for p in info.value.problems)
    assert not (state / "validated").exists()
    # A valid file remembered, then its env made invalid: the env is still checked.
    write_agent(agents_dir, "memo", {"provider": "claude", "env": {"K": "v"}})
    load_agent(agents_dir, "memo", state)
    write_agent(agents_dir, "memo", {"provider": "claude", "env": {"K": ["not", "a", "string"]}})
    with pytest.raises(DefinitionError) as info:
        load_agent(agents_dir, "memo", state)
    assert any("env.K" in p for p in info.value.problems)


def test_a_remembered_agent_loads_without_importing_pydantic(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    load_agent(agents_dir, "reviewer", state)
    probe = (
        "import sys; from pathlib import Path; from agentlaunch.definitions.spec import load_agent; "
        f"spec = load_agent(Path({str(agents_dir)!r}), 'reviewer', Path({str(state)!r})); "
        "print(spec.display, 'pydantic' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["Reviewer", "False"]


def test_an_unreadable_memo_folder_only_costs_the_check(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "validated").write_text("a file where the folder should be")
    assert load_agent(agents_dir, "reviewer", state).display == "Reviewer"
    assert load_agent(agents_dir, "reviewer", state).display == "Reviewer"


def test_the_provider_names_without_pydantic_match_the_schema() -> None:
    from typing import get_args

    from agentlaunch.definitions import schemas
    from agentlaunch.definitions.spec import PROVIDERS

    assert get_args(schemas.Provider) == PROVIDERS


def test_the_memo_folder_keeps_only_the_newest_memos(agents_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_yaml, "MEMO_KEEP", 2)
    state = tmp_path / "state"
    for model in ("m1", "m2", "m3"):
        write_agent(agents_dir, "memo", {"provider": "claude", "model": model})
        assert load_agent(agents_dir, "memo", state).model == model
    assert len(list((state / "validated").glob("*.json"))) == 2
