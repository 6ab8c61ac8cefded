"""Shared fixtures: every test gets its own HOME, state, config and agents directory.

The suite runs on pytest-xdist workers (``-n auto`` in pyproject.toml; ``-n 0`` runs it in one process). The
real provider CLIs are installed once, before the workers start (:func:`pytest_sessionstart`), so that no test
waits behind another's install lock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from tests.support.ssh_server import SshServer

# Hypothesis' per-example deadline (200 ms) is a timing assertion: under the parallel suite on a loaded machine an
# example of a store or a parser took 300 ms and failed. The suite's bound on a hang is pytest-timeout's.
settings.register_profile("agentlaunch", deadline=None)
settings.load_profile("agentlaunch")

# pytest rewrites each test module's asserts on import (about 8 CPU-s for the suite, per process) and keeps the result
# in __pycache__ (git-ignored) only when bytecode may be written: under PYTHONDONTWRITEBYTECODE (set on the project's
# machines) every xdist worker rewrote every module on every run. Here, before any test module is imported, the test
# processes may write it (this process only: the processes the tests start inherit the environment as it is).
sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parent.parent
_INSTALLING = pytest.StashKey[threading.Thread]()
EXAMPLE_AGENTS = REPO / "agents"


def _runs_e2e(config: pytest.Config) -> bool:
    """Whether the run may reach tests/e2e: it is inside the paths asked for, and ``-m`` does not leave it out."""
    if "not e2e" in (config.getoption("markexpr", "") or ""):
        return False
    e2e = (REPO / "tests" / "e2e").resolve()
    paths = _asked_paths(config)
    return any(path == e2e or path in e2e.parents or e2e in path.parents for path in paths)


def _asked_paths(config: pytest.Config) -> list[Path]:
    """The files and folders the run was asked for (``tests`` when none)."""
    here = config.invocation_params.dir
    return [(here / arg.split("::")[0]).resolve() for arg in config.args] or [REPO / "tests"]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal gives it, in every test process (the xdist controller and each worker).

    A shell without job control starts a background command (``pytest &`` in a script, a CI step's wrapper)
    with SIGINT ignored, Python keeps it ignored, and an ignored signal is inherited across exec: every CLI a
    test started would then ignore the Ctrl-C it sends (``status --watch`` kept refreshing, under 3 of 4 full
    runs). The tests start their children as from an interactive shell instead.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    from tests.support import no_linux_lane

    config.pluginmanager.register(no_linux_lane.LanePlugin(), "no-linux-lane")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Start installing the real CLIs the e2e tests run, once, on the xdist controller (or the only process).

    The pinned CLIs and Node.js are one ``npm ci`` of ``tests/clis/package-lock.json``
    (:func:`testbed.clis.ensure_locked`), started here on a thread while the tests that need no CLI run; an
    e2e test waits for it before its timeout starts (:func:`pytest_runtest_protocol`). Each worker's slice of the
    collection weighs about as much as the others' (:func:`pytest_collection_modifyitems`) and begins with about 45 s
    of its tests that start no CLI, so no worker waits for the install on a fresh machine. On a fresh machine
    the install's minute or two is spent beside the other tests instead of before them; once installed it is a
    stamp file read. CLIs asked at another version (``AGENTLAUNCH_TEST_CLI_VERSIONS``) are installed before any
    test, as they always were.
    A failure is left for the tests to report (they ask again and skip, or fail under AGENTLAUNCH_REQUIRE_REAL_CLIS).
    """
    config = session.config
    if hasattr(config, "workerinput"):
        return
    compiling = threading.Thread(target=_compile_package, name="compile-ahead", daemon=True)
    compiling.start()
    tables = threading.Thread(target=_hypothesis_tables, name="hypothesis-tables", daemon=True)
    tables.start()
    try:
        if _runs_e2e(config):
            _start_clis(config)
    finally:
        compiling.join()
        tables.join()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An install still running when the run ends (``-x``, say) is waited for: its npm must not be left writing
    into the cache with the lock released."""
    installing = session.config.stash.get(_INSTALLING, None)
    if installing is not None:
        installing.join()


def _compile_package() -> None:
    """agentlaunch's own modules byte-compiled once, for every ``agentlaunch`` the tests start as a process.

    An editable install leaves no pycs, and under ``PYTHONDONTWRITEBYTECODE`` (set on the project's machines and
    inherited by the tests' children) Python never writes them: each of the suite's many ``agentlaunch`` processes
    (its runs, the relays in tmux panes, ``send``, ``status``) compiled every module it imported again. Measured
    on 2026-12-02: ``agentlaunch run demo hi`` 0.21 CPU-s without pycs, 0.10 with them; ``--help`` 0.30 and 0.15.
    The pycs are the ones Python itself would write (``compileall``: same paths, timestamp-checked, git-ignored).
    """
    import compileall

    compileall.compile_dir(REPO / "agentlaunch", quiet=2)


def _hypothesis_tables() -> None:
    """Hypothesis's Unicode tables built once, before the workers start, in its folder (``.hypothesis/``, git-ignored).

    Its first ``text()`` of a process builds them (measured on 2026-12-07: 1.2 CPU-s, then 0.2 with them on disk); on a
    fresh clone every xdist worker paid that, each at once."""
    import warnings

    from hypothesis import strategies

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .example() outside a test: its warning is for interactive use
        strategies.text().example()


def _start_clis(config: pytest.Config) -> None:
    """The locked install started on a thread; CLIs (or a Node.js) at other versions installed now, each on a thread.

    The locked Node.js's folder is known before it is installed: it goes first on the PATH now, before the workers
    start (they and every CLI the tests start inherit it)."""
    from concurrent.futures import ThreadPoolExecutor

    from testbed import clis

    try:
        others = [name for name, version in clis.requested_versions().items() if version != clis.PINS[name]]
        node, folder = clis.node_version(), clis.locked_node_folder()
        locking = clis.uses_lock()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if locking:

        def install() -> None:
            with contextlib.suppress(pytest.skip.Exception, pytest.fail.Exception):
                clis.ensure_locked()  # a failure: the tests that need it ask again, and report it

        installing = threading.Thread(target=install, name="cli-install", daemon=True)
        installing.start()
        config.stash[_INSTALLING] = installing

    def check(name: clis.CliName) -> None:
        with contextlib.suppress(pytest.skip.Exception, pytest.fail.Exception, ValueError):
            clis.ensure_cli(name)  # a failure: the tests that need it ask again, and report it

    def other_node() -> Path | None:
        with contextlib.suppress(pytest.skip.Exception, pytest.fail.Exception):
            return clis.ensure_node()  # a failure: the CLIs run on the machine's node
        return None

    others_node = node is not None and node != clis.NODE_PIN
    if others or others_node:
        with ThreadPoolExecutor(max_workers=len(others) + 1, thread_name_prefix="cli-check") as pool:
            found = pool.submit(other_node) if others_node else None
            list(pool.map(check, others))
        if found is not None:
            folder = found.result()
    if folder is not None:
        clis.use_node(folder)  # before the workers start: they and every CLI the tests start inherit it
    clis.share_found()  # the workers start after this hook (xdist's own runs last): they need not check again


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the xdist workers, the collection in the order whose slices weigh alike (:mod:`tests.support.suite_order`)."""
    from tests.support.suite_order import order_for_workers

    order_for_workers(config, items)


def _is_e2e(item: pytest.Item) -> bool:
    return item.get_closest_marker("e2e") is not None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """An e2e test waits for the CLIs' install (started by the controller) before its timeout starts.

    Outside the test's own ``timeout``: on a fresh machine the first e2e test of each worker may wait a minute.
    A failed install is reported by the test itself, which asks for its CLI again.
    """
    if _is_e2e(item):
        from testbed.clis import wait_for_install

        wait_for_install()
    return (yield)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject's addopts): two workers per core, not one.

    Most of an e2e test's time is spent waiting (a CLI's own retry backoff, a fake reply held for seconds, a poll
    for a state), so one worker per core leaves cores idle. Full `.ci/run`s on this 2-core machine, otherwise quiet
    (2026-12-02, 1,880 tests): 2 workers 780 s, 4 workers 577 s, 6 workers 554 s with two Gemini/OTLP timing
    failures. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins (xdist's own hook reads it); ``-n N`` is not ``auto``.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return 2 * len(os.sched_getaffinity(0))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, the XDG dirs and agentlaunch's own dirs at a temporary folder."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    monkeypatch.setenv("AGENTLAUNCH_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("AGENTLAUNCH_CONFIG_DIR", str(home / "config"))
    # `status` also lists dead agent panes of the tmux server `tmux up` uses: never a person's own server.
    monkeypatch.setenv("AGENTLAUNCH_TMUX_SOCKET", f"al-test-none-{os.getpid()}")
    for var in (
        "AGENTLAUNCH_AGENTS_DIR",
        "AGENTLAUNCH_TEMPLATES_DIR",
        "NO_COLOR",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "ANTHROPIC_BASE_URL",
        # pytest-xdist's workers export the controller's terminal size; a CLI on the tests' own PTY must see that PTY's.
        "COLUMNS",
        "LINES",
        # No desktop session: a notify-send on the machine never shows a test's "needs you" on a person's screen.
        "DISPLAY",
        "WAYLAND_DISPLAY",
    ):
        monkeypatch.delenv(var, raising=False)
    for var in (
        "AGENTLAUNCH_PRICE_INPUT",
        "AGENTLAUNCH_PRICE_OUTPUT",
        "AGENTLAUNCH_PRICE_CACHE_READ",
        "AGENTLAUNCH_PRICE_CACHE_WRITE",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(autouse=True)
def linux_primitives(
    request: pytest.FixtureRequest, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """A test of the no-Linux lane (``[no-linux]``, :mod:`tests.support.no_linux_lane`), or every test under
    ``AGENTLAUNCH_TEST_NO_LINUX=1``: the Python processes it starts have none of Linux's own primitives."""
    from tests.support.no_linux_lane import MARK, proxied_agentlaunch, without_linux

    lane = request.node.get_closest_marker(MARK) is not None
    if not lane and os.environ.get("AGENTLAUNCH_TEST_NO_LINUX") != "1":
        yield
        return
    log = tmp_path_factory.mktemp("no-linux") / "processes.log"
    without_linux(monkeypatch, log)
    yield
    if lane and _is_e2e(request.node):
        assert proxied_agentlaunch(log), "no agentlaunch process of this test loaded the no-Linux proxy"


@pytest.fixture
def socket() -> Iterator[str]:
    """A private tmux server's name (``tmux -L NAME``) for one test: killed at the end, its socket file removed."""
    name = f"al-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)
    # tmux leaves its socket file behind; it is ours, remove it.
    (Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}" / name).unlink(missing_ok=True)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A real OpenSSH server on 127.0.0.1 for the hosts tests, one per module (tests/support/ssh_server.py); a module
    that uses it says ``need("sshd", "tmux")`` first."""
    from tests.support.ssh_server import start_sshd

    yield from start_sshd(tmp_path_factory.mktemp("sshd"))


@pytest.fixture
def agents_dir(tmp_path: Path) -> Path:
    """A private copy of the example agents."""
    dest = tmp_path / "agents"
    shutil.copytree(EXAMPLE_AGENTS, dest)
    return dest


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path
