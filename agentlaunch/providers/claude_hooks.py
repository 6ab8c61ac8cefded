"""Claude Code's hook answers: what agentlaunch replies to a ``PreToolUse`` hook it holds.

Both ways of running Claude Code answer a held tool with it: the headless gate
(:mod:`agentlaunch.providers.claude`, over stream-json's control protocol) and the interface's HTTP hook
(:mod:`agentlaunch.providers.native.claude_source`).
"""

from __future__ import annotations


def tool_refusal(reason: str) -> dict[str, object]:
    """A PreToolUse hook's answer that refuses the tool and ends the turn, for the headless gate and the interface's hook.

    Measured on Claude Code 2.1.332: ``deny`` alone hands the refusal to the model as the tool's result (one
    more call); ``continue: false`` alone ends the turn but still runs the tool. Both together: neither.
    """
    return {
        "continue": False,
        "stopReason": reason,
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason},
    }
