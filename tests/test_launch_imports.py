"""What a launch imports: agentlaunch.stdlite gives what hashlib and uuid gave, and the launch path imports neither
(nor shutil, nor ``dataclasses`` and the ``inspect`` it loads: its records are agentlaunch.datarecord's, nor
``ctypes.util``: the inotify watch takes libc from the process's own symbols); a native
Claude launch imports none of the Codex app-server route."""

from __future__ import annotations

import ast
import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

from agentlaunch import fsutil, stdlite


def test_sha256_gives_hashlibs_digests() -> None:
    for data in (b"", b"abc", os.urandom(100_000)):
        assert stdlite.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
        assert stdlite.sha256(data).digest() == hashlib.sha256(data).digest()
    fed = stdlite.sha256()
    fed.update(b"ab")
    fed.update(b"c")
    assert fed.hexdigest() == hashlib.sha256(b"abc").hexdigest()


def test_compare_digest_answers_as_hmacs() -> None:
    import hmac

    for a, b in ((b"", b""), (b"key", b"key"), (b"key", b"kez"), (b"key", b"keys"), (b"", b"x")):
        assert stdlite.compare_digest(a, b) is hmac.compare_digest(a, b)


def test_uuid4_is_a_canonical_random_version_4_uuid() -> None:
    seen = {stdlite.uuid4() for _ in range(500)}
    assert len(seen) == 500
    for value in seen:
        parsed = uuid.UUID(value)
        assert str(parsed) == value and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_remove_tree_removes_a_folder_and_ignores_a_missing_one_when_told(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    fsutil.remove_tree(tmp_path / "a")
    assert not (tmp_path / "a").exists()
    fsutil.remove_tree(tmp_path / "a", ignore_errors=True)
    try:
        fsutil.remove_tree(tmp_path / "a")
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("a missing folder is an error unless ignored")


REPO = Path(__file__).resolve().parent.parent


def loaded_of(modules: list[str], wanted: set[str], *, no_site: bool = False) -> list[str]:
    """Which of ``wanted`` importing ``modules`` loads into a fresh interpreter (not what it held at its start: the
    system Python here loads ``shutil`` and ``typing`` itself, from ``.pth`` files in its site-packages).
    ``no_site``: an interpreter without ``site`` (``-S``), the checkout first on its path, which holds none of
    those at its start: for modules that import nothing outside the standard library."""
    script = (f"import sys\nsys.path.insert(0, {str(REPO)!r})\nheld = set(sys.modules)\n"
              f"for m in {modules!r}: __import__(m)\nprint(sorted({wanted!r} & (set(sys.modules) - held)))")  # fmt: skip
    flags = ["-I", "-S"] if no_site else ["-I"]
    done = subprocess.run([sys.executable, *flags, "-c", script], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return list(ast.literal_eval(done.stdout.strip()))


def test_the_early_start_and_a_launchs_modules_import_no_hashlib_uuid_shutil_nor_dataclasses() -> None:
    modules = [
        "agentlaunch.entry", "agentlaunch.launch.early.prespawn", "agentlaunch.launch.early.early_interface",
        "agentlaunch.launch.early.early_appserver", "agentlaunch.launch.early.early_turn", "agentlaunch.cli.run_lean",
        "agentlaunch.launch.modes", "agentlaunch.launch.native.native", "agentlaunch.providers.claude",
        "agentlaunch.providers.codex", "agentlaunch.providers.gemini", "agentlaunch.providers.native.claude",
        "agentlaunch.providers.native.gemini", "agentlaunch.launch.native.native_remote",
    ]  # fmt: skip
    heavy = {"hashlib", "_hashlib", "hmac", "uuid", "platform", "shutil", "dataclasses", "inspect", "ctypes.util", "tempfile"}
    assert loaded_of(modules, heavy) == []
    assert {"dataclasses", "inspect"} <= set(loaded_of([*modules, "agentlaunch.live.tmux"], heavy))  # the check sees them


def test_a_native_claude_launch_imports_none_of_codexs_app_server_route() -> None:
    modules = ["agentlaunch.cli.run_lean", "agentlaunch.launch.native.native", "agentlaunch.providers.claude",
               "agentlaunch.providers.native.claude"]  # fmt: skip
    codex = {"agentlaunch.launch.native.native_remote", "agentlaunch.providers.codex_appserver", "agentlaunch.providers.codex",
             "agentlaunch.providers.native.unix_websocket", "agentlaunch.providers.native.codex_remote"}  # fmt: skip
    assert loaded_of(modules, codex) == []
    assert loaded_of([*modules, "agentlaunch.launch.native.native_remote"], codex) == sorted(codex)  # the check sees them


def test_what_runs_before_the_early_starts_spawn_imports_no_typing() -> None:
    """The entry point and the early starts (headless, interface, app-server) run before the CLI is spawned: typing
    (about 4 ms) and agentlaunch.errors (an IntEnum) wait until after it; the full launch imports them then."""
    early = ["agentlaunch.entry", "agentlaunch.launch.early.prespawn", "agentlaunch.launch.early.early_interface",
             "agentlaunch.launch.early.early_appserver", "agentlaunch.launch.early.early_turn"]  # fmt: skip
    assert loaded_of(early, {"typing", "agentlaunch.errors", "dataclasses"}, no_site=True) == []
    control = [*early, "agentlaunch.launch.identity", "agentlaunch.launch.control"]  # stdlib only, and typing
    assert loaded_of(control, {"typing", "agentlaunch.errors"}, no_site=True) == ["agentlaunch.errors", "typing"]
