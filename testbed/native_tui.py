"""Codex's and Gemini's interfaces for native-mode tests (driven on a PTY and read with :mod:`testbed.pty_screen`):
the seeding of a temporary HOME the way a set-up user's is, for Codex
(fake ``model_providers`` entry, the project trusted, the model-migration
notice already acknowledged) and Gemini (API-key auth, workspace trusted), and
a Responses fake that answers Codex TUI's thread-title call on its own (that
call is not part of the turn a test scripts).
"""

from __future__ import annotations

from pathlib import Path

from agentlaunch.fakeapi.responses import (
    ResponsesFake,
    ResponsesUsage,
    TextReply,
    is_responses_call,
    prepare_codex_home,
    user_texts,
)
from agentlaunch.fakeapi.server import Recorded, Reply

TITLE_PROMPT = "Generate a concise, single-line task title"
TITLE_USAGE = ResponsesUsage(input_tokens=321, cached_tokens=0, output_tokens=4)


class TitledResponsesFake(ResponsesFake):
    """The Responses fake, answering Codex TUI's thread-title request itself (never from the script)."""

    def _respond(self, rec: Recorded) -> Reply:
        body = rec.body if is_responses_call(rec) else None
        if isinstance(body, dict) and any(TITLE_PROMPT in text for text in user_texts(body)):
            return Reply(chunks=self._text_stream(0, str(body.get("model", "")), TextReply("Run a command", TITLE_USAGE)))
        return super()._respond(rec)

    @property
    def turn_requests(self) -> list[Recorded]:
        """The model requests of the conversation itself (not the title call)."""
        return [r for r in self.model_requests if not any(TITLE_PROMPT in t for t in user_texts(r.body))]


def seed_codex_home(home: Path, base_url: str, workdir: Path, extra: str = "") -> dict[str, str]:
    """A set-up user's Codex home: the fake provider, the project trusted, the model notice acknowledged."""
    config = f'[projects."{workdir}"]\ntrust_level = "trusted"\n\n[notice.model_migrations]\n"gpt-5.5" = "gpt-6-sol"\n'
    env = prepare_codex_home(home, base_url, extra_config=config + extra)
    env["TERM"] = "xterm-256color"
    return env
