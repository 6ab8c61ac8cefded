"""Claude Code's status-line command in a native launch: report the JSON, print agentlaunch's line.

Usage: ``python -I -S claude_statusline.py CONFIG``. Claude Code runs it on
updates with one JSON object on stdin and shows the first line it prints
under the prompt. It reads CONFIG (a small JSON file the launch wrote in its
runtime folder: the hook socket, the live status record, the user's own
status-line command), then

1. sends ``{"event": "statusline"}`` and a newline, then stdin's bytes as they
   came, to the socket (the form of ``hook_report``: nothing serialized again;
   never blocking: a busy launch loses the report, not Claude's time);
2. runs the user's own status-line command, if they have one, with the same
   stdin, for at most ``user_timeout`` seconds (its whole process group is
   killed after that), and keeps the first line it printed (at most 64 KiB
   is read);
3. prints one line: the user's line, then agentlaunch's text (context used
   and window, tokens to compaction, cost so far as agentlaunch priced it
   (Claude Code's own figure, labelled so, when there is no status record),
   whether the prompt cache is warm and for how long). A user command that
   fails or hangs leaves a short note in its place.

Figures only agentlaunch has (its priced cost, its window and compaction
threshold) come from the live status record, which the launch replaces
atomically; the live context comes from Claude's JSON, which is fresher.
It imports only the standard library (it runs on every update) and always
exits 0: a broken status line must never break Claude Code's screen.
"""

from __future__ import annotations

import json
import os
import sys
import time

MAX_INPUT = 1 << 20
MAX_RECORD = 256 << 10
MAX_DATAGRAM = 60_000
MAX_USER_OUTPUT = 64 << 10  # read of the user's status-line command at most: its first line is all that is shown
PIPE_CHUNK = 64 << 10
SEP = " │ "


