"""What Codex's native mode sets up: the hook flags and their trust hashes, the source's socket, and the thread a
resumed session reads.
"""

from __future__ import annotations

from pathlib import Path

from agentlaunch.providers.native.codex import CodexNativeSource, native_extras
from agentlaunch.providers.native.codex_hooks import EVENTS, hook_flags, trust_hash
from agentlaunch.providers.native.hook_socket import HookSocket
from agentlaunch.providers.native.source import NativeContext
from tests.support.codex_recorded import (
    EXPECTED,
    RESUMED,
    THREAD,
    Bench,
    calls,
    recorded,
    states,
)


def test_trust_hashes_are_the_ones_codex_0_171_stored() -> None:
    # Stored by Codex 0.171.0's TUI in config.toml after "Trust all and continue" for these hooks (timeout 600).
    assert trust_hash("stop", "/tmp/cgx/hook.sh Stop", 600) == (
        "sha256:965040716972c2ac9636d087facc6bafefb73ea71019fdb9d7da1b94e2fd72d0"
    )
    assert trust_hash("user_prompt_submit", "/tmp/cgx/hook.sh UserPromptSubmit", 600) == (
        "sha256:5caef6739ae6b157eddf21ddfe85dbe740ec8f4da266bc0e06e861e180ba8f5a"
    )


def test_hook_flags_install_and_trust_each_hook_and_leave_notify_alone() -> None:
    flags = hook_flags({"Stop": "python3 r.py 'a b' Stop"})
    assert flags[:2] == ["-c", 'hooks.Stop=[{hooks=[{type="command",command="python3 r.py \'a b\' Stop",timeout=10}]}]']
    assert flags[2] == "-c" and flags[3].startswith('hooks.state={"/<session-flags>/config.toml:stop:0:0"={trusted_hash="sha256:')
    assert len(flags) == 4


def test_native_extras_binds_the_socket_and_passes_every_hook(tmp_path: Path) -> None:
    bench = Bench(tmp_path)
    extras = native_extras(bench.ctx())
    assert extras.notices == []
    assert sum(1 for a in extras.argv if a.startswith("hooks.")) == len(EVENTS) + 1
    assert not any("notify" in a for a in extras.argv)
    (source,) = extras.sources
    assert source.filenos() != ()
    source.close()


def test_a_socket_path_too_long_is_a_notice_and_the_rollout_alone(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    bench = Bench(tmp_path)
    ctx = bench.ctx()
    ctx = NativeContext(ctx.agent, ctx.session_id, ctx.resumed, ctx.working_dir, ctx.env, deep, ctx.started_at, ctx.python)
    extras = native_extras(ctx)
    assert extras.argv == [] and len(extras.notices) == 1 and "hooks" in extras.notices[0]
    (source,) = extras.sources
    assert source.filenos() == () and source.deadline() is not None
    bench.rollout.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))
    items = source.read()
    assert calls(items) == EXPECTED
    assert states(items)[-1] == "waiting"  # from the rollout's task_complete when no hook is heard


def test_a_session_started_headless_resumes_its_thread_from_the_store(tmp_path: Path) -> None:
    # agentlaunch's own session id; the thread is named only in the provider state the store keeps.
    bench = Bench(tmp_path, resumed=True)
    before = recorded("codex_tui.rollout.jsonl", bench.home, bench.work)
    after = recorded("codex_tui_resumed.rollout.jsonl", bench.home, bench.work)
    bench.rollout.write_bytes(before)
    base = bench.ctx()
    ctx = NativeContext(
        base.agent,
        "3f0c9a2e-0000-4000-8000-000000000001",
        True,
        base.working_dir,
        base.env,
        base.runtime_dir,
        base.started_at,
        base.python,
        provider_state={"thread_id": THREAD, "total": {}},
    )
    source = CodexNativeSource(ctx, HookSocket(bench.runtime / "s.sock"))
    bench.send("UserPromptSubmit", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    with bench.rollout.open("ab") as fh:
        fh.write(after[len(before) :])
    bench.send("Stop", {"session_id": THREAD, "transcript_path": str(bench.rollout)})
    items = source.read()
    assert calls(items) == RESUMED
    assert states(items) == ["thinking", "waiting"]
    source.close()


def test_a_resumed_thread_whose_file_is_missing_is_never_guessed(tmp_path: Path) -> None:
    bench = Bench(tmp_path, resumed=True)
    other = bench.rollout.with_name("rollout-2026-12-01T11-24-07-99999999-0000-0000-0000-000000000000.jsonl")
    other.write_bytes(recorded("codex_tui.rollout.jsonl", bench.home, bench.work))  # same folder and cwd, not ours
    source = bench.source()
    assert calls(source.read()) == []
    source.close()
