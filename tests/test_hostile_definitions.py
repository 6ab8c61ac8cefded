"""Hostile agent definitions: each ends as a `FILE: FIELD: message` definition error (exit 3), quickly."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.definitions import agent_yaml, bounded_read
from agentlaunch.definitions.spec import check_name, load_agent
from agentlaunch.errors import DefinitionError
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess


def alias_bomb(levels: int = 9, field: str = "bundles") -> str:
    """The classic: nine lists of nine aliases to the one before, about 400 bytes, 9**9 strings expanded."""
    lines = ["provider: fake", 'x0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels - 1):
        lines.append(f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"{field}: [" + ",".join([f"*a{levels - 2}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def problems_of(agents_dir: Path, name: str, state_dir: Path | None = None) -> list[str]:
    with pytest.raises(DefinitionError) as info:
        load_agent(agents_dir, name, state_dir)
    return info.value.problems


@pytest.mark.parametrize("field", ["bundles", "unknown_key", "env"])
def test_an_alias_bomb_is_refused_before_anything_expands_it(agents_dir: Path, tmp_path: Path, field: str) -> None:
    write_agent(agents_dir, "bomb", alias_bomb(field=field))
    (problem,) = problems_of(agents_dir, "bomb", tmp_path / "state")  # with a state dir: the memo path is taken too
    assert problem.startswith(f"{agents_dir / 'bomb' / 'agent.yaml'}: yaml: line 7, column ")  # passes the bound there
    assert "aliases expand this document beyond 2,000,000 nodes and characters" in problem


def test_an_alias_bomb_through_run_is_exit_3_within_a_memory_cap(agents_dir: Path, tmp_path: Path) -> None:
    """`run` once grew past 1.4 GB on this file; under a 600 MB address-space cap it must end cleanly."""
    write_agent(agents_dir, "bomb", alias_bomb(field="unknown_key"))
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20)); "
        "from agentlaunch.entry import main; sys.argv = ['agentlaunch'] + sys.argv[1:]; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "run", "bomb", "hi", "--agents-dir", str(agents_dir), "--working-dir", str(tmp_path)],
        capture_output=True,
        timeout=120,
        env={**os.environ, "AGENTLAUNCH_NO_PRESPAWN": "1"},
    )
    assert result.returncode == 3, result.stderr
    assert b"alias bomb" in result.stderr and b"Traceback" not in result.stderr


def test_small_aliases_are_still_fine(agents_dir: Path) -> None:
    write_agent(agents_dir, "alias", "provider: fake\naccounts: &acc [a, b]\nallowed_tools: *acc\n")
    assert load_agent(agents_dir, "alias").allowed_tools == ("a", "b")


@pytest.mark.parametrize("opening", ["[", "{a: "])
def test_nesting_20000_deep_is_a_definition_error_not_recursion(agents_dir: Path, opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    write_agent(agents_dir, "deep", "provider: fake\nx: " + opening * 20000 + "1" + closing * 20000 + "\n")
    (problem,) = problems_of(agents_dir, "deep")
    assert problem.startswith(f"{agents_dir / 'deep' / 'agent.yaml'}: yaml: line 2, column ")
    assert problem.endswith("nested deeper than 64 levels")


def test_nesting_deep_via_the_cli_is_exit_3(agents_dir: Path, tmp_path: Path) -> None:
    write_agent(agents_dir, "deep", "provider: fake\nx: " + "[" * 20000 + "]" * 20000 + "\n")
    result = run_cli_inprocess("validate", "deep", "--agents-dir", str(agents_dir), cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 3 and b"nested deeper than 64 levels" in output
    assert b"RecursionError" not in output


@pytest.mark.parametrize(
    ("text", "line", "key", "first"),
    [
        ("provider: fake\nmodel: a\nprovider: claude\n", 3, "provider", 1),
        ("provider: fake\nenv:\n  A: '1'\n  B: '2'\n  A: '3'\n", 5, "A", 3),
        ("provider: fake\nenv: {A: '1', A: '2'}\n", 2, "A", 2),
    ],
)
def test_a_duplicate_key_is_an_error_naming_key_and_lines(agents_dir: Path, text: str, line: int, key: str, first: int) -> None:
    write_agent(agents_dir, "dup", text)
    (problem,) = problems_of(agents_dir, "dup")
    assert f"agent.yaml: yaml: line {line}, column " in problem
    assert problem.endswith(f"duplicate key {key!r} (first given on line {first})")
    assert "'1'" not in problem.split("duplicate key")[0]


def test_duplicate_keys_in_skill_front_matter(agents_dir: Path) -> None:
    skill = agents_dir / "skills" / "dupe"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: dupe\ndescription: one\ndescription: two\n---\nbody\n")
    write_agent(agents_dir, "sk", {"provider": "fake", "skills": ["dupe"]})
    (problem,) = problems_of(agents_dir, "sk")
    assert "SKILL.md: front matter: invalid YAML" in problem and "duplicate key 'description'" in problem


def _special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless bytes
        except PermissionError:
            pytest.skip("creating a device node needs root")  # the FIFO and directory cases still run


KIND_WORDS = {"fifo": "is a FIFO (named pipe), not a regular file", "directory": "is a directory", "device": "is a device"}


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
@pytest.mark.parametrize("part", ["soul", "instructions", "bundle", "skill", "agent.yaml"])
def test_a_part_that_is_not_a_regular_file_is_refused_without_blocking(agents_dir: Path, kind: str, part: str) -> None:
    folder = write_agent(agents_dir, "odd", {"provider": "fake", "soul": "soul.md", "bundles": ["odd"], "skills": ["odd"]})
    (agents_dir / "bundles" / "odd.md").write_text("bundle\n")
    (agents_dir / "skills" / "odd").mkdir()
    (agents_dir / "skills" / "odd" / "SKILL.md").write_text("---\nname: odd\ndescription: d\n---\n")
    (folder / "soul.md").write_text("soul\n")
    target = {
        "soul": folder / "soul.md",
        "instructions": folder / "agent.md",
        "bundle": agents_dir / "bundles" / "odd.md",
        "skill": agents_dir / "skills" / "odd" / "SKILL.md",
        "agent.yaml": folder / "agent.yaml",
    }[part]
    target.unlink(missing_ok=True)
    _special(target, kind)
    problems = problems_of(agents_dir, "odd")  # a FIFO would block here forever if it were opened plainly
    assert any(p.startswith(f"{target}: ") and KIND_WORDS[kind] in p for p in problems), problems


def test_a_part_over_the_size_limit_is_refused_without_reading_it(agents_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_agent(agents_dir, "big", {"provider": "fake"})
    with open(folder / "soul.md", "wb") as fh:
        fh.truncate(200 << 20)  # sparse: 200 MiB long, nothing on disk
    (problem,) = problems_of(agents_dir, "big")
    assert problem == f"{folder / 'soul.md'}: soul: 200 MiB is larger than the 4 MiB limit for one file"
    monkeypatch.setattr(agent_yaml, "YAML_LIMIT", 100)
    (folder / "agent.yaml").write_text("provider: fake\n" + "# padding\n" * 20)
    (problem,) = problems_of(agents_dir, "big")
    assert problem.endswith("agent.yaml: agent.yaml: 215 bytes is larger than the 100 bytes limit for one file")


def test_a_part_at_the_limit_is_read(agents_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_read, "PART_LIMIT", 1000)
    monkeypatch.setattr(bounded_read.read_text, "__defaults__", (1000,))
    folder = write_agent(agents_dir, "edge", {"provider": "fake"}, {"soul.md": "x" * 1000})
    assert load_agent(agents_dir, "edge").soul is not None
    (folder / "soul.md").write_text("x" * 1001)
    assert "1001 bytes is larger than the 1000 bytes limit" in problems_of(agents_dir, "edge")[0]


SECRET = "sk-ant-api03-SECRETSECRETSECRET"


@pytest.mark.parametrize(
    "env",
    [
        f"env: {{KEY: ['{SECRET}']}}",
        f"env: {{KEY: {{nested: '{SECRET}'}}}}",
        f"env: '{SECRET}'",
        f"env: [{SECRET}]",
        f"env: {{KEY: 12345, OTHER: '{SECRET}'}}",
    ],
)
def test_an_env_error_names_the_key_never_the_value(agents_dir: Path, tmp_path: Path, env: str) -> None:
    write_agent(agents_dir, "leaky", f"provider: fake\n{env}\n")
    problems = problems_of(agents_dir, "leaky")
    assert problems and all("env" in p for p in problems)
    assert not any(SECRET in p or "12345" in p for p in problems), problems
    for command in (["validate", "leaky"], ["render", "leaky", "--stdout"], ["run", "leaky", "hi"]):
        result = run_cli(*command, "--agents-dir", str(agents_dir), cwd=tmp_path)
        assert result.returncode == 3, result.stderr
        assert SECRET.encode() not in result.stderr + result.stdout
        assert b"env" in result.stderr + result.stdout


def test_other_bad_values_are_still_shown_but_short(agents_dir: Path) -> None:
    write_agent(agents_dir, "long", {"provider": "fake", "model": ["m" * 5000]})
    (problem,) = problems_of(agents_dir, "long")
    assert "model: Input should be a valid string (got ['mmmm" in problem and len(problem) < 400


@pytest.mark.parametrize("name", ["s3\n", "demo\n", "a\r", "a b", "", "-x", "a/b", "..", "a..b", "é"])
def test_agent_names_are_matched_whole(name: str) -> None:
    assert check_name(name, "agent") is not None


def test_an_agent_name_with_a_trailing_newline_is_not_found_as_another(agents_dir: Path) -> None:
    with pytest.raises(DefinitionError, match="agent name 'demo\\\\n' is not allowed"):
        load_agent(agents_dir, "demo\n")


@pytest.mark.parametrize("name", ["s3\n", "s3\r\n", "\ns3", "s3 ", "", "x" * 65, "s3\x00", "ş3"])
def test_tmux_session_and_socket_names_are_matched_whole(name: str) -> None:
    from agentlaunch.errors import UsageError
    from agentlaunch.live.tmux import check_name as check_tmux_name

    with pytest.raises(UsageError, match="is not allowed"):
        check_tmux_name(name, "tmux session")
    assert check_tmux_name("s3", "tmux session") == "s3" and check_tmux_name("x" * 64, "tmux socket") == "x" * 64


@pytest.mark.parametrize("option", ["--session", "--socket"])
def test_tmux_commands_refuse_a_name_with_a_trailing_newline(agents_dir: Path, tmp_path: Path, option: str) -> None:
    private = ["--socket", f"h5-{os.getpid()}"] if option == "--session" else []
    down = ["tmux", "down", "s3\n"] if option == "--session" else ["tmux", "down", option, "s3\n"]
    for args in (["tmux", "up", "demo", "--agents-dir", str(agents_dir), option, "s3\n", *private], [*down, *private]):
        result = run_cli_inprocess(*args, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert b"name 's3\\n' is not allowed" in result.stderr


@pytest.mark.parametrize("case", ["bomb", "deep", "fifo"])
def test_a_hostile_pricing_yaml_is_a_definition_error(tmp_path: Path, case: str) -> None:
    from agentlaunch.usage.overrides import load_pricing_file

    path = tmp_path / "pricing.yaml"
    if case == "bomb":
        path.write_text(alias_bomb().replace("provider: fake\n", "").replace("bundles:", "m: {input: 1, output: 1, x:") + "}")
    elif case == "deep":
        path.write_text("m: " + "[" * 20000 + "]" * 20000 + "\n")
    else:
        os.mkfifo(path)
    with pytest.raises(DefinitionError) as info:
        load_pricing_file(path)
    expected = {"bomb": "alias bomb", "deep": "nested deeper than 64 levels", "fifo": "is a FIFO (named pipe)"}[case]
    assert info.value.message.startswith(str(path)) and expected in info.value.message
    assert "Errno" not in info.value.message


def test_the_early_spawn_never_blocks_or_expands_a_hostile_agent_yaml(tmp_path: Path) -> None:
    """prespawn re-reads agent.yaml's env before the full launch: a FIFO or an alias bomb there is passed over."""
    from agentlaunch.launch.early.early_plans import env_of

    path = tmp_path / "agent.yaml"
    os.mkfifo(path)
    assert env_of(path, {}) is None
    path.unlink()
    bomb = alias_bomb(levels=6).replace("bundles:", "env: {K:") + "}"  # small enough to load, huge as str()
    path.write_text(bomb)
    assert env_of(path, {}) is None  # not plain strings: left to the full launch to report
    path.write_text(alias_bomb())
    assert env_of(path, {}) is None
    path.write_text("provider: fake\nenv: {A: b}\n")
    assert env_of(path, {}) == {"A": "b"}
