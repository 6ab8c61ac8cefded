"""The question a running session's CLI asks the person, and its answer from outside the pane (``agentlaunch answer``).

A native launch's source reports a question it can answer (:class:`~agentlaunch.providers.native.source.QuestionAsked`:
Claude Code's held ``PermissionRequest`` hook, an approval request on Codex's app-server connection); the launch keeps
the one open (:class:`OpenQuestions`) until it is answered, here or in the CLI's own interface (the session leaves
``asking``: the question closed). On the control socket (:mod:`agentlaunch.launch.control_request`):

* ``{"question": true}`` is answered ``{"ok": true, "question": {...}}`` (:meth:`Question.shown`: its ``id``, the
  ``tool``, what it asks in one line, its input, the ``options`` the CLI offers), or ``{"ok": false, "no_question":
  true, "error": ...}``;
* ``{"answer": {"question": ID, "decision": D, "text": T}}`` (``D`` one of :data:`DECISIONS`, ``text`` only with
  ``reply``) is answered ``{"ok": true, "answered": ID, "decision": D}`` once the CLI was told, or refused:
  ``no_question`` (nothing is open, and ``ID`` names no question this launch asked), ``changed`` (the question ``ID``
  names closed meanwhile: answered in the interface or by another answer; another may be open), ``budget`` (a
  budget holds the tool: an allow is refused, a deny goes through), ``bad_input``. A reply typed into the CLI's
  screen (Gemini) is answered once the screen shows it submitted, or ``no_question`` when it does not (the words
  taken out again; the question stays open).

The ``id`` names the question the person saw: a digest of the launch's question number, the tool and its input, so
the same tool asked again is another question. The loop is single-threaded: of two answers at once, the first
closes the question and the second is refused as ``changed``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentlaunch.providers.asked import tool_question
from agentlaunch.providers.native.source import Pending

if TYPE_CHECKING:
    from agentlaunch.providers.native.source import QuestionAsked

DECISIONS = ("once", "always", "deny", "reply")
"""Allow the tool once, allow it always (where the CLI offers it), refuse it, or answer a question in words."""
ALLOWING = frozenset({"once", "always"})
INPUT_CHARS = 4000  # of the tool's input shown, at most (JSON)
MAX_REPLY = 16 << 10  # characters of a free-text reply, at most


class Question:
    """One open question: its id, what it asks, the options, and how the CLI is told the answer."""

    def __init__(self, number: int, asked: QuestionAsked) -> None:
        self.tool, self.options = asked.tool, asked.options
        self.asks = asked.asks or tool_question(asked.tool, asked.tool_input)
        try:
            detail = json.dumps(asked.tool_input, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):
            detail = ""
        self.input = detail[:INPUT_CHARS]
        self.id = hashlib.sha256(f"{number}\0{asked.tool}\0{detail}".encode("utf-8", "replace")).hexdigest()[:12]
        self.tell = asked.answer if asked.answer is not None else _cannot

    def shown(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "asks": self.asks, "input": self.input, "options": list(self.options)}


def answer_problem(value: Any) -> str | None:
    """Why ``value`` is not an answer request's ``answer`` object, or None."""
    if not isinstance(value, dict):
        return "the answer is not a JSON object"
    question, decision, text = value.get("question"), value.get("decision"), value.get("text")
    if not isinstance(question, str) or not question:
        return "the answer names no question (its id, as the question was shown)"
    if decision not in DECISIONS:
        return f"the decision must be one of {', '.join(DECISIONS)}"
    if decision == "reply":
        if not isinstance(text, str) or not text.strip():
            return "a reply needs its text"
        if len(text) > MAX_REPLY:
            return f"the reply is {len(text):,} characters; at most {MAX_REPLY:,}"
        if any((c < " " and c not in "\n\t") or "\x7f" <= c <= "\x9f" for c in text):
            return "the reply holds a control character"
    elif text is not None:
        return "only a reply has a text"
    return None


def _cannot(_decision: str, _text: str) -> bool:
    return False


