"""Skills: a folder under ``skills/`` with a SKILL.md whose YAML front matter gives its name and description."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlaunch.datarecord import datarecord
from agentlaunch.errors import DefinitionError


@datarecord(frozen=True)
class Skill:
    """One skill an agent may use, as the instructions' skills index lists it."""

    name: str
    description: str
    path: Path


def _parse_front_matter(text: str, path: Path) -> dict[str, Any]:
    import yaml

    from agentlaunch.definitions.yamlload import safe_load

    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise DefinitionError(f"{path}: front matter: missing (the file must start with '---', name and description, '---')")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise DefinitionError(f"{path}: front matter: not closed by a '---' line") from None
    try:
        meta = safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise DefinitionError(f"{path}: front matter: invalid YAML ({exc})") from None
    if not isinstance(meta, dict):
        raise DefinitionError(f"{path}: front matter: expected name and description keys")
    return meta


def parse_skill(path: Path, text: str, name: str) -> Skill:
    """The skill in ``text`` (the SKILL.md at ``path``; ``name`` is its folder, the name when the front matter gives none)."""
    meta = _parse_front_matter(text, path)
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise DefinitionError(f"{path}: description: missing or empty in the front matter")
    skill_name = meta.get("name", name)
    if not isinstance(skill_name, str):
        raise DefinitionError(f"{path}: name: must be a string")
    return Skill(name=skill_name, description=" ".join(description.split()), path=path)


def skill_names(root: Path) -> list[str]:
    """The skills in the agents directory ``root``: the folders of ``skills/`` that hold a SKILL.md."""
    folder = root / "skills"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / "SKILL.md").is_file())
