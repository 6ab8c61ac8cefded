"""The e2e tests' CLI versions: the pins, and AGENTLAUNCH_TEST_CLI_VERSIONS to try others (e.g. latest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import clis


def test_without_the_variable_every_cli_runs_at_its_pin() -> None:
    assert clis.requested_versions("") == clis.PINS
    assert set(clis.PINS) == {"claude", "codex", "gemini"}


def test_one_word_applies_to_every_cli() -> None:
    assert clis.requested_versions("latest") == {"claude": "latest", "codex": "latest", "gemini": "latest"}


def test_per_cli_versions_leave_the_others_at_their_pins() -> None:
    chosen = clis.requested_versions("claude=latest, codex=0.171.0")
    assert chosen == {"claude": "latest", "codex": "0.171.0", "gemini": clis.PINS["gemini"]}


@pytest.mark.parametrize("value", ["claud=latest", "claude=", "claude=1.0;rm -rf /", "claude=1,latest", "=1.0"])
def test_a_malformed_value_stops_the_run_with_a_message(value: str) -> None:
    with pytest.raises(ValueError, match="AGENTLAUNCH_TEST_CLI_VERSIONS"):
        clis.requested_versions(value)


def test_each_version_installs_in_a_folder_of_its_own(tmp_path: Path) -> None:
    old = clis.install_root("claude", "2.1.328", tmp_path)
    new = clis.install_root("claude", "2.1.332", tmp_path)
    assert old != new and old.parent == new.parent == tmp_path


def test_the_pinned_specs_name_the_npm_package_at_the_pin() -> None:
    assert clis.PINNED["claude"] == (f"@anthropic-ai/claude-code@{clis.PINS['claude']}", clis.PINS["claude"])


def test_the_machines_node_is_kept_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(clis.NODE_ENV, "system")
    assert clis.ensure_node() is None


@pytest.mark.parametrize("value", ["22;rm -rf /", "../22", "-v"])
def test_a_malformed_node_version_stops_the_run_with_a_message(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(clis.NODE_ENV, value)
    with pytest.raises(ValueError, match=clis.NODE_ENV):
        clis.ensure_node()


def test_use_node_puts_the_folder_first_and_the_compile_cache_in_the_cli_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin")
    monkeypatch.setenv("AGENTLAUNCH_TEST_CLI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NODE_COMPILE_CACHE", raising=False)
    clis.use_node(tmp_path / "node" / "bin")
    import os

    assert os.environ["PATH"] == f"{tmp_path / 'node' / 'bin'}:/usr/bin"
    assert os.environ["NODE_COMPILE_CACHE"] == str(tmp_path / "cache" / "node-compile-cache")
