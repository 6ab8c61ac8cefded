"""A Codex home for the real Codex interface in a tmux pane, against the fake Responses API.

The folders are trusted and the interface's first-run screens (screen reader, model availability, the model
migration notice) are marked seen, so the pane goes straight to its prompt; the environment is what an agent's
launch under ``agentlaunch tmux up`` is given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from agentlaunch.fakeapi.responses import prepare_codex_home

SEEN = (
    "[tui]",
    "screen_reader_detection_done = true",
    "[tui.model_availability_nux]",
    '"gpt-6.1-sol" = 1',
    "[notice.model_migrations]",
    '"gpt-5.5" = "gpt-6-sol"',
)


def codex_tui_env(home: Path, api_url: str, trusted: Iterable[Path], agents_dir: Path, config_dir: Path) -> dict[str, str]:
    """The environment of a Codex agent whose home is ``home`` (made by :func:`prepare_codex_home`), talking to
    ``api_url`` (the fake's server URL), with ``trusted`` folders trusted; agentlaunch's own variables kept."""
    config = "\n".join([*(f'[projects."{p}"]\ntrust_level = "trusted"' for p in trusted), *SEEN])
    env = prepare_codex_home(home, api_url + "/v1", request_max_retries=0, stream_max_retries=0, extra_config=config)
    env.update(
        TERM="xterm-256color",
        AGENTLAUNCH_TITLE="0",
        AGENTLAUNCH_AGENTS_DIR=str(agents_dir),
        AGENTLAUNCH_CONFIG_DIR=str(config_dir),
    )
    env.update({k: v for k, v in os.environ.items() if k.startswith("AGENTLAUNCH_") and k not in env})
    return env
