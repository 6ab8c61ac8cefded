"""Codex's `delivery: developer-instructions`: the TOML string, the user's own developer_instructions, the argv limit."""

from __future__ import annotations

import tomllib
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlaunch.errors import DefinitionError
from agentlaunch.launch.placement import instructions_path, place_instructions, with_placement_argv
from agentlaunch.providers.codex_instructions import (
    MAX_ARG_STRLEN,
    developer_instructions_argv,
    selected_profile,
    toml_basic_string,
    user_developer_instructions,
)
from agentlaunch.providers.descriptors import CODEX
from testbed.agent_files import write_agent

CONTROL = [chr(c) for c in range(0x20)] + ["\x7f"]


def _loads(text: str) -> str:
    value = tomllib.loads("v = " + toml_basic_string(text))["v"]
    assert isinstance(value, str)
    return value


@pytest.mark.parametrize("ch", CONTROL, ids=[f"U+{ord(c):04X}" for c in CONTROL])
def test_every_control_character_round_trips_and_is_escaped(ch: str) -> None:
    encoded = toml_basic_string(f"a{ch}b")
    assert ch not in encoded  # no raw control character: Codex would fall back to the raw text
    assert _loads(f"a{ch}b") == f"a{ch}b"


@pytest.mark.parametrize(
    "text",
    ['say "hi"', "back\\slash", '"""', "'''", "\\u0041 stays text", "trailing backslash \\", "ünïcødé ✓ 🚀 \u2028", ""],
)
def test_quotes_backslashes_and_non_ascii_round_trip(text: str) -> None:
    encoded = toml_basic_string(text)
    assert encoded.startswith('"') and encoded.endswith('"') and "\n" not in encoded
    assert _loads(text) == text


def test_the_short_escapes_are_used_where_toml_has_them() -> None:
    assert toml_basic_string('\b\t\n\f\r"\\') == '"\\b\\t\\n\\f\\r\\"\\\\"'
    assert toml_basic_string("\x00\x1f\x7f") == '"\\u0000\\u001F\\u007F"'


@given(st.text())
def test_any_text_round_trips_through_tomllib(text: str) -> None:
    assert _loads(text) == text


@given(st.text(alphabet=st.sampled_from([*CONTROL, '"', "\\", "'", "x", "é", "\U0001f600"])))
def test_hostile_alphabets_round_trip_as_one_line(text: str) -> None:
    encoded = toml_basic_string(text)
    assert not any(c in encoded for c in CONTROL)
    assert _loads(text) == text


# -- the user's own developer_instructions


def _home(tmp_path: Path, config: str, **profiles: str) -> dict[str, str]:
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config, "utf-8")
    for name, text in profiles.items():
        (home / f"{name}.config.toml").write_text(text, "utf-8")
    return {"CODEX_HOME": str(home), "HOME": str(tmp_path / "nohome")}


def test_the_users_top_level_instructions_come_first_with_a_blank_line(tmp_path: Path) -> None:
    env = _home(tmp_path, 'model = "x"\ndeveloper_instructions = "Be terse."\n')
    (flag, arg) = developer_instructions_argv("You are Probe.\n", user_developer_instructions(env, []), tmp_path / "agent.yaml")
    assert flag == "-c" and arg.startswith("developer_instructions=")
    assert tomllib.loads(arg)["developer_instructions"] == "Be terse.\n\nYou are Probe.\n"


def test_a_selected_profile_wins_over_the_top_level(tmp_path: Path) -> None:
    env = _home(tmp_path, 'developer_instructions = "top"\n', work='developer_instructions = "from profile"\n')
    assert user_developer_instructions(env, ["-p", "work"]) == "from profile"
    assert user_developer_instructions(env, ["--profile=work"]) == "from profile"
    assert user_developer_instructions(env, ["--profile", "missing"]) == "top"
    assert user_developer_instructions(env, []) == "top"