class OpenQuestions:
    """The launch's open question (one at a time: a CLI asks one thing at once), and the answers to it."""

    def __init__(
        self,
        agent: str | Callable[[], str],
        held: Callable[[], str | None] = lambda: None,
        asking: Callable[[], bool] | None = None,
    ) -> None:
        """``agent``: its name (or how to read it); ``held``: why a budget holds tools now (a spent budget, a pause),
        or None; ``asking``: the session is asking (a question is open only while it is; asking with none open: its
        CLI did not hand it over).

        Without ``asking`` (a caller that follows no state) a question stays open until answered or :meth:`closed`."""
        self._agent, self.held = agent, held
        self.follows = asking is not None
        self.asking = asking or (lambda: self.current is not None)
        self.current: Question | None = None
        self._asked = 0
        self._past: set[str] = set()  # the ids of the questions closed: an answer naming one was too late

    @property
    def agent(self) -> str:
        """The agent's name (read when said: a launch names its agent once it is built)."""
        return self._agent if isinstance(self._agent, str) else self._agent()

    def asked(self, item: QuestionAsked) -> Question:
        self._asked += 1
        if self.current is not None:
            self._past.add(self.current.id)
        self.current = Question(self._asked, item)
        return self.current

    def closed(self) -> None:
        """The session is no longer asking: the question was answered (in the interface, say) or withdrawn."""
        if self.current is not None:
            self._past.add(self.current.id)
        self.current = None

    def handle(self, request: dict[str, Any]) -> dict[str, Any] | Pending[dict[str, Any]]:
        """The control socket's reply to a ``question`` or ``answer`` request (never raises); a :class:`Pending` one
        for a reply the CLI takes in a moment (typed into its screen, then seen submitted)."""
        if self.current is not None and not self.asking():
            self.closed()  # the session went on: answered in the interface, withdrawn, or a budget paused it
        if "answer" not in request:
            if self.current is None:
                return {"ok": False, "no_question": True, "error": self._nothing()}
            return {"ok": True, "question": self.current.shown()}
        answer = request["answer"]
        if (problem := answer_problem(answer)) is not None:
            return {"ok": False, "bad_input": True, "error": problem}
        return self._answer(answer["question"], answer["decision"], answer.get("text") or "")

    def _nothing(self) -> str:
        if self.follows and self.asking():
            return (
                f"{self.agent} asks in its own window only (what its CLI asks now does not come to agentlaunch): answer it there"
            )
        return f"{self.agent} asks nothing now"

    def _answer(self, qid: str, decision: str, text: str) -> dict[str, Any] | Pending[dict[str, Any]]:
        question = self.current
        if (question is None or question.id != qid) and qid in self._past:
            now = f"; it asks another now ({question.asks})" if question is not None else "; it asks nothing now"
            return {"ok": False, "changed": True, "error": f"{self.agent}'s question was answered meanwhile{now}"}
        if question is None:
            return {"ok": False, "no_question": True, "error": self._nothing()}
        if question.id != qid:
            return {
                "ok": False,
                "changed": True,
                "error": f"{self.agent} asks another question now ({question.asks}); the one answered was closed",
                "question": question.shown(),
            }
        if decision not in question.options:
            offered = ", ".join(question.options)
            return {"ok": False, "bad_input": True, "error": f"{question.tool}'s question takes {offered}, not {decision}"}
        if decision in ALLOWING and (why := self.held()) is not None:
            return {"ok": False, "budget": True, "error": f"a budget holds {self.agent}'s tools: {why}; deny it instead"}
        self.closed()
        told = question.tell(decision, text)
        if isinstance(told, Pending):  # a reply typed: answered once the screen shows it submitted
            out: Pending[dict[str, Any]] = Pending()
            told.then(lambda taken: out.settle(self._typed(question, decision, taken)))
            return out
        if not told:
            return {
                "ok": False,
                "no_question": True,
                "error": f"{self.agent}'s CLI does not take this answer now (the question closed, or its screen does "
                "not show it; a CLI answered with keys is answered here only in a tmux pane): answer it in its window",
            }
        return {"ok": True, "answered": question.id, "decision": decision}

    def _typed(self, question: Question, decision: str, taken: bool) -> dict[str, Any]:
        """A typed reply's outcome; one not taken leaves its question open (still up, unless another was asked)."""
        if taken:
            return {"ok": True, "answered": question.id, "decision": decision}
        if self.current is None and self.asking():
            self._past.discard(question.id)
            self.current = question
        return {
            "ok": False,
            "no_question": True,
            "error": f"{self.agent}'s CLI did not take the reply: its screen did not show it submitted (the words typed "
            "were taken out of the question's box again where it still showed): nothing answered",
        }
