"""An agent's definition folder written by a test: agent.yaml and its other files."""

from __future__ import annotations

from pathlib import Path

import yaml


def write_agent(
    agents_dir: Path, name: str, config: dict[str, object] | str, files: dict[str, str | bytes] | None = None
) -> Path:
    """Create (or replace) an agent folder with agent.yaml and extra files."""
    folder = agents_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    text = config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False)
    (folder / "agent.yaml").write_text(text)
    for rel, content in (files or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder
