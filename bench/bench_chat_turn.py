"""Benchmark a turn inside a running chat: prompt sent -> first answer text, agentlaunch against Claude Code's stream-json.

Run: ``python bench/bench_chat_turn.py [--turns N]``

agentlaunch side: ``agentlaunch run bench --line`` (the line chat) as a person starts it, on a
terminal (a pexpect PTY), its Claude Code session up and one warm-up turn done
(the first turn of a new session also carries the startup message, so it is
not counted). Each timed turn types a prompt and Enter at the ``›`` prompt and
stops the clock when the answer's first text shows on the terminal.

Bare side: the same Claude Code binary started with exactly the argv and
environment agentlaunch gave its own (read from ``/proc`` of agentlaunch's
child; only the session id differs), stdin and stdout pipes, one warm-up turn;
each timed turn writes one stream-json user message and stops the clock at the
first ``text_delta`` on stdout.

Both talk to one fake Anthropic API on 127.0.0.1 that answers every call with
the same two-delta text. Turns alternate (agentlaunch, bare, ...) so drifts
in machine load hit both alike. Prints the medians with their spread, the
ratio of the medians (target <= 1.05) and the middle half of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from statistics import median

import pexpect

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import REPO, find_claude, make_agent, quartiles, sealed_env, spread  # noqa: E402

from agentlaunch.fakeapi.anthropic import FakeAnthropic, TextReply  # noqa: E402

TARGET = 1.05
ANSWER = "Zebra quokka"  # the fake streams it as "Zebra " then "quokka"
FIRST_TEXT = "Zebra"
PROMPT_MARK = "› "
TIMEOUT = 60


class BareClaude:
    """Claude Code on stream-json pipes, fed one user message a turn."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.fd = self.proc.stdin, self.proc.stdout.fileno()
        self.buffer = b""

    def _lines(self, deadline: float):  # type: ignore[no-untyped-def]
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                yield line
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise TimeoutError("bare claude: no answer in time")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError("bare claude exited")
            self.buffer += chunk

    def turn(self, prompt: str) -> float:
        """Seconds from sending ``prompt`` to the first text delta; reads on to the turn's result."""
        message = {"type": "user", "message": {"role": "user", "content": prompt}}
        start = time.perf_counter()
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()
        first: float | None = None
        for raw in self._lines(time.monotonic() + TIMEOUT):
            if first is None and b"text_delta" in raw:
                event = json.loads(raw).get("event") or {}
                if (event.get("delta") or {}).get("type") == "text_delta":
                    first = time.perf_counter() - start
            if b'"result"' in raw and json.loads(raw).get("type") == "result":  # key order varies by version
                break
        if first is None:
            raise RuntimeError("bare claude: the turn ended without text")
        return first

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def agentlaunch_turn(chat: pexpect.spawn, prompt: str) -> float:
    """Seconds from typing ``prompt`` + Enter to the answer's first text on the terminal; waits for the next prompt."""
    start = time.perf_counter()
    chat.sendline(prompt)
    chat.expect_exact(FIRST_TEXT)
    elapsed = time.perf_counter() - start
    chat.expect_exact(PROMPT_MARK)
    return elapsed


def child_plan(pid: int) -> tuple[list[str], dict[str, str]]:
    """argv and environment of the one CLI process agentlaunch (``pid``) started."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if len(children) != 1:
        raise SystemExit(f"expected one child of agentlaunch, found {children}")
    proc = Path("/proc") / children[0]
    argv = [a.decode() for a in proc.joinpath("cmdline").read_bytes().split(b"\0") if a]
    env_items = [e.decode().partition("=") for e in proc.joinpath("environ").read_bytes().split(b"\0") if e]
    return argv, {k: v for k, _, v in env_items}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=15, help="timed alternating pairs of turns (default 15)")
    args = parser.parse_args()
    if args.turns < 2:
        parser.error("--turns must be at least 2")
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="bench-chat-turn-") as tmp_name:
        tmp = Path(tmp_name)
        work, agents = tmp / "work", tmp / "agents"
        work.mkdir()
        make_agent(agents, claude, work)
        api = FakeAnthropic(default=TextReply(ANSWER))
        with api.serve() as server:
            env = sealed_env(tmp, server.url)
            chat = pexpect.spawn(
                sys.executable,
                ["-m", "agentlaunch", "run", "bench", "--line", "--agents-dir", str(agents)],
                env=env,
                cwd=str(REPO),
                dimensions=(40, 120),
                encoding="utf-8",
                timeout=TIMEOUT,
            )
            chat.delaybeforesend = None  # pexpect sleeps 50 ms before every send by default: not the launch's time
            bare: BareClaude | None = None
            try:
                chat.expect_exact(PROMPT_MARK)
                agentlaunch_turn(chat, "warm up")  # carries the startup message: not counted
                argv, child_env = child_plan(chat.pid)
                session = argv.index("--session-id") + 1
                argv[session] = str(uuid.uuid4())
                bare = BareClaude(argv, child_env, work)
                bare.turn("warm up")
                ours: list[float] = []
                theirs: list[float] = []
                for i in range(args.turns):
                    ours.append(agentlaunch_turn(chat, f"turn {i} please"))
                    theirs.append(bare.turn(f"turn {i} please"))
                    print(f"pair {i + 1:2d}: agentlaunch {ours[-1]:.3f}s · claude stream-json {theirs[-1]:.3f}s", flush=True)
            finally:
                if bare is not None:
                    bare.close()
                chat.sendeof()
                chat.expect(pexpect.EOF)
                chat.close()
            calls = len(api.message_requests())
    ratio = median(ours) / median(theirs)
    q1, q3 = quartiles([a / b for a, b in zip(ours, theirs, strict=True)])
    print(f"claude {claude} · {args.turns} alternating pairs of turns · {calls} model calls served")
    print(f"agentlaunch chat turn : {spread(ours)} s to the first text on the terminal")
    print(f"claude stream-json    : {spread(theirs)} s to the first text_delta")
    print(f"ratio                 : {ratio:.3f}  target <= {TARGET:.2f} {'ok' if ratio <= TARGET else 'MISSED'}")
    print(f"  per-pair ratios     : middle half {q1:.3f} .. {q3:.3f}")
    print(f"  difference          : {median(ours) - median(theirs):+.4f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
