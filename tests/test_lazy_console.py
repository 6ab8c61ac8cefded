"""The consoles are made on first use: starting a launch imports no rich; printing still works."""

from __future__ import annotations

import subprocess
import sys

from agentlaunch.live.lazy_console import LazyConsole


def test_the_launch_modules_and_a_headless_view_import_no_rich() -> None:
    probe = (
        "import io, sys; import agentlaunch.cli.run; from agentlaunch.live.view import HeadlessView; "
        "err = io.StringIO(); view = HeadlessView(None, stdout=io.StringIO(), stderr=err, quiet=True); "
        "before = 'rich' in sys.modules; view.notice('hello'); "
        "print(before, 'rich' in sys.modules, err.getvalue().strip())"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "hello"]


def test_a_lazy_console_is_one_console_made_once() -> None:
    import io

    from rich.console import Console

    buffer = io.StringIO()
    lazy = LazyConsole(file=buffer, width=40, highlight=False)
    lazy.print("[bold]hi[/]", markup=True)
    assert isinstance(lazy.console, Console) and lazy.console is lazy.console
    assert lazy.width == 40 and buffer.getvalue() == "hi\n"
