"""Claude Code's native (TUI) launch: the ``--settings`` that make it report, and the source that reads it.

``native_extras(ctx)`` binds a hook socket and the held hooks' socket
(:mod:`agentlaunch.providers.native.hook_held`: the budget's gate, and the permission dialog agentlaunch answer
answers) in the launch's 0700 runtime folder, and
passes Claude Code one ``--settings`` object (it merges over the user's own
settings): a command hook on each event that tells the state, and a status-line
command (:mod:`agentlaunch.providers.native.claude_statusline`) that reports the
status-line JSON and prints agentlaunch's line, joined to the user's own.

States come from hooks (:mod:`agentlaunch.providers.native.claude_hook_states`, the table) and the transcript, never
from the screen; the source that reads them is :mod:`agentlaunch.providers.native.claude_source`, the settings that
make Claude Code report :mod:`agentlaunch.providers.native.claude_settings`.

Meters come from the transcript (:mod:`agentlaunch.providers.native.claude_transcript`),
read whenever a hook or the status line reports and once more at the end;
the context window, the plan's limits and the cache's lifetime from the status-line JSON
(:mod:`agentlaunch.providers.native.claude_status_report`); the session from the first
report (the status line's carries Claude Code's version).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from agentlaunch.fsutil import write_atomic
from agentlaunch.providers.native.claude_settings import hooks_notice, settings, transcript_path, user_settings, user_status_line
from agentlaunch.providers.native.claude_source import UNMETERED, ClaudeNativeSource
from agentlaunch.providers.native.hook_held import HeldHooks
from agentlaunch.providers.native.hook_socket import HookSocket
from agentlaunch.providers.native.source import NativeContext, NativeExtras

SOCKET_NAME = "claude.sock"
HELD_NAME = "claude-held.sock"
"""The held hooks' socket: a stream socket (the early start binds a name ending ``-held.sock`` so)."""
CONFIG_NAME = "statusline.json"
USER_TIMEOUT = 1.5
"""Seconds the user's own status-line command may take before agentlaunch's line is shown without it."""


def native_extras(ctx: NativeContext) -> NativeExtras:
    """What a native Claude Code launch adds: ``--settings`` (status line and hooks) and the source that reads them."""
    socket_path = ctx.runtime_dir / SOCKET_NAME
    config_path = ctx.runtime_dir / CONFIG_NAME
    held_path = ctx.runtime_dir / HELD_NAME
    sock = HookSocket(socket_path, ctx.bound.get(str(socket_path)))
    try:
        held = HeldHooks(held_path, ctx.bound.get(str(held_path)))
    except OSError:
        sock.close()
        raise
    user, notices = user_status_line(ctx.env, ctx.working_dir)
    notices += hooks_notice(user_settings(ctx.env, ctx.working_dir)[0])
    config = {
        "socket": str(socket_path),
        "status": str(ctx.status_path) if ctx.status_path else None,
        "user_command": user,
        "user_timeout": USER_TIMEOUT,
    }
    write_atomic(config_path, json.dumps(config).encode(), 0o600)
    path = transcript_path(ctx.env, ctx.working_dir, ctx.session_id) if ctx.session_id else None
    source = ClaudeNativeSource(sock, path, ctx.started_at, wake=path is not None, forked=ctx.forked, server=held)
    if path is not None:
        notices += transcript_notices(path)
    argv = ["--settings", json.dumps(settings(ctx, socket_path, config_path, held_path), separators=(",", ":"))]
    return NativeExtras(argv=argv, sources=[source], notices=notices)


def transcript_notices(path: Path) -> list[str]:
    """A warning when Claude Code could not write the transcript's folder (it then runs on, keeping no per-call record)."""
    folder = path.parent
    for candidate in (folder, *folder.parents):
        if not candidate.exists():
            continue
        if not candidate.is_dir():
            return [f"Claude Code cannot keep its transcript under {candidate} (not a folder): {UNMETERED}"]
        if not os.access(candidate, os.W_OK | os.X_OK):
            return [f"Claude Code cannot write its transcript under {candidate} (not writable): {UNMETERED}"]
        return []
    return []


def seed_interface_home(home: Path, workdir: Path, env: Mapping[str, str], argv: list[str]) -> None:
    """For the doctor: Claude Code's onboarding done and the folder trusted, as a set-up user's home holds them."""
    key = env.get("ANTHROPIC_API_KEY", "")
    trusted = {str(workdir): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}}
    state = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [key[-20:]] if key else [], "rejected": []},
        "projects": trusted,
    }
    config = Path(env.get("CLAUDE_CONFIG_DIR") or home)
    config.mkdir(parents=True, exist_ok=True)
    (config / ".claude.json").write_text(json.dumps(state))
