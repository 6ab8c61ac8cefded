#!/usr/bin/env python3
"""A small stand-in for a provider CLI's interactive interface, for the relay's tests.

It runs on the terminal agentlaunch gives it, in raw mode as a TUI does, and says what it sees:
``TUI READY <rows>x<cols> ARGS <json argv>`` at start, ``KEY <hex>`` for every read of keys,
``SIZE <rows> <cols>`` on every SIGWINCH (from ``stty size``), ``TTY <stty -g>`` for ``t``.
It switches on the alternate screen, mouse reports and bracketed paste (``m``), and:
``q`` exits 0 (switching them off again), ``e`` prints a last word and exits 3,
``k`` SIGKILLs itself, ``d`` starts a daemon that leaves its session (double fork, setsid),
``D`` prints the daemon's pid, ``b`` floods 1 MB of text, ``i`` reports the ENV var AGENTLAUNCH_FAKE_TUI_SHOW,
``r`` writes the OSC 7501 report ``FAKE_TUI_REPORT`` (in two writes) and says REPORTED. With ``FAKE_TUI_PROBE=1`` it
first writes the OSC 7501 probe as Claude Code does.
With ``FAKE_TUI_READ_LATE=SECONDS`` it reads keys that long after they arrive (a CLI busy elsewhere: what is
typed meanwhile comes in one read); with ``FAKE_TUI_SPIN=1`` as well, it draws a spinner meanwhile.
With ``FAKE_TUI_STARTS=FILE`` each start appends its pid and argv to FILE as a JSON line.
With ``FAKE_TUI_BUSY_START=SECONDS`` it first works on the CPU that long, saying nothing (a CLI slow to start on
a loaded machine: a quarter of a core, 10 ms of each 40, far above the 2 % that counts as busy), then creates the
file ``FAKE_TUI_BUSY_DONE`` names, if any.

With ``FAKE_TUI_HOOKS=1`` it runs the hooks of the ``--settings`` agentlaunch gives it, as Claude Code
would: ``SessionStart`` at start (then ``UserPromptSubmit`` and ``Stop`` for a startup message, after
``FAKE_TUI_STARTUP_DELAY`` seconds), the same two for a read ending in Enter (no ``Stop`` when what came
before it holds ``hang``: the turn never ends), ``PermissionRequest`` for ``a`` (not waited for: a dialog shows
while it runs).
"""

import json
import os
import select
import signal
import subprocess
import sys
import termios
import time
import tty

out = sys.stdout.buffer


def say(text: str) -> None:
    out.write(text.encode() + b"\r\n")
    out.flush()


def size() -> str:
    return subprocess.run(["stty", "size"], stdin=0, capture_output=True, text=True).stdout.strip()


def on_winch(signum, frame):  # noqa: ANN001
    say(f"SIZE {size()}")


def daemon() -> None:
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    pidfile = os.environ.get("FAKE_TUI_DAEMON_PIDFILE", "/dev/null")
    with open(pidfile, "w") as fh:
        fh.write(str(os.getpid()))
    os.closerange(0, 3)
    while True:
        time.sleep(3600)


def hook(event: str, payload: dict) -> None:
    """Run the hook agentlaunch configured for ``event`` (if told to), with ``payload`` on stdin."""
    if not os.environ.get("FAKE_TUI_HOOKS") or "--settings" not in sys.argv:
        return
    settings = json.loads(sys.argv[sys.argv.index("--settings") + 1])
    for group in settings.get("hooks", {}).get(event, []):
        for entry in group.get("hooks", []):
            subprocess.run(entry["command"], shell=True, input=json.dumps(payload).encode(), check=False)