def _obj(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _count(value: object) -> int | None:
    return value if type(value) is int and 0 <= value < 1 << 53 else None


def _signed(value: object) -> int | None:
    return value if type(value) is int and -(1 << 53) < value < 1 << 53 else None


def _n(value: int) -> str:
    return f"{value:,}"


def _short(value: int) -> str:
    if value >= 1_000_000 and value % 1_000_000 == 0:
        return f"{value // 1_000_000}M"
    if value >= 1_000 and value % 1_000 == 0:
        return f"{value // 1_000}k"
    return _n(value)


def _duration(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def _read_json(path: object, limit: int) -> dict[str, object]:
    if not isinstance(path, str) or not path:
        return {}
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            return {}
        return _obj(json.loads(data.decode("utf-8")))
    except (OSError, ValueError, RecursionError):
        return {}


def send(sock_path: object, payload: object, raw: bytes = b"") -> None:
    """One datagram to the launch (``raw``, Claude's bytes, forwarded as they came); any failure loses only this report."""
    if not isinstance(sock_path, str):
        return
    data = b'{"event": "statusline"}\n' + raw
    if len(data) > MAX_DATAGRAM:
        short = {k: v for k, v in _obj(payload).items() if isinstance(v, str | int | float | bool | dict) and len(str(v)) < 4000}
        data = json.dumps({"event": "statusline", "payload": short, "truncated": True}).encode()
    import socket  # here: a status line with no launch's socket to report to does not need it

    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.setblocking(False)
            sock.sendto(data, sock_path)
        finally:
            sock.close()
    except OSError:
        pass


def run_user(command: str, raw: bytes, timeout: float, cwd: str | None) -> str:
    """The first line the user's own status-line command prints, or a short note when it fails or hangs.

    One deadline, ``timeout``, covers the whole exchange (stdin written, the
    first line read, the exit), and at most :data:`MAX_USER_OUTPUT` bytes are
    read: a command that prints without end is stopped at its first line (or
    at the cap), never buffered whole. Its process group is killed if it is
    still there at the end.
    """
    import contextlib
    import selectors  # only with a command of the user's: subprocess doubles this script's start-up time
    import signal
    import subprocess

    try:
        proc = subprocess.Popen(
            command,
            shell=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd if cwd and os.path.isdir(cwd) else None,
        )
    except OSError as exc:
        return f"(your status line did not start: {exc.strerror or exc})"
    assert proc.stdin is not None and proc.stdout is not None
    deadline = time.monotonic() + timeout
    out = bytearray()
    todo = memoryview(raw)
    timed_out = False
    with selectors.DefaultSelector() as sel:
        os.set_blocking(proc.stdin.fileno(), False)  # a command that never reads stdin must not hold us
        if todo:
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(left):
                if key.fileobj is proc.stdin:
                    try:
                        todo = todo[os.write(key.fd, todo[:PIPE_CHUNK]) :]
                    except BlockingIOError:
                        continue
                    except OSError:  # it closed its stdin: what it did not read is not needed
                        todo = todo[:0]
                    if not todo:
                        sel.unregister(proc.stdin)
                        with contextlib.suppress(OSError):
                            proc.stdin.close()
                    continue
                try:
                    chunk = os.read(key.fd, PIPE_CHUNK)
                except OSError:
                    chunk = b""
                out += chunk[: MAX_USER_OUTPUT - len(out)]
                if not chunk or b"\n" in chunk or len(out) >= MAX_USER_OUTPUT:
                    # End of output, or the first line (or the cap) is here: nothing after it is shown. Our
                    # ends are closed, as `| head -1` would: more output gets it SIGPIPE; it may still exit.
                    for registered in list(sel.get_map().values()):
                        sel.unregister(registered.fileobj)
                    for pipe in (proc.stdin, proc.stdout):
                        with contextlib.suppress(OSError):
                            pipe.close()
    returncode = None
    if not timed_out:
        with contextlib.suppress(subprocess.TimeoutExpired):
            returncode = proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
    if returncode is None:
        # Still running (the deadline, or more output than is read): its whole process group, since a shell's
        # children would otherwise keep the pipe open.
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            proc.wait(timeout=0.5)
    for pipe in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            pipe.close()
    first = bytes(out).decode("utf-8", "replace").splitlines()[0].rstrip() if out.strip() else ""
    if first:
        return first
    if returncode is None:
        return f"(your status line timed out after {timeout:g}s)"
    if returncode:
        return f"(your status line failed: exit {returncode})"
    return ""


def plan_limits(info: dict[str, object], now: float) -> list[str]:
    """``5h 42% · resets 18:20`` (and ``7d …``) from Claude's ``rate_limits`` (a subscription's; absent with an API key).

    A figure that is not a number from 0 to 100 is left out (the launch says so once, from the same JSON); a window
    past its reset started again."""
    parts: list[str] = []
    limits = _obj(info.get("rate_limits"))
    for name, short, stamp in (("five_hour", "5h", "%H:%M"), ("seven_day", "7d", "%a %H:%M")):
        window = _obj(limits.get(name))
        used, resets = window.get("used_percentage"), window.get("resets_at")
        if isinstance(used, bool) or not isinstance(used, int | float) or not 0 <= used <= 100:
            continue
        if isinstance(resets, bool) or not isinstance(resets, int | float) or not 0 < resets < 1 << 40:
            resets = None
        if resets is not None and resets <= now:
            continue
        parts.append(f"{short} {used:.0f}%" if used == int(used) or used >= 10 else f"{short} {used:.1f}%")
        if resets is not None:
            parts.append("resets " + time.strftime(stamp, time.localtime(resets)))
    return parts


def ours(info: dict[str, object], record: dict[str, object], now: float) -> str:
    """agentlaunch's text: context, tokens to compaction, cost, the plan's limits, cache."""
    parts: list[str] = []
    usage = _obj(_obj(info.get("context_window")).get("current_usage"))
    live = [_count(usage.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    context = sum(v for v in live if v is not None) if usage else _count(record.get("context"))
    window = _count(record.get("window")) if record.get("window_source") != "observed" else None
    window = window or _count(_obj(info.get("context_window")).get("context_window_size"))
    # to_compaction is negative once the threshold is passed.
    rec_left, rec_context = _signed(record.get("to_compaction")), _count(record.get("context"))
    threshold = rec_left + rec_context if rec_left is not None and rec_context is not None else None
    if context is None:
        context = 0
    if window:
        parts.append(f"ctx {_n(context)}/{_short(window)} ({100.0 * context / window:.1f}%)")
    else:
        parts.append(f"ctx {_n(context)}")
    crossed = False
    if threshold is not None:
        left = threshold - context
        crossed = left <= 0
        parts.append("past compaction threshold" if crossed else f"{_n(left)} to compaction")
    cost = record.get("cost")
    claude_cost = _obj(info.get("cost")).get("total_cost_usd")
    if isinstance(cost, str) and cost:
        parts.append(cost[:60])
    elif isinstance(claude_cost, int | float) and not isinstance(claude_cost, bool) and 0 < claude_cost < 1e9:
        # No record to read (the launch writes none): Claude Code's own figure, said to be its.
        parts.append(f"${claude_cost:.4f} by Claude's count")
    parts += plan_limits(info, now)
    cache = _obj(info.get("prompt_cache"))
    if cache.get("warm") is True:
        expires = cache.get("expires_at")
        ttl = cache.get("ttl")
        ttl = ttl if isinstance(ttl, str) else ""
        if isinstance(expires, int | float) and not isinstance(expires, bool) and expires > now:
            parts.append(f"cache warm {_duration(expires - now)}" + (f" of {ttl[:8]}" if ttl else ""))
        else:
            parts.append("cache warm")
    elif cache.get("warm") is False and cache.get("caching_observed") is True:
        parts.append("cache cold")
    text = " · ".join(parts)
    return ("⚠ " + text) if crossed else text


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        return 0
    config = _read_json(argv[1], 64 << 10)
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT)
    except (OSError, ValueError):
        raw = b""
    try:
        info = _obj(json.loads(raw.decode("utf-8", "replace"))) if raw.strip() else {}
    except (ValueError, RecursionError):
        info = {}
    send(config.get("socket"), info or None, raw)
    # Only printable text of ours: a record is anyone's file, and this line goes to a terminal.
    text = "".join(c for c in ours(info, _read_json(config.get("status"), MAX_RECORD), time.time()) if c.isprintable())
    user = config.get("user_command")
    if isinstance(user, str) and user.strip():
        timeout = config.get("user_timeout")
        timeout = float(timeout) if isinstance(timeout, int | float) and 0 < timeout <= 30 else 1.5
        cwd = info.get("cwd")
        cwd = cwd if isinstance(cwd, str) else None
        theirs = run_user(user, raw, timeout, cwd)
        # Their colours (escape sequences) stay theirs; other control characters would break the line.
        theirs = "".join(c for c in theirs if c.isprintable() or c == "\x1b")
        if theirs:
            text = theirs + "\x1b[0m" * ("\x1b" in theirs) + SEP + text
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
