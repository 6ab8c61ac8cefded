"""The offline ``fake`` provider CLI: speaks Claude Code's stream-json protocol, never the network.

Run as ``python -m agentlaunch.providers.fake_cli -p --input-format stream-json
--output-format stream-json --session-id UUID`` (or ``--resume UUID``). It
reads the file given with ``--append-system-prompt-file`` and CLAUDE.md from
its working directory once at start, as Claude Code does, and answers every
user line deterministically, saying what it read.
Usage is estimated from bytes: the first call writes the prefix to the cache,
later calls read it, and the context grows turn by turn. Its transcript
totals persist in the state directory so ``--resume`` continues them.

Commands inside a prompt, for demos and tests:
``/tool`` makes a tool call (two model calls; asks the PreToolUse hooks, and
permission with ``--permission-prompt-tool stdio``: ``fake_tool_asks``), ``/fail`` answers like an API error,
``/slow`` streams slowly (to interrupt), ``/think`` streams a thinking block first, ``/big N`` reports N more input
tokens (to cross the compaction threshold).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import re
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from agentlaunch import __version__
from agentlaunch.fsutil import write_atomic
from agentlaunch.paths import state_dir
from agentlaunch.providers.fake_tool_asks import ToolAsks

SYSTEM_TOKENS = 3000  # what a real CLI's own system prompt and tools would weigh


def tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8")) / 4)


def read_summary(text: str) -> str:
    """``N bytes; its first line is: "..."``: what the fake says about a file it read."""
    first_line = next((line for line in text.splitlines() if line.strip()), "")
    return f'{len(text.encode()):,} bytes; its first line is: "{first_line}"'


class FakeCLI:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.session_id: str = args.resume or args.session_id or str(uuid.uuid4())
        self.store = state_dir() / "fake-provider" / f"{self.session_id}.json"
        self.model = args.model or "fake-1"
        self.window = int(os.environ.get("AGENTLAUNCH_FAKE_CONTEXT_WINDOW") or 200_000)
        self.delay = float(os.environ.get("AGENTLAUNCH_FAKE_DELAY") or 0.01)
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.prompt_seen = ""  # the turn's prompt (/think: each message starts with a thinking block)
        self.interrupted = threading.Event()
        self.tool_allowed = True  # what the last tool's hooks answered
        self.asks = ToolAsks(self.emit, self.inbox)
        self.system_prompt = ""
        if args.append_system_prompt_file:
            # Claude Code fails at start when the file is missing; so does its stand-in (see main).
            self.system_prompt = Path(args.append_system_prompt_file).read_bytes().decode("utf-8", "replace")
        try:
            # The bytes as they are (no newline translation), as a byte count should see them.
            self.claude_md = (Path.cwd() / "CLAUDE.md").read_bytes().decode("utf-8", "replace")
        except OSError:
            self.claude_md = ""
        self.state: dict[str, Any] = {"turns": 0, "context": 0, "cost": 0.0, "calls": 0}

    # -- I/O -------------------------------------------------------------
    def emit(self, obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def read_stdin(self) -> None:
        for raw in sys.stdin:
            raw = raw.strip()
            if not raw:
                continue
            try:
                msg = json.loads(raw)
            except ValueError:
                self.emit({"type": "system", "subtype": "warning", "message": "stdin line is not JSON"})
                continue
            if msg.get("type") == "control_request" and (msg.get("request") or {}).get("subtype") == "interrupt":
                self.interrupted.set()
                self.emit({"type": "control_response", "response": {"subtype": "success", "request_id": msg.get("request_id")}})
                continue
            if msg.get("type") == "control_request" and (msg.get("request") or {}).get("subtype") == "initialize":
                self.asks.register(msg.get("request") or {})
                self.emit({"type": "control_response", "response": {"subtype": "success", "request_id": msg.get("request_id")}})
                continue
            self.inbox.put(msg)
        self.inbox.put(None)

    def save(self) -> None:
        self.store.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.store, json.dumps(self.state).encode())

    # -- the conversation ------------------------------------------------
    def run(self) -> int:
        if self.args.resume:
            try:
                self.state = json.loads(self.store.read_text())
            except (OSError, ValueError):
                sys.stderr.write(f"No conversation found with session ID: {self.args.resume}\n")
                return 1
        elif self.store.exists():
            sys.stderr.write(f"Error: Session ID {self.session_id} is already in use.\n")
            return 1
        threading.Thread(target=self.read_stdin, daemon=True).start()
        while True:
            msg = self.inbox.get()
            if msg is None:
                return 0
            if msg.get("type") == "user":
                self.turn(str((msg.get("message") or {}).get("content", "")))

    def call(self, new_input: str, answer: str, *, first_of_turn: bool) -> dict[str, int]:
        """One model call: usage as a caching API would report it."""
        if self.state["calls"] == 0:
            usage = {
                "input_tokens": tokens(new_input),
                "cache_creation_input_tokens": SYSTEM_TOKENS + tokens(self.system_prompt) + tokens(self.claude_md),
                "cache_read_input_tokens": 0,
            }
        else:
            usage = {
                "input_tokens": tokens(new_input),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": self.state["context"],
            }
        big = re.search(r"/big (\d+)", new_input)
        if big and first_of_turn:
            usage["cache_read_input_tokens"] += int(big.group(1))
        usage["output_tokens"] = tokens(answer)
        self.state["calls"] += 1
        self.state["context"] = (
            sum(usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            + usage["output_tokens"]
        )
        return usage

    def stream_message(self, text: str, usage: dict[str, int], tool: dict[str, Any] | None = None) -> bool:
        """Stream one assistant message; False when interrupted."""
        msg_id = f"msg_fake_{uuid.uuid4().hex[:12]}"
        start = dict(usage, output_tokens=1)
        self.emit(
            {
                "type": "stream_event",
                "event": {"type": "message_start", "message": {"id": msg_id, "model": self.model, "usage": start}},
                "session_id": self.session_id,
            }
        )
        slow = "/slow" in text
        if "/think" in self.prompt_seen:  # a thinking block first, as a model with extended thinking streams it
            delta = {"type": "thinking_delta", "thinking": "Let me think about this."}
            event = {"type": "content_block_delta", "index": 0, "delta": delta}
            self.emit({"type": "stream_event", "event": event, "session_id": self.session_id})
        words = re.findall(r"\S+\s*", text)
        for i in range(0, len(words), 4):
            if self.interrupted.is_set():
                return False
            self.emit(
                {
                    "type": "stream_event",
                    "event": {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": "".join(words[i : i + 4])},
                    },
                    "session_id": self.session_id,
                }
            )
            time.sleep(0.5 if slow else self.delay)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if tool:
            content.append({"type": "tool_use", "id": tool["id"], "name": tool["name"], "input": tool["input"]})
        self.emit(
            {
                "type": "assistant",
                "message": {"id": msg_id, "model": self.model, "role": "assistant", "content": content, "usage": start},
                "session_id": self.session_id,
            }
        )
        asked = self.asks.ask_hooks(tool) if tool else []
        self.emit(
            {
                "type": "stream_event",
                "event": {"type": "message_delta", "usage": {"output_tokens": usage["output_tokens"]}},
                "session_id": self.session_id,
            }
        )
        if asked:
            self.tool_allowed = self.asks.allowed_by(asked)
        return True

    def turn(self, prompt: str) -> None:
        self.interrupted.clear()
        self.prompt_seen = prompt
        started = time.monotonic()
        self.state["turns"] += 1
        self.emit(
            {
                "type": "system",
                "subtype": "init",
                "cwd": str(Path.cwd()),
                "session_id": self.session_id,
                "tools": ["Write"],
                "model": self.model,
                "claude_code_version": f"fake-{__version__}",
            }
        )
        usages: list[dict[str, int]] = []
        if "/fail" in prompt:
            self.finish(
                started,
                usages,
                error="API Error: 400 invalid_request_error: fake failure requested with /fail",
            )
            return
        startup = re.search(r'You are (.+?) \(agent "([^"]+)"', prompt)
        said = prompt.split("</agentlaunch-startup>")[-1].strip()
        parts = [f"Fake provider here, turn {self.state['turns']}."]
        if self.system_prompt:
            parts.append(f"I read the system prompt file ({read_summary(self.system_prompt)}).")
        if self.claude_md:
            parts.append(f"I read CLAUDE.md ({read_summary(self.claude_md)}).")
        elif not self.system_prompt:
            parts.append("There is no CLAUDE.md in my working directory.")
        if startup:
            parts.append(f"Startup message received: I am {startup.group(1)} (agent {startup.group(2)}).")
        parts.append(f'You said: "{said[:200]}"' if said else "You sent an empty message.")
        if "/tool" in prompt:
            tool = {
                "id": f"toolu_{uuid.uuid4().hex[:10]}",
                "name": "Write",
                "input": {"file_path": "notes.txt", "content": "fake"},
            }
            usage = self.call(prompt, "I will write notes.txt.", first_of_turn=True)
            usages.append(usage)
            self.tool_allowed = True
            if not self.stream_message("I will write notes.txt.", usage, tool):
                return self.finish(started, usages, interrupted=True)
            if not self.tool_allowed:  # its hook said stop: the turn ends, the tool unrun, no further call
                self.emit(
                    {
                        "type": "user",
                        "message": {
                            "role": "user",
                            "content": [
                                {
                                    "type": "tool_result",
                                    "tool_use_id": tool["id"],
                                    "is_error": True,
                                    "content": "stopped by a hook",
                                }
                            ],
                        },
                        "session_id": self.session_id,
                    }
                )
                return self.finish(started, usages, result="")
            allowed = self.asks.permission(tool, self.args.permission_prompt_tool, self.args.permission_mode)
            self.emit(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": tool["id"],
                                "is_error": not allowed,
                                "content": "wrote notes.txt" if allowed else "permission denied",
                            }
                        ],
                    },
                    "session_id": self.session_id,
                }
            )
            parts.append("The tool was allowed." if allowed else "The tool was denied.")
            answer = " ".join(parts)
            usage = self.call("tool result", answer, first_of_turn=False)
        else:
            answer = " ".join(parts)
            usage = self.call(prompt, answer, first_of_turn=True)
        usages.append(usage)
        if not self.stream_message(answer, usage):
            return self.finish(started, usages, interrupted=True)
        self.finish(started, usages, result=answer)

    def finish(
        self,
        started: float,
        usages: list[dict[str, int]],
        *,
        result: str = "",
        error: str | None = None,
        interrupted: bool = False,
    ) -> None:
        total = {
            k: sum(u.get(k, 0) for u in usages)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
        }
        self.save()
        event: dict[str, Any] = {
            "type": "result",
            "subtype": "error_during_execution" if interrupted else "success",
            "is_error": bool(error or interrupted),
            "duration_ms": int((time.monotonic() - started) * 1000),
            "num_turns": len(usages),
            "session_id": self.session_id,
            "result": error or result,
            "usage": total,
            "modelUsage": {
                self.model: {
                    "inputTokens": total["input_tokens"],
                    "outputTokens": total["output_tokens"],
                    "cacheReadInputTokens": total["cache_read_input_tokens"],
                    "cacheCreationInputTokens": total["cache_creation_input_tokens"],
                    "contextWindow": self.window,
                }
            },
        }
        if error:
            event["api_error_status"] = 400
            event["terminal_reason"] = "api_error"
        self.emit(event)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentlaunch-fake", description="Offline stand-in for Claude Code's stream-json mode.")
    parser.add_argument("-p", "--print", action="store_true")
    parser.add_argument("--input-format", default="stream-json")
    parser.add_argument("--output-format", default="stream-json")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--include-partial-messages", action="store_true")
    parser.add_argument("--session-id")
    parser.add_argument("--resume")
    parser.add_argument("--model")
    parser.add_argument("--permission-prompt-tool")
    parser.add_argument("--permission-mode")
    parser.add_argument("--append-system-prompt-file")
    parser.add_argument("--version", action="version", version=f"{__version__} (agentlaunch fake provider)")
    args, _unknown = parser.parse_known_args(argv)
    if args.input_format != "stream-json" or args.output_format != "stream-json":
        sys.stderr.write("the fake provider speaks --input-format stream-json --output-format stream-json only\n")
        return 2
    try:
        cli = FakeCLI(args)
    except OSError as exc:
        sys.stderr.write(f"Error: cannot read {args.append_system_prompt_file}: {exc.strerror}\n")
        return 1
    return cli.run()


if __name__ == "__main__":
    sys.exit(main())
