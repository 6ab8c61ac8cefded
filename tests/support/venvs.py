"""Throwaway virtual environments for the install tests (the wheel, the README's quick start).

A new venv sees the dependencies of the Python running the tests, whatever
that Python is: the system one, or a virtualenv of its own. ``python -m venv
--system-site-packages`` cannot do that from inside a virtualenv (it inherits
the *base* interpreter's site-packages, where typer and the rest may be
missing), so the venv is made plain and a ``.pth`` file lists the running
interpreter's site-packages directories. Those come after the venv's own
site-packages on ``sys.path``, so what is installed into the venv wins; and
``.pth`` files inside them are not processed, so an editable install of the
running interpreter (a path to a checkout) does not leak in.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

OUTER_PTH = "_agentlaunch_tests_outer_site.pth"


@dataclass(frozen=True)
class Venv:
    root: Path
    home: Path
    """A HOME of its own for pip and agentlaunch (caches, state, config never reach the real one)."""

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a user of this venv: its bin first on PATH, no PYTHONPATH, a private HOME and state."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith(("AGENTLAUNCH_", "XDG_"))}
        env.update(
            PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
            VIRTUAL_ENV=str(self.root),
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            AGENTLAUNCH_STATE_DIR=str(self.home / "state"),
        )
        env.update(extra)
        return env


def outer_site_packages() -> list[str]:
    """The site-packages directories of the running interpreter (a virtualenv's own, not its base's)."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    seen: list[str] = []
    for entry in dirs:
        if Path(entry).is_dir() and entry not in seen:
            seen.append(entry)
    return seen


def make_venv(root: Path) -> Venv:
    """A fresh venv at ``root`` (with pip) that also sees the running interpreter's installed packages."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True, timeout=300)
    venv = Venv(root, root.parent / f"{root.name}-home")
    venv.home.mkdir(parents=True, exist_ok=True)
    purelib = subprocess.run(
        [str(venv.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        env=venv.env(),
        timeout=60,
    ).stdout.strip()
    (Path(purelib) / OUTER_PTH).write_text("".join(f"{d}\n" for d in outer_site_packages()))
    return venv


def build_wheel(dest: Path, home: Path) -> Path:
    """Build the checkout's wheel into ``dest`` (the build backend comes from the package index) and return it."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dest), str(REPO)],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    (wheel,) = dest.glob("agentlaunch-*.whl")
    return wheel


def where_agentlaunch_imports_from(venv: Venv, cwd: Path) -> str:
    """The ``agentlaunch/__init__.py`` the venv's Python imports (it must be the venv's, not a checkout's)."""
    return subprocess.run(
        [str(venv.python), "-c", "import agentlaunch; print(agentlaunch.__file__)"],
        cwd=cwd,
        env=venv.env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
