#!/usr/bin/env python3
"""A stand-in for `claude -p` in doctor tests: one Messages request to $ANTHROPIC_BASE_URL, then exit.

The body carries a tool, a system prompt (plus the --append-system-prompt-file
text), and a first user message naming the working directory, like the real
CLI. FAKE_CLAUDE_MODE: ``sleep`` never calls, ``fail`` exits 1, ``phone-home``
first tries https://example.invalid through the proxy, ``skills-in-no-order`` lists two skills in its
own prompt in the other order each run (as Gemini CLI may; the count is in $FAKE_CLAUDE_COUNTER). It has no interface of
its own: started without ``-p`` (the doctor's interactive leg) it exits 2 at
once, as a headless-only CLI does.
"""

import contextlib
import json
import os
import sys
import time
import urllib.request

if sys.argv[1:] == ["--version"]:
    print("9.9.9 (Fake Claude)")
    sys.exit(0)
if "-p" not in sys.argv[1:]:
    print("Error: this stand-in has no interactive interface (use -p)", file=sys.stderr)
    sys.exit(2)
mode = os.environ.get("FAKE_CLAUDE_MODE", "")
if mode == "sleep":
    time.sleep(600)
if mode == "fail":
    print("Error: fake claude was told to fail", file=sys.stderr)
    sys.exit(1)
if mode == "phone-home":
    with contextlib.suppress(Exception):
        urllib.request.urlopen("https://example.invalid/telemetry", timeout=5)
args = sys.argv[1:]
system = [{"type": "text", "text": "You are a fake Claude."}]
if mode == "skills-in-no-order":
    counter = os.environ["FAKE_CLAUDE_COUNTER"]
    runs = 0
    if os.path.exists(counter):
        with open(counter) as fh:
            runs = int(fh.read())
    with open(counter, "w") as fh:
        fh.write(str(runs + 1))
    system[0]["text"] += " Skills: " + ("one, two" if runs % 2 == 0 else "two, one")
if "--append-system-prompt-file" in args:
    with open(args[args.index("--append-system-prompt-file") + 1]) as fh:
        system.append({"type": "text", "text": fh.read()})
first = [{"type": "text", "text": "Environment: cwd " + os.getcwd()}]
if os.path.exists("CLAUDE.md"):
    with open("CLAUDE.md") as fh:
        first.append({"type": "text", "text": "Contents of " + os.path.abspath("CLAUDE.md") + ":\n\n" + fh.read()})
line = sys.stdin.readline()
first.append({"type": "text", "text": json.loads(line)["message"]["content"]})
body = {
    "model": "claude-fake",
    "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}],
    "system": system,
    "messages": [{"role": "user", "content": first}],
    "stream": True,
}
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages?beta=true",
    data=json.dumps(body).encode(),
    headers={"content-type": "application/json", "x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")},
)
urllib.request.urlopen(request, timeout=30).read()
