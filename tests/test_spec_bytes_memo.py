"""An unchanged agent.yaml without env is not parsed again: the launch path imports no YAML parser for it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentlaunch.definitions.agent_yaml import BYTES_DIR
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError
from testbed.agent_files import write_agent


def probe(agents_dir: Path, state: Path, name: str) -> list[str]:
    code = (
        "import sys; from pathlib import Path; from agentlaunch.definitions.spec import load_agent; "
        f"spec = load_agent(Path({str(agents_dir)!r}), {name!r}, Path({str(state)!r})); "
        "print(spec.model, sorted(spec.env), 'yaml' in sys.modules, 'pydantic' in sys.modules)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_an_unchanged_agent_without_env_loads_without_yaml_or_pydantic(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_agent(agents_dir, "plain", {"provider": "claude", "model": "m1"})
    first = load_agent(agents_dir, "plain", state)
    assert len(list((state / BYTES_DIR).iterdir())) == 1
    assert probe(agents_dir, state, "plain") == ["m1", "[]", "False", "False"]
    assert load_agent(agents_dir, "plain", state) == first
    # One changed byte is a new file: read, checked and remembered apart.
    write_agent(agents_dir, "plain", {"provider": "claude", "model": "m2"})
    assert load_agent(agents_dir, "plain", state).model == "m2"
    assert len(list((state / BYTES_DIR).iterdir())) == 2


def test_an_agent_with_env_is_parsed_every_time_and_its_env_never_written(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_agent(agents_dir, "secret", {"provider": "claude", "model": "m1", "env": {"TOKEN": "s3cret"}})
    load_agent(agents_dir, "secret", state)
    assert not (state / BYTES_DIR).exists()
    assert probe(agents_dir, state, "secret") == ["m1", "['TOKEN']", "True", "False"]


def test_a_broken_memo_is_ignored(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_agent(agents_dir, "plain", {"provider": "claude", "model": "m1"})
    load_agent(agents_dir, "plain", state)
    for content in (b"", b"not json", b"[1]", b'{"env": {"X": "y"}}'):
        (memo,) = (state / BYTES_DIR).iterdir()
        memo.write_bytes(content)
        spec = load_agent(agents_dir, "plain", state)
        assert spec.model == "m1" and spec.env == {}


def test_a_bad_agent_yaml_is_still_reported_every_time(agents_dir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_agent(agents_dir, "bad", {"provider": "claude", "context_window": 0})
    for _ in range(2):
        with pytest.raises(DefinitionError):
            load_agent(agents_dir, "bad", state)
    assert not (state / BYTES_DIR).exists()
