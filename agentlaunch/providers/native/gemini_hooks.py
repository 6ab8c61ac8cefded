"""The hooks agentlaunch merges into a per-agent Gemini home's ``settings.json``, and how their reports find a launch.

Gemini CLI 0.61 reads hooks only from settings files (``hooks.<Event>`` lists
of ``{matcher?, hooks: [{type: "command", command, name, timeout}]}``, Claude
Code's shape; the lists of every settings layer are concatenated). The per-agent
home (:mod:`agentlaunch.providers.gemini_home`) therefore holds a generated
``settings.json``: the user's own settings with these hooks added to theirs,
written again at every launch; the user's file is only read.

Measured on 0.61.0 (its bundle and the bare CLI in tmux): a permission prompt
fires ``BeforeTool`` (before the prompt opens, also for tools that ask nothing)
and then ``Notification`` with ``notification_type: "ToolPermission"`` (only
when the prompt opens); an allowed tool then fires ``AfterTool``; a denied one
fires no hook at all (the session file records the call ``cancelled`` and an
``info`` record "Request cancelled."). ``SessionStart`` fires once the
interface is up, with ``source`` ``startup`` or ``resume`` (a resumed session
too, before any prompt); ``BeforeAgent`` carries each submitted prompt.

The settings file is the same for every launch of the agent (a launch's
socket lives in its own runtime folder), so a hook finds its launch through
its session: Gemini replaces ``$GEMINI_SESSION_ID`` in a hook's command with
the session id, and each native launch writes the path of its socket into
``<home>/agentlaunch-hooks/<session id>`` (removed when it ends). A hook run
by a Gemini that no launch follows (a headless turn, Gemini started by hand
with this home) finds no such file and does nothing.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from agentlaunch.providers.native.hook_socket import REPORTER, script_argv

EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification")
"""The events whose reports tell a state (see :mod:`agentlaunch.providers.native.gemini`)."""
HOOK_NAME = "agentlaunch"
"""The hooks' name: what Gemini's "Executing Hook: …" line shows while one runs (not the long command)."""
TIMEOUT_MS = 5_000
"""Gemini waits this long for a hook at most; the reporter returns in milliseconds and never blocks."""
REGISTRY = "agentlaunch-hooks"
"""The folder of a per-agent home where each followed session names its launch's socket."""
SESSION_VAR = "$GEMINI_SESSION_ID"
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""A session id that may name a file (agentlaunch's UUIDs; a stored id of another shape is not followed)."""


def registry_dir(home: Path) -> Path:
    """Where the launches of the Gemini home ``home`` (``$GEMINI_CLI_HOME``) name their sockets."""
    return home / REGISTRY


def hook_command(python: str, home: Path, event: str) -> str:
    """The shell command Gemini runs for ``event``: the reporter, told to find the socket in the session's file.

    ``@FILE`` is the reporter's form for "the socket path is in FILE". The session id is added unquoted after the
    quoted folder: Gemini replaces ``$GEMINI_SESSION_ID`` with the id, shell-quoted (and it is in the hook's
    environment too, so a shell expands it where Gemini would not).
    """
    where = shlex.quote("@" + str(registry_dir(home)) + "/")
    return shlex.join(script_argv(python, REPORTER)) + f" {where}{SESSION_VAR} {shlex.quote(event)}"


def hook_settings(python: str, home: Path) -> dict[str, list[dict[str, Any]]]:
    """``hooks``: one definition per event, one named command each."""
    return {
        event: [
            {
                "hooks": [
                    {"type": "command", "name": HOOK_NAME, "command": hook_command(python, home, event), "timeout": TIMEOUT_MS}
                ]
            }
        ]
        for event in EVENTS
    }


def merged(user: dict[str, Any], ours: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The user's settings with ``ours`` after their own hooks of each event (theirs run first, unchanged)."""
    out = dict(user)
    theirs = user.get("hooks")
    hooks: dict[str, Any] = dict(theirs) if isinstance(theirs, dict) else {}
    for event, definitions in ours.items():
        own = hooks.get(event)
        hooks[event] = [*(own if isinstance(own, list) else []), *definitions]
    out["hooks"] = hooks
    return out


def hooks_disabled(user: dict[str, Any]) -> bool:
    """The user turned Gemini's hooks off (``hooksConfig.enabled: false``): agentlaunch leaves that as it is."""
    config = user.get("hooksConfig")
    return isinstance(config, dict) and config.get("enabled") is False


class BadSettings(ValueError):
    """The user's ``settings.json`` is not a JSON object (with comments, as Gemini reads it)."""


def parse_settings(text: str) -> dict[str, Any]:
    """The settings object in ``text``, read as Gemini 0.61 reads it (JSON with ``//`` and ``/* */`` comments)."""
    try:
        value = json.loads(strip_comments(text)) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise BadSettings(str(exc)) from None
    if not isinstance(value, dict):
        raise BadSettings(f"expected a JSON object, found {type(value).__name__}")
    return value


def strip_comments(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments blanked (not inside strings), as strip-json-comments does."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if char == '"':
                in_string = False
            i += 1
        elif char == '"':
            in_string = True
            out.append(char)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            out.append(" ")
        else:
            out.append(char)
            i += 1
    return "".join(out)
