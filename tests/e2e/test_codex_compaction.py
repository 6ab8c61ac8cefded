"""``compaction_at`` on the real Codex 0.171.0 (``-c model_auto_compact_token_limit``), against the fake Responses API.

Codex compacts before the next call once the last call's input + output reaches the limit (measured: 20,010 tokens
compacted at 20,010, not at 20,011; notes/codex-gemini-findings.md): its compaction is a call of its own to the API,
whose last user item asks for a "CONTEXT CHECKPOINT COMPACTION".
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlaunch.fakeapi import responses as cfake
from testbed.agent_files import write_agent
from testbed.clis import ensure_cli
from tests.support.cli_runs import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
CHECKPOINT = "CONTEXT CHECKPOINT COMPACTION"


@pytest.fixture
def codex(agents_dir: Path, isolated_home: Path) -> Iterator[tuple[cfake.ResponsesFake, dict[str, str]]]:
    with cfake.ResponsesFake() as api:
        env = cfake.prepare_codex_home(isolated_home, api.base_url, request_max_retries=0, stream_max_retries=0)
        env["AGENTLAUNCH_AGENTS_DIR"] = str(agents_dir)
        yield api, env


def two_turns(api: cfake.ResponsesFake, env: dict[str, str], agents_dir: Path, workdir: Path, **conf: Any) -> list[str]:
    """A first turn whose call ends with 20,010 tokens in context, then a second turn: each call's last user text."""
    write_agent(
        agents_dir,
        "coder",
        {"provider": "codex", "model": "gpt-5.5", "command": str(ensure_cli("codex")), "working_dir": str(workdir), **conf},
    )
    api.script.push(cfake.TextReply("first answer", cfake.ResponsesUsage(input_tokens=20_000, output_tokens=10)))
    api.script.push(cfake.TextReply("the summary", cfake.ResponsesUsage(input_tokens=500, output_tokens=50)))
    api.script.push(cfake.TextReply("second answer", cfake.ResponsesUsage(input_tokens=800, output_tokens=10)))
    first = run_cli("run", "coder", "hello", cwd=workdir, env=env, timeout=240)
    assert first.returncode == 0, first.stderr.decode()
    second = run_cli("run", "coder", "-c", "next", cwd=workdir, env=env, timeout=240)
    assert second.returncode == 0, second.stderr.decode()
    return [cfake.user_texts(r.body)[-1] for r in api.model_requests]


def test_codex_compacts_where_compaction_at_sets_it(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, workdir: Path
) -> None:
    api, env = codex
    lasts = two_turns(api, env, agents_dir, workdir, compaction_at=20_010)
    assert len(lasts) == 3 and CHECKPOINT in lasts[1] and lasts[2] == "next", lasts


def test_codex_does_not_compact_a_token_short_of_compaction_at(
    codex: tuple[cfake.ResponsesFake, dict[str, str]], agents_dir: Path, workdir: Path
) -> None:
    api, env = codex
    lasts = two_turns(api, env, agents_dir, workdir, compaction_at=20_011)
    assert [CHECKPOINT in text for text in lasts] == [False, False], lasts
