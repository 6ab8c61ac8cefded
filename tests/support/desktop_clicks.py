"""A ``notify-send`` for the e2e tests that a person "clicks": it takes ``--action`` (its ``--help`` says so), logs
each run's argv (JSON, a line per run) and, run with ``--wait`` (a question's Allow / Deny buttons), waits for the
test to click a button of the notification whose body holds given words (:func:`click`), prints that action's name
as the real one does, and ends. A notification nobody clicks ends by itself after a while, printing nothing (closed).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SCRIPT = """#!{python}
import json, os, sys, time
folder = {folder!r}
if "--help" in sys.argv:
    print("  --action=[NAME=]Text...  Specifies the actions to display to the user.")
    sys.exit(0)
with open(os.path.join(folder, "runs.jsonl"), "a") as log:
    log.write(json.dumps(sys.argv) + "\\n")
if "--wait" not in sys.argv:
    sys.exit(0)
body = sys.argv[-1]
clicks = os.path.join(folder, "clicks")
end = time.monotonic() + 300
while time.monotonic() < end:
    for name in sorted(n for n in os.listdir(clicks) if n.endswith(".json")):
        path = os.path.join(clicks, name)
        try:
            click = json.loads(open(path).read())
        except (OSError, ValueError):
            continue
        if click["words"] in body:
            try:
                os.remove(path)  # one notification takes the click
            except OSError:
                continue
            print(click["action"], flush=True)
            sys.exit(0)
    time.sleep(0.1)
"""


def fake_notify_send(folder: Path) -> Path:
    """The clickable ``notify-send`` in ``folder`` (put ``folder`` first on the launch's PATH, with a DISPLAY)."""
    (folder / "clicks").mkdir(parents=True, exist_ok=True)
    script = folder / "notify-send"
    script.write_text(SCRIPT.format(python=sys.executable, folder=str(folder)))
    script.chmod(0o755)
    return script


def desktop_env(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with the clickable ``notify-send`` first on its PATH and a desktop session named (DISPLAY)."""
    fake_notify_send(folder)
    return {**env, "PATH": f"{folder}{os.pathsep}{env.get('PATH', os.defpath)}", "DISPLAY": ":99"}


def shown(folder: Path) -> list[list[str]]:
    """Each notification shown so far: its ``notify-send`` argv."""
    path = folder / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def shown_with(folder: Path, words: str) -> list[list[str]]:
    """The notifications whose body holds ``words``."""
    return [argv for argv in shown(folder) if words in argv[-1]]


def click(folder: Path, words: str, action: str) -> None:
    """Click ``action``'s button on the notification whose body holds ``words`` (once it is up, or when it comes)."""
    path = folder / "clicks" / f"{len(list((folder / 'clicks').iterdir()))}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"words": words, "action": action}))
    tmp.rename(path)


def clicked(folder: Path) -> bool:
    """Every click was taken by a notification."""
    return not any(p.suffix == ".json" for p in (folder / "clicks").iterdir())
