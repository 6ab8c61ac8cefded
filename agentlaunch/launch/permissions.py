"""The permission questions of a chat: once, always (for this session) or deny.

A question for a person is asked on the turn's loop (:meth:`~agentlaunch.launch.turn.Turn.ask`), one
at a time, so the CLI's output is still read and ``--timeout`` still counts while they decide. A
program (or a test) may answer at once instead, with a plain function.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Protocol

from agentlaunch.events import PermissionRequest
from agentlaunch.launch.line_input import LineInput, Question
from agentlaunch.providers.untrusted import summarize
from agentlaunch.visible import visible

AskPermission = Callable[[PermissionRequest], str]
"""Answers at once with "once", "always" or "deny" (a program, a test)."""
Reply = Callable[[str], None]
CHOICES = {"y": "once", "a": "always", "n": "deny"}


class PermissionPrompt:
    """The chat's question, asked of the person at their terminal: ``[y] once · [a] always this session · [n] deny``."""

    def __init__(self, person: LineInput) -> None:
        self.person = person

    def question(self, request: PermissionRequest, answered: Reply) -> Question:
        summary = visible(summarize(request.tool_input))
        prompt = f"\nAllow {visible(request.tool_name)} {summary}? [y] once · [a] always this session · [n] deny: "
        return Question(self.person, prompt, parse_choice, answered, default="deny")  # Ctrl-C or Ctrl-D denies


def parse_choice(line: str) -> str | None:
    """once, always or deny for an answer's first letter; None (ask again) for anything else."""
    return CHOICES.get(line.strip().lower()[:1])


class Asks(Protocol):
    """Where a question is put: the running turn."""

    def ask(self, question: Question) -> None: ...


class Permissions:
    """What the person decided, and the tools they allowed for the rest of the session."""

    def __init__(self, set_state: Callable[[str], None]) -> None:
        self.set_state = set_state  # asking while the person decides; tool or thinking once they have
        self.always_allowed: set[str] = set()
        self._waiting: deque[tuple[PermissionRequest, Reply, PermissionPrompt, Asks]] = deque()
        self._asking = False

    def decide(
        self, request: PermissionRequest, ask: AskPermission | PermissionPrompt | None, reply: Reply, turn: Asks | None
    ) -> None:
        """Answer ``request`` through ``reply``: at once for a tool allowed always, with no one to ask (deny) or
        an ``ask`` that answers at once; else once the person has, one question after another."""
        if request.tool_name in self.always_allowed:
            reply("always")
        elif ask is None or (isinstance(ask, PermissionPrompt) and turn is None):
            reply("deny")
        elif isinstance(ask, PermissionPrompt):
            assert turn is not None
            self._waiting.append((request, reply, ask, turn))
            self._next()
        else:
            self.set_state("asking")  # the person is asked: "needs you", the status record, the pane border
            self._decided(request, ask(request), reply)

    def _next(self) -> None:
        while not self._asking and self._waiting:
            request, reply, prompt, turn = self._waiting.popleft()
            if request.tool_name in self.always_allowed:  # "always" was the answer to an earlier question
                reply("always")
                continue
            self._asking = True
            self.set_state("asking")
            turn.ask(prompt.question(request, partial(self._answered, request, reply)))

    def _answered(self, request: PermissionRequest, reply: Reply, decision: str) -> None:
        self._asking = False
        self._decided(request, decision, reply)
        self._next()

    def _decided(self, request: PermissionRequest, decision: str, reply: Reply) -> None:
        if decision == "always":
            self.always_allowed.add(request.tool_name)
        self.set_state("tool" if decision != "deny" else "thinking")
        reply(decision)
