"""A fork is a launch plan option (`run --fork ID`): the argv each adapter gives its CLI for it, and the session chosen.

The real CLIs' behaviour is pinned end to end (tests/e2e/test_agent_fork.py, test_agent_life_codex_gemini.py);
these hold the plumbing between: the session choice and each adapter's argv.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlaunch import paths
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError, UsageError
from agentlaunch.launch.identity import ForkSource, choose_session
from agentlaunch.providers import get_adapter
from agentlaunch.usage.store import Store
from testbed.agent_files import write_agent


def argv(agents_dir: Path, provider: str, fork: ForkSource | None, *, session_id: str = "NEW") -> list[str]:
    write_agent(agents_dir, provider, {"provider": provider, "model": "m-1"})
    spec = load_agent(agents_dir, provider)
    return get_adapter(provider).interface_argv(
        spec,
        provider,
        session_id=session_id,
        resumed=False,
        state={},
        placement_argv=[],
        extra_argv=[],
        prompt="",
        fork=fork,
    )


def test_claude_forks_with_resume_and_fork_session_naming_the_new_session(agents_dir: Path) -> None:
    got = argv(agents_dir, "claude", ForkSource("OLD", {}))
    i = got.index("--resume")
    assert got[i : i + 5] == ["--resume", "OLD", "--fork-session", "--session-id", "NEW"]
    assert "--fork-session" not in argv(agents_dir, "claude", None)


def test_codex_forks_the_thread_with_codex_fork_and_no_startup_prompt(agents_dir: Path) -> None:
    got = argv(agents_dir, "codex", ForkSource("sid", {"thread_id": "THREAD-1"}))
    assert "fork" in got and "resume" not in got and got[-1] == "THREAD-1"
    assert got.index("fork") < got.index("-m") < got.index("--no-daemon")  # resume's shape: the subcommand first
    assert argv(agents_dir, "codex", ForkSource("sid-2", {}))[-1] == "sid-2"  # no thread kept: the session id is it


def test_gemini_cannot_fork_and_says_why(agents_dir: Path) -> None:
    with pytest.raises(DefinitionError, match="Gemini CLI 0.61 has no fork"):
        argv(agents_dir, "gemini", ForkSource("sid", {}))


def test_the_fork_is_a_new_session_carrying_its_source(agents_dir: Path, workdir: Path) -> None:
    write_agent(agents_dir, "claudy", {"provider": "claude", "model": "claude-sonnet-4-5"})
    spec = load_agent(agents_dir, "claudy")
    adapter = get_adapter("claude")
    with Store.open(paths.store_path()) as store:
        store.start_session("1a2b3c4d-old", agent="claudy", provider="claude", working_dir=workdir)
        store.touch_session("1a2b3c4d-old")
        store.start_session("9f9f-empty", agent="claudy", provider="claude", working_dir=workdir)
        choice = choose_session(spec, adapter, store, workdir, resume=None, continue_last=False, fork="1a2b")
        assert choice.fork == ForkSource("1a2b3c4d-old", {})
        assert not choice.resumed and choice.turns == 0 and choice.session_id not in ("1a2b3c4d-old", "9f9f-empty")
        with pytest.raises(UsageError, match="never had a turn"):
            choose_session(spec, adapter, store, workdir, resume=None, continue_last=False, fork="9f9f-empty")
        with pytest.raises(UsageError, match="no session 'nope'"):
            choose_session(spec, adapter, store, workdir, resume=None, continue_last=False, fork="nope")


class PaneOption:
    """A tmux whose fork pane says one session id after another (the launch's own first, then the CLI's thread's)."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids

    def run(self, *args: str, check: bool = True) -> object:
        from types import SimpleNamespace

        return SimpleNamespace(stdout=self.ids.pop(0) if len(self.ids) > 1 else self.ids[0], returncode=0)


def test_the_fork_names_its_session_once_the_cli_confirmed_it(workdir: Path) -> None:
    from agentlaunch.live.fork import confirmed_session
    from agentlaunch.usage.session_ids import unique_prefix

    # Before: the pane's first id was printed (`c5510a73…`, the launch's own until Codex's rollout named the thread).
    with Store.open(paths.store_path()) as store:
        store.start_session("01a24cbd-bc48-73e2-b2ad-68fa43fa847a", agent="cx", provider="codex", working_dir=workdir)
        tmux = PaneOption(
            [
                "c5510a73-0000-4000-8000-000000000000",
                "c5510a73-0000-4000-8000-000000000000",
                "01a24cbd-e151-7423-806f-17928f463ca9",
            ]
        )
        assert confirmed_session(tmux, "%1", store, timeout=0) is None  # type: ignore[arg-type]  # not known yet
        store.start_session("01a24cbd-e151-7423-806f-17928f463ca9", agent="cx", provider="codex", working_dir=workdir)
        assert confirmed_session(tmux, "%1", store, timeout=30) == "01a24cbd-e151-7423-806f-17928f463ca9"  # type: ignore[arg-type]
        # UUIDv7: both start 01a24cbd (made within the same 65 s); the hint's start names one.
        assert unique_prefix(store, "01a24cbd-e151-7423-806f-17928f463ca9") == "01a24cbd-e"
        assert unique_prefix(store, "c5510a73-0000-4000-8000-000000000000") == "c5510a73"
