"""The hooks a native Codex launch adds on its command line, and the trust entries that let them run.

Codex CLI 0.171 runs lifecycle hooks (``[hooks]`` in its config, Claude
Code's shape: ``hooks.<Event> = [{matcher?, hooks = [{type = "command",
command, timeout}]}]``), but only hooks the user has trusted: a new one
opens a "Hooks need review" dialog in the TUI. Trust is kept as
``hooks.state."<source>:<event>:<group>:<handler>".trusted_hash``, the
SHA-256 of the handler's identity written as canonical JSON (keys sorted,
compact). Hooks passed with ``-c`` live in the session-flags layer, whose
source is ``/<session-flags>/config.toml``; so agentlaunch passes its hooks
*and* their trust entries with ``-c``: no dialog, nothing written into the
user's ``config.toml``, and the user's own hooks and trust stay as they are
(``-c`` values are one more layer; Codex runs the hooks of every layer).

Measured on 0.171.0: the hashes this module computes equal the ones the TUI
stored after "Trust all and continue" for the same hooks (the default
timeout there is 600 s; agentlaunch gives its own, short one).
"""

from __future__ import annotations

import json
from hashlib import sha256

SOURCE = "/<session-flags>/config.toml"
TIMEOUT = 10
"""Seconds Codex waits for a hook; the reporter returns in milliseconds and never blocks."""

EVENTS: dict[str, str] = {
    # Codex's event name in config -> its snake_case key in trust entries.
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "Stop": "stop",
}


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escapes are valid TOML escapes for every character)."""
    return json.dumps(text, ensure_ascii=False)


def trust_hash(event_key: str, command: str, timeout: int = TIMEOUT) -> str:
    """Codex's ``trusted_hash`` of one command handler in a group without a matcher."""
    identity = {
        "event_name": event_key,
        "hooks": [{"async": False, "command": command, "timeout": timeout, "type": "command"}],
    }
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + sha256(canonical.encode("utf-8")).hexdigest()


def hook_flags(commands: dict[str, str], timeout: int = TIMEOUT) -> list[str]:
    """``-c`` flags that install ``commands`` (Codex event name -> shell command) and trust them.

    Each event gets one group of one handler, so every trust key ends in ``:0:0``
    (the first group and handler of that event in the session-flags layer).
    """
    flags: list[str] = []
    trusted: list[str] = []
    for event, command in commands.items():
        key = EVENTS[event]
        handler = f"{{type={toml_string('command')},command={toml_string(command)},timeout={timeout}}}"
        flags += ["-c", f"hooks.{event}=[{{hooks=[{handler}]}}]"]
        trust_key = toml_string(f"{SOURCE}:{key}:0:0")
        trusted.append(f"{trust_key}={{trusted_hash={toml_string(trust_hash(key, command, timeout))}}}")
    if trusted:
        # One inline table: Codex's -c parser takes no quoted key inside a dotted path. Tables of the
        # session-flags layer merge into the user's, so the user's own trust entries stay.
        flags += ["-c", "hooks.state={" + ",".join(trusted) + "}"]
    return flags
