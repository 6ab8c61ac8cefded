"""Generated hostile input for the definition loader and the templates: only DefinitionErrors, never a crash.

Bounded (max_examples, small sizes) so these add seconds, not minutes, to the suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentlaunch.definitions.render import make_env, render_string
from agentlaunch.definitions.spec import load_agent
from agentlaunch.definitions.yamlload import safe_load
from agentlaunch.errors import DefinitionError

SETTINGS = settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
KEYS = st.sampled_from(
    [
        "provider",
        "display",
        "id",
        "model",
        "soul",
        "instructions",
        "bundles",
        "skills",
        "working_dir",
        "accounts",
        "peers",
        "startup",
        "provider_flags",
        "command",
        "context_window",
        "compaction_buffer",
        "env",
        "permission_mode",
        "allowed_tools",
        "delivery",
        "prefix_order",
        "unknown",
    ]
)
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=30)
    | st.sampled_from(
        ["claude", "fake", "all", "file", "system-prompt", "../../etc/passwd", "/etc/passwd", "house-style", "a\n", ""]
    ),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=15,
)
# YAML-looking fragments: anchors, aliases, tags, flow and block collections, documents, odd scalars.
FRAGMENTS = st.sampled_from(
    [
        "provider: fake\n",
        "a: &x [1, 2]\n",
        "b: *x\n",
        "c: *nope\n",
        "<<: *x\n",
        "!!python/object:os.system\n",
        "---\n",
        "...\n",
        "[",
        "]",
        "{",
        "}",
        ": ",
        "- ",
        "  ",
        "\t",
        "?",
        "&a ",
        "*a ",
        "!!binary |\n  AAAA\n",
        "%YAML 1.1\n",
        "env: {K: v}\n",
        "env: [1]\n",
        "'",
        '"',
        "#",
        "\n",
        "\x00",
        "\ufeff",
        "provider: fake\nprovider: fake\n",
    ]
)


def _load(agents_dir: Path, text: str | bytes, state_dir: Path | None) -> None:
    folder = agents_dir / "gen"
    folder.mkdir(exist_ok=True)
    (folder / "agent.yaml").write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    try:
        load_agent(agents_dir, "gen", state_dir)
    except DefinitionError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        assert all(len(p) < 5000 for p in exc.problems), "a problem line echoes a huge value"


@SETTINGS
@given(config=st.dictionaries(KEYS, VALUES, max_size=8))
def test_any_agent_yaml_mapping_loads_or_is_a_definition_error(agents_dir: Path, tmp_path: Path, config: dict[str, Any]) -> None:
    _load(agents_dir, yaml.safe_dump(config), tmp_path / "state")


@SETTINGS
@given(parts=st.lists(FRAGMENTS | st.text(max_size=10), max_size=20))
def test_any_yaml_text_loads_or_is_a_definition_error(agents_dir: Path, parts: list[str]) -> None:
    _load(agents_dir, "".join(parts), None)


@SETTINGS
@given(data=st.binary(max_size=300))
def test_any_bytes_as_agent_yaml_load_or_are_a_definition_error(agents_dir: Path, data: bytes) -> None:
    _load(agents_dir, data, None)


# Levels are depth + 1 for "[" and "{a: " (inside x's mapping), depth for "- ": each kind's last accepted and first
# refused level, always; then half the draws near the bound (uniform over 55..30000 gave 1 in 120 within 60..70).
# 30 draws, not 120: a "[" deeper than ~500 costs PyYAML's scanner 0.7 s (its 1024-character simple-key lookahead),
# and refused at 65 levels, 1,100 deep or 30,000 deep load alike. 30,000 deep stays pinned by the explicit examples.
@settings(SETTINGS, max_examples=30)
@given(
    depth=st.integers(min_value=55, max_value=80) | st.integers(min_value=81, max_value=30_000),
    kind=st.sampled_from(["[", "{a: ", "- "]),
)
@example(depth=63, kind="[").via("the last level accepted")
@example(depth=64, kind="[").via("the first level refused")
@example(depth=63, kind="{a: ").via("the last level accepted")
@example(depth=64, kind="{a: ").via("the first level refused")
@example(depth=64, kind="- ").via("the last level accepted")
@example(depth=65, kind="- ").via("the first level refused")
@example(depth=30_000, kind="[").via("far past the bound")
@example(depth=30_000, kind="{a: ").via("far past the bound")
@example(depth=2_000, kind="- ").via("far past the bound")
def test_deep_yaml_is_refused_with_its_line_exactly_past_64_levels(depth: int, kind: str) -> None:
    if kind == "- ":
        depth = min(depth, 2000)
        text, levels = "".join("  " * i + "-\n" for i in range(depth)), depth  # block sequences, one in another
    else:
        text, levels = "x: " + kind * depth + "1" + ("]" if kind == "[" else "}") * depth, depth + 1  # inside x's mapping
    try:
        safe_load(text)
    except yaml.YAMLError as exc:
        assert levels > 64 and "nested deeper than 64 levels" in str(exc)
        assert getattr(exc, "problem_mark", None) is not None
    else:
        assert levels <= 64


TEMPLATE_BITS = st.sampled_from(
    [
        "{{ ",
        " }}",
        "{% for i in range(",
        ") %}",
        "{% endfor %}",
        "{% macro m(n) %}",
        "{% endmacro %}",
        "{{ m(1) }}",
        "'x'",
        " * ",
        " ** ",
        " % ",
        " ~ ",
        "10",
        "99999",
        "(",
        ")",
        "[",
        "]",
        "|join",
        "|format(",
        "|center(",
        "|list",
        "lipsum(",
        "loop.index",
        "AGENT",
        "{% set x = ",
        " %}",
        "x",
        "{% if x %}",
        "{% endif %}",
        ",",
        "'%*d'",
        "{# ",
        " #}",
        "{% raw %}",
        "{% endraw %}",
        "\n",
        "__class__",
        ".__mro__",
        "cycler",
        "namespace()",
    ]
)


@SETTINGS
@given(bits=st.lists(TEMPLATE_BITS | st.text(max_size=5), max_size=25))
def test_any_template_text_renders_or_is_a_definition_error(bits: list[str]) -> None:
    text = "".join(bits)
    try:
        out = render_string(make_env(), text, {"AGENT": "gen"}, "gen/soul.md")
    except DefinitionError as exc:
        assert exc.message.startswith("gen/soul.md: template: ")
    else:
        assert isinstance(out, str) and len(out) <= 16 << 20