def test_a_legacy_profile_table_selected_by_profile_key(tmp_path: Path) -> None:
    env = _home(tmp_path, 'profile = "old"\ndeveloper_instructions = "top"\n[profiles.old]\ndeveloper_instructions = "legacy"\n')
    assert user_developer_instructions(env, []) == "legacy"


def test_no_config_means_only_the_agents_text(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path / "none")}
    assert user_developer_instructions(env, []) is None
    (_, arg) = developer_instructions_argv("agent", user_developer_instructions(env, []), tmp_path / "agent.yaml")
    assert tomllib.loads(arg)["developer_instructions"] == "agent"


def test_home_codex_is_read_when_codex_home_is_unset(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('developer_instructions = "mine"\n')
    assert user_developer_instructions({"HOME": str(tmp_path)}, []) == "mine"


@pytest.mark.parametrize("config", ['developer_instructions = "unterminated\n', "[[[", "x = 1\nx = 2\n"])
def test_a_malformed_config_is_a_definition_error_naming_the_file(tmp_path: Path, config: str) -> None:
    env = _home(tmp_path, config)
    with pytest.raises(DefinitionError) as err:
        user_developer_instructions(env, [])
    assert str(Path(env["CODEX_HOME"]) / "config.toml") in err.value.message
    assert "not valid TOML" in err.value.message and err.value.exit_code == 3


def test_a_malformed_profile_file_names_that_file(tmp_path: Path) -> None:
    env = _home(tmp_path, "", bad="= nope")
    with pytest.raises(DefinitionError, match=r"bad\.config\.toml"):
        user_developer_instructions(env, ["-p", "bad"])


def test_a_non_string_value_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match="must be a string"):
        user_developer_instructions(_home(tmp_path, "developer_instructions = 3\n"), [])


def test_selected_profile_takes_the_last_one() -> None:
    assert selected_profile(["-p", "a", "--profile", "b"]) == "b"
    assert selected_profile(["-m", "x"]) is None
    assert selected_profile(["-p"]) is None


# -- the argv limit


def test_an_argument_over_the_kernel_limit_is_refused_with_its_size(tmp_path: Path) -> None:
    env = {"CODEX_HOME": str(tmp_path / "none")}
    fits = "x" * (MAX_ARG_STRLEN - len('developer_instructions=""') - 1)
    developer_instructions_argv(fits, user_developer_instructions(env, []), tmp_path / "agent.yaml")
    with pytest.raises(DefinitionError) as err:
        developer_instructions_argv(fits + "x", user_developer_instructions(env, []), tmp_path / "agent.yaml")
    assert "131,073 bytes" in err.value.message and "131,072" in err.value.message
    # the escaped size counts: 22,000 bytes of U+0001 take 132,000 bytes as `\u0001`
    with pytest.raises(DefinitionError):
        developer_instructions_argv("\x01" * 22_000, user_developer_instructions(env, []), tmp_path / "agent.yaml")


# -- placement


def test_codex_defaults_to_developer_instructions() -> None:
    assert CODEX.default_delivery == "developer-instructions"
    assert CODEX.deliveries == ("developer-instructions", "file")


def test_placement_keeps_agents_md_in_the_state_dir_and_writes_nothing_in_the_working_dir(tmp_path: Path) -> None:
    from agentlaunch.definitions.spec import load_agent

    agents, work, state = tmp_path / "agents", tmp_path / "work", tmp_path / "state"
    work.mkdir()
    write_agent(agents, "coder", {"provider": "codex"}, {"soul.md": 'You are "Coder" \\ \x7f.\n'})
    spec = load_agent(agents, "coder")
    env = _home(tmp_path, 'developer_instructions = "user first"\n')
    placed = place_instructions(spec, work, state, date(2026, 1, 1), env=env)
    assert list(work.iterdir()) == []
    assert placed.path == instructions_path(spec, work, state, "AGENTS.md") == state / "system-prompts" / "coder" / "AGENTS.md"
    assert placed.path.read_text("utf-8") == placed.rendered.text
    (flag, arg) = placed.argv
    assert tomllib.loads(arg)["developer_instructions"] == "user first\n\n" + placed.rendered.text
    assert with_placement_argv(["codex", "exec", "hi"], placed.argv) == ["codex", "-c", arg, "exec", "hi"]


