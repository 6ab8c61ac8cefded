"""Installing an agent's skills into the state directory: the same bytes each launch, updates, removals, bad input."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import pytest

from agentlaunch.definitions import skills_install
from agentlaunch.definitions.skills_install import install_skills, skills_folder, skills_root
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError, StateError
from agentlaunch.launch.placement import place_instructions
from testbed.agent_files import write_agent
from tests.support.cli_runs import run_cli, run_cli_inprocess


def _skill(agents: Path, folder: str, name: str | None = None, body: str = "Do the thing.\n") -> Path:
    path = agents / "skills" / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\nname: {name or folder}\ndescription: the {folder} skill\n---\n{body}")
    return path


def _install(agents: Path, state: Path, skills: list[str], agent: str = "al") -> skills_install.InstalledSkills | None:
    write_agent(agents, agent, {"provider": "claude", "skills": skills})
    spec = load_agent(agents, agent)
    return install_skills(spec.skills, spec.agents_dir, state, agent)


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    root = tmp_path / "agents"
    root.mkdir()
    return root


def test_each_skill_folder_is_copied_byte_for_byte_with_its_executable_bits(agents: Path, tmp_path: Path) -> None:
    src = _skill(agents, "probe")
    (src / "scripts").mkdir()
    (src / "scripts" / "run.sh").write_bytes(b"#!/bin/sh\necho \x00binary-ok\n")
    os.chmod(src / "scripts" / "run.sh", 0o755)
    (src / "notes.txt").write_text("plain\n")
    installed = _install(agents, tmp_path / "state", ["probe"])
    assert installed is not None and installed.changed and installed.names == ("probe",)
    assert installed.root == tmp_path / "state" / "skills" / "al"
    dest = installed.folder / "probe"
    assert dest == skills_folder(tmp_path / "state", "al") / "probe" == installed.root / ".claude" / "skills" / "probe"
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "SKILL.md",
        "notes.txt",
        "scripts/run.sh",
    ]
    for rel in ("SKILL.md", "notes.txt", "scripts/run.sh"):
        assert (dest / rel).read_bytes() == (src / rel).read_bytes()
    assert os.access(dest / "scripts" / "run.sh", os.X_OK) and not os.access(dest / "notes.txt", os.X_OK)
    assert installed.links() == {"probe": dest}


def test_a_second_launch_with_the_same_skills_changes_nothing(agents: Path, tmp_path: Path) -> None:
    _skill(agents, "probe")
    first = _install(agents, tmp_path / "state", ["probe"])
    assert first is not None
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in first.root.rglob("*")}
    again = _install(agents, tmp_path / "state", ["probe"])
    assert again is not None and not again.changed
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in again.root.rglob("*")} == before


def test_a_changed_skill_is_replaced_a_dropped_one_removed_and_an_edited_copy_restored(agents: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _skill(agents, "one")
    _skill(agents, "two")
    installed = _install(agents, state, ["one", "two"])
    assert installed is not None
    (installed.folder / "one" / "SKILL.md").write_text("edited by the model\n")  # the CLI's copy is not the source
    (installed.folder / "one" / "extra.txt").write_text("left behind\n")
    _skill(agents, "two", body="Version two.\n")
    again = _install(agents, state, ["one", "two"])
    assert again is not None and again.changed
    assert (again.folder / "one" / "SKILL.md").read_bytes() == (agents / "skills" / "one" / "SKILL.md").read_bytes()
    assert not (again.folder / "one" / "extra.txt").exists()
    assert (again.folder / "two" / "SKILL.md").read_text().endswith("Version two.\n")
    fewer = _install(agents, state, ["two"])
    assert fewer is not None and fewer.changed
    assert sorted(p.name for p in fewer.folder.iterdir()) == ["two"]
    assert sorted(p.name for p in fewer.root.iterdir()) == [".claude"]  # no temporary folders left
    assert _install(agents, state, []) is None
    assert not skills_root(state, "al").exists()


def test_only_this_agents_skills_are_installed_in_its_own_folder(agents: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _skill(agents, "mine")
    _skill(agents, "theirs")
    _install(agents, state, ["mine"], agent="al")
    _install(agents, state, ["theirs"], agent="bo")
    assert [p.name for p in skills_folder(state, "al").iterdir()] == ["mine"]
    assert [p.name for p in skills_folder(state, "bo").iterdir()] == ["theirs"]


def test_a_symlink_that_leads_outside_the_agents_directory_is_refused(agents: Path, tmp_path: Path) -> None:
    src = _skill(agents, "leaky")
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours\n")
    (src / "data.txt").symlink_to(secret)
    with pytest.raises(DefinitionError) as caught:
        _install(agents, tmp_path / "state", ["leaky"])
    message = caught.value.message
    assert f"{src / 'data.txt'}: skill leaky: a symlink to {secret}, outside the agents directory" in message
    assert not (tmp_path / "state" / "skills" / "al").exists()  # refused before anything is written


def test_a_symlink_inside_the_agents_directory_is_copied_as_the_file_it_names(agents: Path, tmp_path: Path) -> None:
    src = _skill(agents, "linked")
    (agents / "shared.md").write_text("shared text\n")
    (src / "shared.md").symlink_to(agents / "shared.md")
    installed = _install(agents, tmp_path / "state", ["linked"])
    assert installed is not None
    copy = installed.folder / "linked" / "shared.md"
    assert not copy.is_symlink() and copy.read_text() == "shared text\n"


def test_a_symlinked_folder_and_a_fifo_in_a_skill_are_refused(agents: Path, tmp_path: Path) -> None:
    src = _skill(agents, "odd")
    (agents / "elsewhere").mkdir()
    (src / "sub").symlink_to(agents / "elsewhere")
    with pytest.raises(DefinitionError, match="skill odd: a symlinked folder"):
        _install(agents, tmp_path / "state", ["odd"])
    (src / "sub").unlink()
    os.mkfifo(src / "pipe")
    with pytest.raises(DefinitionError, match=r"pipe: skill odd: is a FIFO \(named pipe\), not a regular file"):
        _install(agents, tmp_path / "state", ["odd"])


def test_an_unreadable_file_is_a_definition_error_naming_it(
    agents: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _skill(agents, "locked")
    write_agent(agents, "al", {"provider": "claude", "skills": ["locked"]})
    spec = load_agent(agents, "al")
    real = skills_install.read_regular

    def denied(path: Path, limit: int) -> bytes:
        if path.name == "SKILL.md":
            raise PermissionError(13, "Permission denied", str(path))  # (tests run as root: chmod would not stop a read)
        return real(path, limit)

    monkeypatch.setattr(skills_install, "read_regular", denied)
    with pytest.raises(DefinitionError) as caught:
        install_skills(spec.skills, spec.agents_dir, tmp_path / "state", "al")
    assert caught.value.message == f"{src / 'SKILL.md'}: skill locked: cannot read (Permission denied)"


def test_two_skills_with_one_name_are_refused(agents: Path, tmp_path: Path) -> None:
    _skill(agents, "first", name="review")
    second = _skill(agents, "second", name="review")
    with pytest.raises(DefinitionError) as caught:
        _install(agents, tmp_path / "state", ["first", "second"])
    assert caught.value.message.startswith(f"{second / 'SKILL.md'}: name: skill 'review' is also the name of ")
    assert "give each skill its own name" in (caught.value.hint or "")


def test_a_front_matter_name_that_is_not_a_plain_name_is_refused(agents: Path, tmp_path: Path) -> None:
    _skill(agents, "sneaky", name="../../escape")
    with pytest.raises(DefinitionError, match=r"name: skill name '\.\./\.\./escape' is not allowed"):
        _install(agents, tmp_path / "state", ["sneaky"])
    assert not (tmp_path / "escape").exists()


def test_a_file_over_the_limit_is_refused_without_reading_it(agents: Path, tmp_path: Path) -> None:
    src = _skill(agents, "big")
    with open(src / "data.bin", "wb") as fh:
        fh.truncate(skills_install.FILE_LIMIT + 1)  # sparse: costs no disk
    with pytest.raises(DefinitionError, match=r"data.bin: skill big: 4\.0 MiB is larger than the 4 MiB limit for one file"):
        _install(agents, tmp_path / "state", ["big"])


def test_skill_folders_over_the_total_size_or_file_count_are_refused(
    agents: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = _skill(agents, "huge")
    for i in range(5):
        (src / f"part{i}.txt").write_bytes(b"x" * 1000)
    monkeypatch.setattr(skills_install, "FOLDER_LIMIT", 3000)
    with pytest.raises(DefinitionError) as caught:
        _install(agents, tmp_path / "state", ["huge"])
    assert "skill huge: the agent's skills add up to more than 2.9 KiB" in caught.value.message
    monkeypatch.setattr(skills_install, "FOLDER_LIMIT", 1 << 20)
    monkeypatch.setattr(skills_install, "FILES_LIMIT", 4)
    with pytest.raises(DefinitionError, match="skill huge: the agent's skills hold more than 4 files"):
        _install(agents, tmp_path / "state", ["huge"])


def test_a_state_directory_where_skills_cannot_go_is_a_state_error(agents: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "skills").write_text("a file where the skills folder goes")
    _skill(agents, "probe")
    with pytest.raises(StateError, match="cannot install the agent's skills"):
        _install(agents, state, ["probe"])


def test_placement_points_each_cli_at_the_installed_skills(agents: Path, tmp_path: Path) -> None:
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    _skill(agents, "probe")
    user = tmp_path / "user"
    (user / ".codex").mkdir(parents=True)
    env = {"HOME": str(user)}
    placed = {}
    for name, provider, delivery in (
        ("cl", "claude", "system-prompt"),
        ("clf", "claude", "file"),
        ("fk", "fake", "system-prompt"),
        ("cx", "codex", "developer-instructions"),
        ("gm", "gemini", "gemini-home"),
        ("gmf", "gemini", "file"),
    ):
        write_agent(agents, name, {"provider": provider, "skills": ["probe"], "delivery": delivery})
        placed[name] = place_instructions(load_agent(agents, name), work, state, date(2026, 1, 1), hold=False, env=env)
    for name in ("cl", "clf"):  # Claude Code: a per-agent CLAUDE_CONFIG_DIR (no --add-dir: its interface asks)
        assert placed[name].env["CLAUDE_CONFIG_DIR"] == str(state / "claude-homes" / name)
        assert "--add-dir" not in placed[name].argv and "CODEX_HOME" not in placed[name].env
        assert (state / "claude-homes" / name / "skills" / "probe").resolve() == skills_folder(state, name) / "probe"
    assert placed["fk"].argv[-2:] == ["--add-dir", str(state / "skills" / "fk")]  # the fake CLI reads the flag
    assert placed["fk"].env == {}
    assert placed["cx"].env["CODEX_HOME"] == str(state / "codex-homes" / "cx")
    assert "--add-dir" not in placed["cx"].argv
    assert (state / "codex-homes" / "cx" / "skills" / "probe").resolve() == skills_folder(state, "cx") / "probe"
    assert (state / "gemini-homes" / "gm" / ".gemini" / "skills" / "probe").resolve() == skills_folder(state, "gm") / "probe"
    assert placed["gmf"].skills is None and not skills_root(state, "gmf").exists()  # Gemini with delivery: file: index only
    assert sorted(p.name for p in work.iterdir()) == ["CLAUDE.md", "GEMINI.md"]  # only the two `delivery: file` files


def test_a_codex_agent_without_skills_keeps_the_users_codex_home(agents: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    write_agent(agents, "cx", {"provider": "codex"})
    placed = place_instructions(load_agent(agents, "cx"), work, tmp_path / "state", date(2026, 1, 1), hold=False, env={})
    assert placed.env == {} and placed.skills is None
    assert not (tmp_path / "state" / "codex-homes").exists()


def test_run_with_a_bad_skill_exits_3_without_a_traceback(agents: Path, tmp_path: Path) -> None:
    src = _skill(agents, "leaky")
    (src / "key").symlink_to("/etc/hostname")
    write_agent(agents, "al", {"provider": "fake", "skills": ["leaky"], "working_dir": "@scratch"})
    done = run_cli("run", "al", "hi", "--agents-dir", str(agents), cwd=tmp_path)
    err = done.stderr.decode()
    assert done.returncode == 3, err
    assert "skill leaky: a symlink to /etc/hostname, outside the agents directory" in err and "Traceback" not in err


def test_a_cli_started_early_is_not_adopted_when_the_launch_rewrote_the_skills(agents: Path, tmp_path: Path) -> None:
    """The early start (launch/early/prespawn.py) may list the skills before the launch installs them: a changed skill
    means a fresh CLI; unchanged skills let the early one be adopted."""
    import shlex
    import sys

    starts = tmp_path / "starts.log"
    wrapper = tmp_path / "fake-cli"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *--version*) ;; *) echo started >> {shlex.quote(str(starts))} ;; esac\n'
        f'exec {shlex.quote(sys.executable)} -m agentlaunch.providers.fake_cli "$@"\n'
    )
    wrapper.chmod(0o755)
    _skill(agents, "probe")
    write_agent(agents, "al", {"provider": "fake", "skills": ["probe"], "working_dir": "@scratch", "command": str(wrapper)})

    def launch(prompt: str) -> int:
        done = run_cli("run", "al", prompt, "--agents-dir", str(agents), cwd=tmp_path)
        assert done.returncode == 0, done.stderr.decode()
        return len(starts.read_text().splitlines())  # sessions started (not `--version`, which the prefix check asks)

    assert launch("one") == 1  # no plan yet: one start
    assert launch("two") == 2  # started early from the plan, and adopted
    _skill(agents, "probe", body="A new body; the description is the same.\n")
    assert launch("three") == 4  # started early, then discarded for a fresh one that sees the new skill


def test_validate_reports_what_run_would_refuse_to_install(agents: Path, tmp_path: Path) -> None:
    _skill(agents, "first", name="review")
    second = _skill(agents, "second", name="review")
    write_agent(agents, "al", {"provider": "claude", "skills": ["first", "second"]})
    done = run_cli_inprocess("validate", "al", "--agents-dir", str(agents), cwd=tmp_path)
    assert done.returncode == 3
    assert done.stdout.decode().startswith(f"{second / 'SKILL.md'}: name: skill 'review' is also the name of ")
