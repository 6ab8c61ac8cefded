"""The rendered instructions and startup message kept by the digest of their inputs (definitions/render_cache.py)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from agentlaunch.definitions import render_cache
from agentlaunch.definitions.render import RunFacts, render_instructions, render_startup
from agentlaunch.definitions.spec import load_agent
from testbed.agent_files import write_agent
from tests.conftest import EXAMPLE_AGENTS

DAY = date(2026, 11, 30)
NOW = datetime(2026, 11, 30, 14, 23, tzinfo=UTC)
SID = "0b7c2d4e-1f2a-4b3c-8d9e-0123456789ab"


def kept(state: Path) -> list[Path]:
    return sorted((state / render_cache.CACHE_DIR).glob("*.json"))


@pytest.mark.parametrize("agent", ["demo", "reviewer", "planner"])
def test_kept_instructions_are_the_rendered_ones_byte_for_byte(agent: str, tmp_path: Path) -> None:
    spec = load_agent(EXAMPLE_AGENTS, agent)
    fresh = render_instructions(spec, Path("/work/example"), DAY)
    first = render_cache.instructions(spec, Path("/work/example"), DAY, tmp_path)
    assert len(kept(tmp_path)) == 1
    again = render_cache.instructions(spec, Path("/work/example"), DAY, tmp_path)
    assert first == fresh and again == fresh  # every field: text, filename, volatile uses, offset, parts
    assert again.data == fresh.data


def test_kept_instructions_are_used_without_rendering(agents_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_agent(agents_dir, "reviewer")
    render_cache.instructions(spec, tmp_path, DAY, tmp_path / "state")
    import agentlaunch.definitions.render as render

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("rendered again although no input changed")

    monkeypatch.setattr(render, "render_instructions", refuse)
    assert render_cache.instructions(spec, tmp_path, DAY, tmp_path / "state").text.startswith("You are")


def test_every_input_change_renders_again(agents_dir: Path, tmp_path: Path) -> None:
    state, templates = tmp_path / "state", tmp_path / "templates"
    templates.mkdir()
    write_agent(agents_dir, "a", {"provider": "claude", "bundles": ["house-style"]}, {"soul.md": "Soul {{DATE}}.\n"})

    def render(working_dir: Path = tmp_path, day: date = DAY, provider_agent: str = "a") -> str:
        spec = load_agent(agents_dir, provider_agent)
        got = render_cache.instructions(spec, working_dir, day, state, templates)
        assert got == render_instructions(spec, working_dir, day, templates_dir=templates)
        return got.text

    base = render()
    assert render(day=date(2026, 12, 1)) != base  # a variable
    assert render(working_dir=tmp_path / "elsewhere") == base  # WORKING_DIR unused: same text, its own key
    (agents_dir / "a" / "soul.md").write_text("Another soul.\n")  # a part
    assert "Another soul." in render()
    (agents_dir / "bundles" / "house-style.md").write_text("New house style.\n")  # a bundle
    assert "New house style." in render()
    (templates / "instructions.md.j2").write_text("TEMPLATE {% for s in sections %}{{ s.text }}{% endfor %}\n")
    assert render().startswith("TEMPLATE ")  # a template
    (templates / "extra.md").write_text("included\n")  # a file a part may include
    (agents_dir / "a" / "soul.md").write_text('{% include "extra.md" %}')
    assert "included" in render()
    (templates / "extra.md").write_text("changed include\n")
    assert "changed include" in render()


def test_a_new_agentlaunch_version_renders_again(agents_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_agent(agents_dir, "reviewer")
    render_cache.instructions(spec, tmp_path, DAY, tmp_path / "state")
    monkeypatch.setattr(render_cache, "__version__", "99.0.0")
    render_cache.instructions(spec, tmp_path, DAY, tmp_path / "state")
    assert len(kept(tmp_path / "state")) == 2


def test_a_damaged_record_is_rendered_again(agents_dir: Path, tmp_path: Path) -> None:
    spec = load_agent(agents_dir, "reviewer")
    fresh = render_cache.instructions(spec, tmp_path, DAY, tmp_path)
    (record,) = kept(tmp_path)
    for damage in (b"{", b"[]", b'{"text": 1}', b'{"text": "x", "filename": "CLAUDE.md", "offset": null}'):
        record.write_bytes(damage)
        assert render_cache.instructions(spec, tmp_path, DAY, tmp_path) == fresh


def test_startup_message_is_kept_with_a_stand_in_for_the_session(agents_dir: Path, tmp_path: Path) -> None:
    spec = load_agent(agents_dir, "reviewer")
    for sid in (SID, "another-session", None):
        expected = render_startup(spec, RunFacts(spec.provider, spec.model, sid, tmp_path, NOW))
        assert render_cache.startup(spec, sid, tmp_path, NOW, tmp_path / "state") == expected
        assert render_cache.startup(spec, sid, tmp_path, NOW, tmp_path / "state") == expected
    records = kept(tmp_path / "state")
    assert len(records) == 2  # one with the stand-in (both ids), one without an id
    assert all(SID not in r.read_text() for r in records)
    later = render_cache.startup(spec, SID, tmp_path, datetime(2026, 11, 30, 14, 31, tzinfo=UTC), tmp_path / "state")
    assert "14:30" in later and len(kept(tmp_path / "state")) == 3  # another ten minutes: another message


def test_a_startup_template_of_the_users_own_is_never_kept(agents_dir: Path, tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "startup.md.j2").write_text("{{ session_id[:4] }} {{ now }}\n")
    spec = load_agent(agents_dir, "reviewer")
    assert render_cache.startup(spec, SID, tmp_path, NOW, tmp_path / "state", templates).startswith(SID[:4] + " ")
    assert kept(tmp_path / "state") == []


def test_an_unchanged_agent_launches_without_jinja(agents_dir: Path, tmp_path: Path) -> None:
    """A second placement and startup message of the same agent import no Jinja (a subprocess: a clean import)."""
    script = (
        "import sys; from datetime import date, datetime, UTC; from pathlib import Path\n"
        "from agentlaunch.definitions.spec import load_agent\n"
        "from agentlaunch.launch.placement import place_instructions\n"
        "from agentlaunch.launch.identity import startup_message\n"
        "a, w, s = map(Path, sys.argv[1:4])\n"
        "spec = load_agent(a, 'reviewer', s)\n"
        "p = place_instructions(spec, w, s, date(2026, 11, 30))\n"
        "m = startup_message(spec, 'sid-1', w, datetime(2026, 11, 30, 9, tzinfo=UTC), None, s)\n"
        "print(len(p.rendered.text), len(m), 'jinja2' in sys.modules)\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    argv = [sys.executable, "-c", script, str(agents_dir), str(work), str(tmp_path / "state")]
    first = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    second = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    assert first[2] == "True" and second == [*first[:2], "False"]