def test_placement_with_a_malformed_user_config_writes_nothing(tmp_path: Path) -> None:
    from agentlaunch.definitions.spec import load_agent

    agents, work, state = tmp_path / "agents", tmp_path / "work", tmp_path / "state"
    work.mkdir()
    write_agent(agents, "coder", {"provider": "codex"})
    with pytest.raises(DefinitionError, match="config.toml"):
        place_instructions(load_agent(agents, "coder"), work, state, date(2026, 1, 1), env=_home(tmp_path, "[oops"))
    assert not (state / "system-prompts" / "coder" / "AGENTS.md").exists()


REMEMBERED = """
import sys
from pathlib import Path
from agentlaunch.providers.codex_instructions import user_developer_instructions
env, flags, state = {"CODEX_HOME": sys.argv[1], "HOME": sys.argv[1]}, sys.argv[3:], Path(sys.argv[2])
print(repr(user_developer_instructions(env, flags, state)), "tomllib" in sys.modules)
"""


def _remembered(tmp_path: Path, *flags: str) -> tuple[str, str]:
    import subprocess
    import sys

    argv = [sys.executable, "-c", REMEMBERED, str(tmp_path / "codex-home"), str(tmp_path / "state"), *flags]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer, parsed = done.stdout.strip().rsplit(" ", 1)
    return answer, parsed


def test_an_unchanged_config_is_answered_from_the_state_dir_without_parsing_toml(tmp_path: Path) -> None:
    _home(tmp_path, 'developer_instructions = "top"\n', work='developer_instructions = "from profile"\n')
    assert _remembered(tmp_path) == ("'top'", "True")  # the first launch parses
    assert _remembered(tmp_path) == ("'top'", "False")  # the next one is told
    assert _remembered(tmp_path, "-p", "work") == ("'from profile'", "True")  # another profile: its own answer
    assert _remembered(tmp_path, "-p", "work") == ("'from profile'", "False")
    (tmp_path / "codex-home" / "work.config.toml").write_text('model = "y"\n')
    assert _remembered(tmp_path, "-p", "work") == ("'top'", "True")  # the profile file changed: parsed again
    (tmp_path / "codex-home" / "config.toml").write_text('model = "x"\n')
    assert _remembered(tmp_path) == ("None", "True")
    assert _remembered(tmp_path) == ("None", "False")


def test_a_config_that_became_malformed_is_refused_on_every_launch(tmp_path: Path) -> None:
    env = _home(tmp_path, 'developer_instructions = "top"\n')
    state = tmp_path / "state"
    assert user_developer_instructions(env, [], state) == "top"
    (tmp_path / "codex-home" / "config.toml").write_text("developer_instructions = \n")
    for _ in range(2):
        with pytest.raises(DefinitionError, match="not valid TOML"):
            user_developer_instructions(env, [], state)
    (tmp_path / "codex-home" / "config.toml").write_text('developer_instructions = "top"\n')
    assert user_developer_instructions(env, [], state) == "top"


def test_a_memo_that_is_not_an_answer_is_ignored(tmp_path: Path) -> None:
    env = _home(tmp_path, 'developer_instructions = "top"\n')
    state = tmp_path / "state"
    assert user_developer_instructions(env, [], state) == "top"
    (memo,) = (state / "validated").glob("codex-*.json")
    for garbage in ("{}", '{"developer_instructions": 3}', "[]", "not json"):
        memo.write_text(garbage)
        assert user_developer_instructions(env, [], state) == "top"
