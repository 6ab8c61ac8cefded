"""Provider descriptors and adapters: one record per provider, every table derived from them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from agentlaunch.errors import DefinitionError
from agentlaunch.events import CallUsage
from agentlaunch.prefix.capture import CAPTURE_ENV
from agentlaunch.providers import ADAPTERS, DESCRIPTORS, PROVIDERS, describe, get_adapter
from agentlaunch.providers.claude_parser import ClaudeParser
from agentlaunch.providers.descriptors import ProviderDescriptor
from agentlaunch.token_usage import Usage
from agentlaunch.usage.meter import table_window
from agentlaunch.usage.pricing import genai_provider_id


def test_the_schema_literals_agree_with_the_descriptors() -> None:
    from agentlaunch.definitions import schemas

    assert get_args(schemas.Provider) == PROVIDERS
    offered = {delivery for d in DESCRIPTORS.values() for delivery in d.deliveries}
    assert set(get_args(schemas.Delivery)) == offered


@pytest.mark.parametrize("name", PROVIDERS)
def test_every_descriptor_has_an_adapter_of_its_shape(name: str) -> None:
    adapter = get_adapter(name)
    assert adapter.descriptor is describe(name) and adapter.name == name
    assert adapter.persistent is describe(name).persistent
    assert adapter.default_command == describe(name).default_command
    assert adapter.install_hint == describe(name).install_hint
    shape = ("plan", "user_message") if adapter.persistent else ("plan_turn", "calls_in_turn", "state_after_turn")
    assert all(callable(getattr(adapter, method)) for method in shape)


def test_an_unknown_provider_is_a_definition_error_naming_the_known_ones() -> None:
    for lookup in (describe, get_adapter):
        with pytest.raises(DefinitionError, match="'openai' is not supported.*claude, codex, gemini, fake"):
            lookup("openai")


def test_the_facts_once_kept_in_tables_come_from_the_descriptors() -> None:
    assert [describe(p).instructions_file for p in PROVIDERS] == ["CLAUDE.md", "AGENTS.md", "GEMINI.md", "CLAUDE.md"]
    # fake is delivered as claude is (issue 13), so the offline demo shows the default path
    defaults = [describe(p).default_delivery for p in PROVIDERS]
    assert defaults == ["system-prompt", "developer-instructions", "gemini-home", "system-prompt"]
    assert [genai_provider_id(p) for p in PROVIDERS] == ["anthropic", "openai", "google", None]
    assert genai_provider_id("nobody") is None
    assert [describe(p).api for p in PROVIDERS] == ["anthropic", "responses", "gemini", None]
    assert all(d.api is None or d.api in CAPTURE_ENV for d in DESCRIPTORS.values())  # the doctor can point each at its endpoint
    assert describe("claude").system_prompt_argv(Path("/s/CLAUDE.md")) == ["--append-system-prompt-file", "/s/CLAUDE.md"]
    assert describe("fake").system_prompt_argv(Path("/s/CLAUDE.md")) == ["--append-system-prompt-file", "/s/CLAUDE.md"]
    with pytest.raises(ValueError, match="not supported"):
        describe("codex").system_prompt_argv(Path("/s/AGENTS.md"))


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-opus-5", 1_000_000),
        ("claude-3-7-sonnet", 200_000),
        ("gpt-5-codex", 272_000),
        ("gpt-4.1-mini", 1_047_576),
        ("o3", 200_000),
        ("gemini-2.5-pro", 1_048_576),
        ("fake-model", 200_000),
        ("mistral-large", None),
        (None, None),
    ],
)
def test_known_context_windows_come_from_the_descriptors(model: str | None, window: int | None) -> None:
    assert table_window(model) == window


def test_a_descriptor_that_contradicts_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="default delivery"):
        ProviderDescriptor("x", True, "x", "hint", "X.md", deliveries=("file",), default_delivery="system-prompt")
    with pytest.raises(ValueError, match="go together"):
        ProviderDescriptor("x", True, "x", "hint", "X.md", deliveries=("file", "system-prompt"))


@pytest.mark.parametrize("name", ["codex", "gemini"])
def test_a_per_turn_adapter_refuses_a_parser_it_did_not_make(name: str) -> None:
    adapter = get_adapter(name)
    assert not adapter.persistent
    with pytest.raises(TypeError, match="not the"):
        adapter.calls_in_turn(CallUsage(Usage(1)), ClaudeParser(), {})


def test_the_descriptors_import_no_adapter_and_nothing_heavy() -> None:
    probe = (
        "import sys, agentlaunch.providers, agentlaunch.providers.descriptors; "
        "print(sorted(m for m in ('pydantic', 'rich', 'yaml', 'genai_prices', 'jinja2', 'typer', 'agentlaunch.events', "
        "'agentlaunch.providers.claude', 'agentlaunch.providers.claude_parser', 'agentlaunch.providers.codex') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_one_registry_makes_every_provider_s_adapter() -> None:
    assert tuple(ADAPTERS) == PROVIDERS
    for name, make in ADAPTERS.items():
        assert make().descriptor is describe(name)


@pytest.mark.parametrize(
    ("name", "delivery", "finds"),
    [
        ("claude", "system-prompt", True),
        ("claude", "file", True),
        ("fake", "file", True),
        ("codex", "developer-instructions", True),
        ("codex", "file", True),
        ("gemini", "gemini-home", True),
        ("gemini", "file", False),
    ],
)
def test_each_descriptor_names_how_its_cli_finds_the_skills(name: str, delivery: str, finds: bool) -> None:
    assert describe(name).finds_skills(delivery) is finds
    with pytest.raises(ValueError, match="skills route"):
        ProviderDescriptor("x", True, "x", "hint", "X.md", skills_route="plugin-dir")


def test_the_fake_provider_has_no_interface_and_nothing_to_follow_beside_one(tmp_path: Path) -> None:
    from agentlaunch.providers.native.source import NativeContext, NativeExtras

    ctx = NativeContext("a", None, False, tmp_path, {}, tmp_path, 0.0, sys.executable)
    assert get_adapter("fake").native_extras(ctx) == NativeExtras()
    assert get_adapter("fake").interface_notices(["--add-dir", "/x", "p"]) == []
    # Claude Code's skills come through a per-agent CLAUDE_CONFIG_DIR: no folder question to warn about any more
    assert get_adapter("claude").interface_notices(["--append-system-prompt-file", "/x", "p"]) == []
