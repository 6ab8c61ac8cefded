"""Codex's default `delivery: developer-instructions` end to end on the real Codex CLI (fake Responses API on 127.0.0.1).

The agent's text reaches Codex as ``-c developer_instructions=...`` (a developer
message after Codex's base prompt), behind the user's own developer_instructions;
nothing is written into the working directory, so agents share a repository and
the repository's own AGENTS.md keeps arriving as Codex reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.server import Recorded
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.support.cli_runs import run_cli, run_cli_inprocess
from tests.support.git_repo import git, make_repo, run_at_once

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

USER_OWN = "USER-OWN: always answer in English."
HOSTILE = (
    "Hostile soul: \"quoted\" 'single' \"\"\" triple ''' \\ back\\slash \\n not-a-newline \\u0041\n"
    "controls: \x01\x02\x07\x08\x0b\x0c\x1b\x1f\x7f tab\there\n"  # (a CR in soul.md is read as a newline, like any text file)
    "non-ASCII: ünïcødé ✓ 🚀 \u2028 end\n"
)


@pytest.fixture
def codex(isolated_home: Path, agents_dir: Path) -> Iterator[tuple[cfake.ResponsesFake, dict[str, str]]]:
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(
            isolated_home,
            api.server.url + "/v1",
            request_max_retries=0,
            stream_max_retries=0,
            extra_config="[features]\nplugins = false",
        )
        config = Path(env["CODEX_HOME"]) / "config.toml"  # the user's own, at the top level
        config.write_text(f"developer_instructions = {USER_OWN!r}\n" + config.read_text())
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        yield api, env


def _agent(agents_dir: Path, name: str, workdir: Path, soul: str) -> None:
    write_agent(
        agents_dir,
        name,
        {"provider": "codex", "model": "gpt-5.5", "command": str(ensure_cli("codex")), "working_dir": str(workdir)},
        {"soul.md": soul},
    )


def _developer(req: Recorded) -> str:
    return "\n".join(cfake.message_texts(req.body, "developer"))


def test_two_agents_at_once_in_one_repository_each_get_only_their_own_instructions(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, tmp_path: Path
) -> None:
    api, env = codex
    repo = make_repo(tmp_path / "shared-repo", {"AGENTS.md": "REPO-OWN: the team's committed AGENTS.md\n"})
    _agent(agents_dir, "alpha", repo, "ALPHA-SOUL: you are Alpha.\n")
    _agent(agents_dir, "beta", repo, "BETA-SOUL: you are Beta.\n")
    api.script.push(cfake.TextReply("one"), cfake.TextReply("two"))
    for code, out, err in run_at_once(["alpha", "beta"], "hello", repo, env):
        assert code == 0, err
        assert out.strip() in ("one", "two")
    requests = api.model_requests
    assert len(requests) == 2
    by_agent = {("alpha" if "ALPHA-SOUL" in _developer(r) else "beta"): r for r in requests}
    assert set(by_agent) == {"alpha", "beta"}
    for mine, other in (("alpha", "BETA-SOUL"), ("beta", "ALPHA-SOUL")):
        dev = _developer(by_agent[mine])
        assert other not in dev and other not in str(by_agent[mine].body)
        assert USER_OWN in dev and dev.index(USER_OWN) < dev.index(f"{mine.upper()}-SOUL")  # the user's own come first
        agents_md = cfake.agents_md_texts(by_agent[mine].body)
        assert len(agents_md) == 1 and "REPO-OWN" in agents_md[0]  # the repository's file, as Codex reads it
    assert (repo / "AGENTS.md").read_text() == "REPO-OWN: the team's committed AGENTS.md\n"
    assert git(repo, "status", "--porcelain", "--ignored") == ""


def test_resume_keeps_the_instructions_once(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, workdir: Path
) -> None:
    api, env = codex
    _agent(agents_dir, "alpha", workdir, "ALPHA-SOUL: you are Alpha.\n")
    api.script.push(cfake.TextReply("first"), cfake.TextReply("second"))
    assert run_cli_inprocess("run", "alpha", "one", cwd=workdir, env=env, timeout=240).returncode == 0
    again = run_cli_inprocess("run", "alpha", "--continue", "two", cwd=workdir, env=env, timeout=240)
    assert again.returncode == 0, again.stderr.decode()
    first, second = api.model_requests
    assert cfake.user_texts(second.body)[-1].endswith("two")  # the same thread, continued by `codex exec resume`
    assert any(t.endswith("one") for t in cfake.user_texts(second.body))
    for req in (first, second):
        assert _developer(req).count("ALPHA-SOUL") == 1
        assert _developer(req).count(USER_OWN) == 1
    assert list(workdir.iterdir()) == []  # not a git repository: works, and nothing is written there


def test_a_toml_hostile_text_arrives_byte_exact(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, workdir: Path, isolated_home: Path
) -> None:
    api, env = codex
    _agent(agents_dir, "alpha", workdir, HOSTILE)
    api.script.push(cfake.TextReply("ok"))
    done = run_cli_inprocess("run", "alpha", "hi", cwd=workdir, env=env, timeout=240)
    assert done.returncode == 0, done.stderr.decode()
    (kept,) = (isolated_home / "state").rglob("system-prompts/alpha/AGENTS.md")
    rendered = kept.read_text("utf-8")
    assert HOSTILE in rendered
    (req,) = api.model_requests
    texts = cfake.message_texts(req.body, "developer")
    assert USER_OWN + "\n\n" + rendered in texts  # byte-exact: no quotes, no raw-TOML fallback
    assert not any(t.startswith('"') and "Hostile soul" in t for t in texts)


def test_instructions_over_the_argument_limit_are_refused_with_exit_3(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, workdir: Path
) -> None:
    api, env = codex
    _agent(agents_dir, "alpha", workdir, "big " * 34_000)
    done = run_cli("run", "alpha", "hi", cwd=workdir, env=env, timeout=120)
    assert done.returncode == 3, done.stderr.decode()
    err = done.stderr.decode()
    assert "bytes per argument" in err and "131,072" in err
    assert api.model_requests == [] and list(workdir.iterdir()) == []


def test_a_malformed_user_config_is_exit_3_naming_the_file(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, workdir: Path
) -> None:
    api, env = codex
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.write_text(config.read_text() + "\n[broken\n")
    _agent(agents_dir, "alpha", workdir, "ALPHA-SOUL\n")
    done = run_cli("run", "alpha", "hi", cwd=workdir, env=env, timeout=120)
    assert done.returncode == 3, done.stderr.decode()
    assert str(config) in done.stderr.decode().replace("\n", "") and "not valid TOML" in done.stderr.decode()
    assert api.model_requests == []


def test_a_changed_soul_is_reported_as_the_soul_not_also_as_changed_flags(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, workdir: Path
) -> None:
    api, env = codex
    _agent(agents_dir, "alpha", workdir, "ALPHA-SOUL: you are Alpha.\n")
    api.script.push(cfake.TextReply("a"), cfake.TextReply("b"), cfake.TextReply("c"))
    assert run_cli("run", "alpha", "one", cwd=workdir, env=env, timeout=240).returncode == 0
    (agents_dir / "alpha" / "soul.md").write_text("ALPHA-SOUL: you are Alpha, changed.\n")
    second = run_cli("run", "alpha", "two", cwd=workdir, env=env, timeout=240)
    assert second.returncode == 0, second.stderr.decode()
    (line,) = [x for x in second.stderr.decode().splitlines() if "prefix changed" in x]
    assert "(soul)" in line and "flags" not in line
    config = Path(env["CODEX_HOME"]) / "config.toml"  # the user's own instructions are part of the argument
    config.write_text(config.read_text().replace(USER_OWN, "USER-OWN: changed."))
    third = run_cli("run", "alpha", "three", cwd=workdir, env=env, timeout=240)
    (line,) = [x for x in third.stderr.decode().splitlines() if "prefix changed" in x]
    assert "(flags)" in line and "soul" not in line
