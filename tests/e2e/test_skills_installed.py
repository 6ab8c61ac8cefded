"""An agent's skills reach the real CLI's own skill listing, and only that agent's (fake APIs on 127.0.0.1).

agentlaunch's instructions carry a skills index ("- **NAME**: description");
these tests look past it, at what each CLI itself offers in the captured
request: Claude Code's Skill tool listing ("The following skills are available
for use with the Skill tool", "- NAME: description"), Gemini's "# Available
Agent Skills" block (``<name>NAME</name>`` with the skill's path), Codex's
"## Skills" developer section ("- NAME: description (file: r0/NAME/SKILL.md)"
under a roots table). Two agents
share one git repository; only the one that lists the skill gets it, and the
repository stays clean (``git status --porcelain --ignored`` prints nothing).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlaunch.fakeapi import gemini as gfake
from agentlaunch.fakeapi import responses as cfake
from agentlaunch.fakeapi.anthropic import FakeAnthropic, claude_env, text_reply, tool_reply
from agentlaunch.fakeapi.server import Recorded
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.support.cli_runs import run_cli
from tests.support.git_repo import git, make_repo, run_at_once

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SKILL = "probe-skill"
DESCRIPTION = "PROBE-DESC use this when asked to probe"
BODY = "PROBE-BODY: the steps of the probe skill.\n"
CLAUDE_LISTING = "The following skills are available for use with the Skill tool"


def _skill(agents_dir: Path) -> None:
    folder = agents_dir / "skills" / SKILL
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {SKILL}\ndescription: {DESCRIPTION}\n---\n{BODY}")
    (folder / "helper.sh").write_text("#!/bin/sh\necho probe\n")
    os.chmod(folder / "helper.sh", 0o755)


def _agent(agents_dir: Path, name: str, provider: str, model: str, repo: Path, skills: list[str]) -> None:
    write_agent(
        agents_dir,
        name,
        {
            "provider": provider,
            "model": model,
            "command": str(ensure_cli(provider)),
            "working_dir": str(repo),  # type: ignore[arg-type]
            "skills": skills,
            "startup": "",
        },
        {"soul.md": f"{name.upper()}-SOUL: you are {name}.\n"},
    )


def _raw(req: Recorded) -> str:
    return req.raw.decode()


# -- claude ------------------------------------------------------------------------------


@pytest.fixture
def anthropic_env(isolated_home: Path, agents_dir: Path) -> Iterator[tuple[FakeAnthropic, dict[str, str]]]:
    api = FakeAnthropic()
    with api.serve():
        assert api.server is not None
        env = claude_env(api.server.url, isolated_home, {"CLAUDE_CODE_MAX_RETRIES": "0"})
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        yield api, env


def test_claude_lists_the_agents_skill_in_its_skill_tool_and_runs_it_and_the_other_agent_has_none(
    anthropic_env: tuple[FakeAnthropic, dict[str, str]], agents_dir: Path, tmp_path: Path, isolated_home: Path
) -> None:
    api, env = anthropic_env
    _skill(agents_dir)
    repo = make_repo(tmp_path / "shared-repo")
    _agent(agents_dir, "alpha", "claude", "claude-sonnet-4-5", repo, [SKILL])
    _agent(agents_dir, "beta", "claude", "claude-sonnet-4-5", repo, [])
    api.push(text_reply("from beta"))
    beta = run_cli("run", "beta", "hello", cwd=repo, env=env, timeout=240)
    assert beta.returncode == 0, beta.stderr.decode()
    # alpha calls its skill through Claude Code's own Skill tool: the CLI answers with the skill's body
    api.push(tool_reply("Skill", {"skill": SKILL}), text_reply("from alpha"))
    alpha = run_cli("run", "alpha", "probe it", cwd=repo, env=env, timeout=240)
    assert alpha.returncode == 0, alpha.stderr.decode()
    beta_req, alpha_first, alpha_second = api.message_requests()
    assert "BETA-SOUL" in _raw(beta_req) and "ALPHA-SOUL" in _raw(alpha_first)
    listing = _raw(alpha_first)[_raw(alpha_first).index(CLAUDE_LISTING) :]
    assert f"- {SKILL}: {DESCRIPTION}" in listing.replace("\\n", "\n")  # Claude's own listing, not the **index**
    assert SKILL not in _raw(beta_req) and DESCRIPTION not in _raw(beta_req)
    assert "PROBE-BODY" not in _raw(alpha_first)  # the body arrives only when the skill runs
    assert "PROBE-BODY" in _raw(alpha_second)
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    installed = isolated_home / "state" / "skills" / "alpha" / ".claude" / "skills" / SKILL
    assert (installed / "SKILL.md").read_bytes() == (agents_dir / "skills" / SKILL / "SKILL.md").read_bytes()
    assert os.access(installed / "helper.sh", os.X_OK)
    assert not (isolated_home / "state" / "skills" / "beta").exists()


# -- gemini ------------------------------------------------------------------------------


@pytest.fixture
def gemini_env(isolated_home: Path, agents_dir: Path) -> Iterator[tuple[gfake.GeminiFake, dict[str, str]]]:
    with gfake.GeminiFake() as api:
        # One node process (no relaunch): the tree is not what these tests check (docs/development.md).
        env = gfake.prepare_gemini_home(isolated_home, api.base_url, max_attempts=1, no_relaunch=True)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        yield api, env


def _gemini_system(req: Recorded) -> str:
    return "\n".join(gfake.instruction_texts(req.body))


def test_gemini_lists_the_agents_skill_in_its_available_skills_and_the_other_agent_has_only_the_users(
    gemini_env: tuple[gfake.GeminiFake, dict[str, str]], agents_dir: Path, tmp_path: Path, isolated_home: Path
) -> None:
    api, env = gemini_env
    _skill(agents_dir)
    users = isolated_home / ".gemini" / "skills" / "users-own"
    users.mkdir(parents=True)
    (users / "SKILL.md").write_text("---\nname: users-own\ndescription: USER-SKILL-DESC\n---\nmine\n")
    repo = make_repo(tmp_path / "shared-repo")
    _agent(agents_dir, "alpha", "gemini", "gemini-2.5-pro", repo, [SKILL])
    _agent(agents_dir, "beta", "gemini", "gemini-2.5-pro", repo, [])
    api.script.push(gfake.TextReply("one"), gfake.TextReply("two"))
    for code, _out, err in run_at_once(["alpha", "beta"], "hello", repo, env):
        assert code == 0, err
    requests = api.model_requests
    assert len(requests) == 2
    by_agent = {("alpha" if "ALPHA-SOUL" in _gemini_system(r) else "beta"): r for r in requests}
    alpha, beta = _gemini_system(by_agent["alpha"]), _gemini_system(by_agent["beta"])
    offered = alpha[alpha.index("# Available Agent Skills") :]
    home = isolated_home / "state" / "gemini-homes" / "alpha"
    assert f"<name>{SKILL}</name>" in offered and f"<description>{DESCRIPTION}</description>" in offered
    assert f"<location>{home}/.gemini/skills/{SKILL}/SKILL.md</location>" in offered
    assert "<name>users-own</name>" in offered  # the user's own skills stay
    assert SKILL not in _raw(by_agent["beta"]) and "<name>users-own</name>" in beta
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    assert (home / ".gemini" / "skills" / SKILL).resolve() == (
        isolated_home / "state" / "skills" / "alpha" / ".claude" / "skills" / SKILL
    )
    assert (isolated_home / "state" / "gemini-homes" / "beta" / ".gemini" / "skills").resolve() == users.parent


# -- codex -------------------------------------------------------------------------------

USER_DEV = "USER-DEV: the user's own developer_instructions"


@pytest.fixture
def codex_env(isolated_home: Path, agents_dir: Path) -> Iterator[tuple[cfake.ResponsesFake, dict[str, str]]]:
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(
            isolated_home,
            api.server.url + "/v1",
            request_max_retries=0,
            stream_max_retries=0,
            extra_config="[features]\nplugins = false",
        )
        config = Path(env["CODEX_HOME"]) / "config.toml"
        config.write_text(f"developer_instructions = {USER_DEV!r}\n" + config.read_text())
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        yield api, env


def _codex_skills(req: Recorded) -> str:
    (section,) = [t for t in cfake.message_texts(req.body, "developer") if "## Skills" in t]
    return section


def test_codex_lists_the_agents_skill_in_its_skills_section_and_the_other_agent_has_only_the_users(
    codex_env: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, tmp_path: Path, isolated_home: Path
) -> None:
    api, env = codex_env
    _skill(agents_dir)
    user_codex = Path(env["CODEX_HOME"])
    users = user_codex / "skills" / "users-own"
    users.mkdir(parents=True)
    (users / "SKILL.md").write_text("---\nname: users-own\ndescription: USER-SKILL-DESC\n---\nmine\n")
    repo = make_repo(tmp_path / "shared-repo")
    _agent(agents_dir, "alpha", "codex", "gpt-5.5", repo, [SKILL])
    _agent(agents_dir, "beta", "codex", "gpt-5.5", repo, [])
    api.script.push(cfake.TextReply("one"), cfake.TextReply("two"))
    for code, _out, err in run_at_once(["alpha", "beta"], "hello", repo, env):
        assert code == 0, err
    requests = api.model_requests
    assert len(requests) == 2
    developer = {id(r): "\n".join(cfake.message_texts(r.body, "developer")) for r in requests}
    by_agent = {("alpha" if "ALPHA-SOUL" in developer[id(r)] else "beta"): r for r in requests}
    home = isolated_home / "state" / "codex-homes" / "alpha"
    alpha = _codex_skills(by_agent["alpha"])
    assert f"`r0` = `{home}/skills`" in alpha
    assert f"- {SKILL}: {DESCRIPTION} (file: r0/{SKILL}/SKILL.md)" in alpha  # Codex's own listing, not the **index**
    assert "- users-own: USER-SKILL-DESC" in alpha  # the user's own skills stay
    beta = _codex_skills(by_agent["beta"])
    assert SKILL not in _raw(by_agent["beta"]) and "- users-own: USER-SKILL-DESC" in beta
    assert f"`r0` = `{user_codex}/skills`" in beta  # an agent without skills keeps the user's CODEX_HOME
    for req in requests:
        assert developer[id(req)].count(USER_DEV) == 1  # the user's config.toml, through the link
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    assert (home / "config.toml").is_symlink() and (home / "config.toml").resolve() == user_codex / "config.toml"
    assert (home / "skills" / SKILL).resolve() == isolated_home / "state" / "skills" / "alpha" / ".claude" / "skills" / SKILL
    assert not (isolated_home / "state" / "codex-homes" / "beta").exists()

    # resuming finds the thread in the agent's home, the skill is offered again, and the model reads it
    # from the path Codex gave (its sandbox reads everywhere)
    api.script.push(cfake.ShellCallReply(f"cat {home}/skills/{SKILL}/SKILL.md"), cfake.TextReply("three"))
    again = run_cli("run", "alpha", "--continue", "again", cwd=repo, env=env, timeout=240)
    assert again.returncode == 0, again.stderr.decode()
    third, fourth = api.model_requests[-2:]
    assert any(t.endswith("hello") for t in cfake.user_texts(third.body))
    assert f"- {SKILL}: {DESCRIPTION}" in _codex_skills(third)
    assert "PROBE-BODY" not in _raw(third) and "PROBE-BODY" in _raw(fourth)
    # both threads in the user's own sessions/ (alpha's through its home's link) and the user's own thread index
    assert (home / "sessions").is_symlink() and len(list((user_codex / "sessions").rglob("rollout-*.jsonl"))) == 2
    assert not list(home.glob("*.sqlite")) and (user_codex / "state_5.sqlite").is_file()
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    # the user's own Codex, without agentlaunch, continues the agent's latest thread
    api.script.push(cfake.TextReply("five"))
    mine = subprocess.run(
        [str(ensure_cli("codex")), "exec", "--skip-git-repo-check", "resume", "--last", "from the user"],
        env=env,
        cwd=repo,
        capture_output=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert mine.returncode == 0, mine.stderr.decode()
    assert "PROBE-BODY" in _raw(api.model_requests[-1])  # alpha's conversation, its skill's body included