def main() -> int:
    if os.environ.get("FAKE_TUI_FAIL_AT_ONCE"):
        say("fatal: the fake interface refuses to start (as told)")
        return 2
    if not os.isatty(0):
        # Started as a headless/line-chat CLI (stdin a pipe): wait like one, and fail the first turn it gets.
        if sys.stdin.buffer.readline():
            sys.stdout.write(json.dumps({"type": "result", "is_error": True, "result": "the fake interface needs a terminal"}))
            sys.stdout.write("\n")
            sys.stdout.flush()
            return 1
        return 0
    if os.environ.get("FAKE_TUI_BUSY_START"):
        until = time.monotonic() + float(os.environ["FAKE_TUI_BUSY_START"])
        while time.monotonic() < until:
            spin = time.monotonic() + 0.01
            while time.monotonic() < spin:
                pass
            time.sleep(0.03)
        if os.environ.get("FAKE_TUI_BUSY_DONE"):
            open(os.environ["FAKE_TUI_BUSY_DONE"], "w").close()
    signal.signal(signal.SIGWINCH, on_winch)
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    out.write(b"\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?25l" if os.environ.get("FAKE_TUI_MODES") else b"")
    if os.environ.get("FAKE_TUI_STARTS"):  # one line per start: its pid and argv (the early start's tests)
        with open(os.environ["FAKE_TUI_STARTS"], "a") as log:
            log.write(json.dumps([os.getpid(), sys.argv[1:]]) + "\n")
    if os.environ.get("FAKE_TUI_PROBE"):  # as Claude Code 2.1.332 asks: OSC 7501 ; ? then DA1
        out.write(b"\x1b]7501;?\x07\x1b[c")
    say(f"TUI READY {size()} ARGS {json.dumps(sys.argv[1:])}")
    hook("SessionStart", {"source": "startup"})
    if sys.argv[-1].startswith("<agentlaunch-startup>") and os.environ.get("FAKE_TUI_HOOKS"):
        # The startup message, its first prompt: a turn of its own (FAKE_TUI_STARTUP_DELAY seconds before it starts).
        time.sleep(float(os.environ.get("FAKE_TUI_STARTUP_DELAY") or 0))
        hook("UserPromptSubmit", {"prompt": sys.argv[-1]})
        hook("Stop", {})
        say("STARTUP TURN DONE")
    typed = b""
    try:
        while True:
            if os.environ.get("FAKE_TUI_READ_LATE"):
                select.select([0], [], [])
                late, frame = time.monotonic() + float(os.environ["FAKE_TUI_READ_LATE"]), 0
                while (left := late - time.monotonic()) > 0:
                    if os.environ.get("FAKE_TUI_SPIN"):
                        os.write(1, b"\r" + b"-\\|/"[frame % 4 : frame % 4 + 1])  # a spinner's frame
                        frame += 1
                    time.sleep(min(left, 0.05))
            try:
                data = os.read(0, 4096)
            except InterruptedError:
                continue
            if not data:
                return 0
            say(f"KEY {data.hex()}")
            typed += data
            if data.endswith(b"\r") and os.environ.get("FAKE_TUI_HOOKS"):
                text = typed[:-1].replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b"")  # a paste's text, as a TUI takes it
                hook("UserPromptSubmit", {"prompt": text.decode("utf-8", "replace")})
                if b"hang" not in typed:
                    hook("Stop", {})
                    say("TURN DONE")
                typed = b""
            if data == b"a":
                # Claude Code 2.1.332 shows its dialog while this hook waits (agentlaunch holds it for an answer:
                # notes/claude-findings.md j), so the hook runs beside the interface here too.
                import threading

                threading.Thread(target=hook, args=("PermissionRequest", {"tool_name": "Write"}), daemon=True).start()
                say("ASKED")
            if data == b"q":
                out.write(b"\x1b[?2004l\x1b[?1006l\x1b[?1000l\x1b[?1049l\x1b[?25h")
                out.flush()
                return 0
            if data == b"e":
                say("fake tui: something went wrong, giving up")
                return 3
            if data == b"k":
                os.kill(os.getpid(), signal.SIGKILL)
            if data == b"m":
                out.write(b"\x1b[?1049h\x1b[?1000h\x1b[?1006h\x1b[?2004h\x1b[?25l")
                say("MODES ON")
            if data == b"t":
                say("TTY " + subprocess.run(["stty", "-g"], stdin=0, capture_output=True, text=True).stdout.strip())
            if data == b"d":
                daemon()
                say("DAEMON STARTED")
            if data == b"r":  # its own OSC 7501 report (FAKE_TUI_REPORT), split in two writes as a CLI may
                report = b"\x1b]7501;" + os.environ.get("FAKE_TUI_REPORT", "state=idle:app=fake").encode() + b"\x07"
                out.write(report[:9])
                out.flush()
                time.sleep(0.05)
                out.write(report[9:])
                say("REPORTED")
            if data == b"b":
                line = b"x" * 1023 + b"\n"
                for _ in range(1024):
                    out.write(line)
                out.flush()
                say("FLOOD DONE")
    finally:
        termios.tcsetattr(0, termios.TCSADRAIN, saved)


if __name__ == "__main__":
    sys.exit(main())
