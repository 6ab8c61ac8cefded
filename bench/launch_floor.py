"""The floor under `agentlaunch run AGENT PROMPT`, for bench_launch.py: what no launch written in Python can beat here.

Run by bench_launch.py with the same arguments as the `agentlaunch run` it
measures, after that launch has left its plan. It starts the Python
interpreter, starts the CLI from the plan exactly as the real entry point does
(agentlaunch.launch.early.prespawn), writes one user message, reads to the result and ends
the CLI; nothing else: no definition, rendering, store, meter or view.
"""

from __future__ import annotations

import os
import sys

from agentlaunch.launch.early import prespawn


def main() -> None:
    prespawn.start(sys.argv[1:])
    pending = prespawn.take()
    if pending is None:
        sys.exit("no launch plan to start from: run the agentlaunch side once first")
    pending.adopted = True
    child = pending.child
    child.send_json({"type": "user", "message": {"role": "user", "content": sys.argv[-1]}})
    while (line := child.next_line()) is not None:
        if isinstance(line, str) and '"type":"result"' in line:
            break
    code = child.stop()
    child.close()
    os._exit(code)  # as agentlaunch's entry point ends


if __name__ == "__main__":
    main()
