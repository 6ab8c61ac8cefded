"""One exception root; every user-facing failure is an AgentlaunchError.

The CLI catches it in one place, prints ``message`` (already phrased for a
person: file, field, what is wrong, what to do) and exits with ``exit_code``.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """The documented exit codes (docs/scripting.md, "Exit codes")."""

    OK = 0
    TURN_FAILED = 1
    USAGE = 2  # bad command line (click's own code)
    DEFINITION = 3  # agent definition, template or configuration problem
    REFUSED_OVERWRITE = 4  # a file that is the user's own would have been replaced
    STATE = 5  # a file agentlaunch keeps or delivers cannot be used: state directory, usage store, instructions file
    BUDGET = 6  # a budget stopped the agent (or refused to start it)
    NOT_TAKEN = 7  # agentlaunch send: no running session of the agent could take the prompt (none runs, it is busy)
    WORKTREE_SETUP = 8  # a worktree_setup command of agent.yaml failed in the agent's new worktree: it was not started
    NO_QUESTION = 9  # agentlaunch answer: the agent asks nothing now (or its CLI no longer waits for the answer)
    QUESTION_CHANGED = 10  # agentlaunch answer: the question answered is closed, another one is open: nothing answered
    HOST_UNREACHABLE = 11  # a host of config.yaml: no connection (down, slow, refused): nothing ran there
    HOST_DROPPED = 12  # the connection to a host dropped while the command ran there: what was done is said
    HOST_NOT_READY = 13  # a host lacks what the command needs: agentlaunch (or one of this fleet contract), tmux, a CLI
    TIMEOUT = 124
    PROVIDER_MISSING = 127
    INTERRUPTED = 130


class AgentlaunchError(Exception):
    """Root of every error agentlaunch reports to a person."""

    exit_code: ExitCode = ExitCode.DEFINITION

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(AgentlaunchError):
    """A bad command line that click itself cannot see (an empty prompt, say)."""

    exit_code = ExitCode.USAGE


class DefinitionError(AgentlaunchError):
    """The agent definition cannot be used; ``problems`` are ``FILE: FIELD: message`` lines."""

    exit_code = ExitCode.DEFINITION

    def __init__(self, problems: list[str] | str, *, hint: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems), hint=hint)


class RefusedOverwrite(AgentlaunchError):
    exit_code = ExitCode.REFUSED_OVERWRITE


class StateError(AgentlaunchError):
    exit_code = ExitCode.STATE


class ProviderMissing(AgentlaunchError):
    exit_code = ExitCode.PROVIDER_MISSING


class TurnFailed(AgentlaunchError):
    exit_code = ExitCode.TURN_FAILED


class TurnTimeout(AgentlaunchError):
    exit_code = ExitCode.TIMEOUT


class BudgetExceeded(AgentlaunchError):
    """A budget stopped the agent, or refused to start it; ``spent`` says what was spent against which limit."""

    exit_code = ExitCode.BUDGET

    def __init__(self, message: str, *, hint: str | None = None, spent: str = "") -> None:
        super().__init__(message, hint=hint)
        self.spent = spent or message


class PromptNotTaken(AgentlaunchError):
    """``agentlaunch send``: the agent is not running, or its session cannot take a prompt now (asking, in a turn)."""

    exit_code = ExitCode.NOT_TAKEN


class NoQuestion(AgentlaunchError):
    """agentlaunch answer: the agent asks nothing now."""

    exit_code = ExitCode.NO_QUESTION


class QuestionChanged(AgentlaunchError):
    """agentlaunch answer: the question named is closed (answered meanwhile) and another one is open."""

    exit_code = ExitCode.QUESTION_CHANGED


class HostUnreachable(AgentlaunchError):
    """A host of config.yaml could not be reached (down, slow, auth or host key refused): nothing ran there."""

    exit_code = ExitCode.HOST_UNREACHABLE


class HostDropped(AgentlaunchError):
    """The connection to a host dropped while a command ran there; the message says what is known to be done."""

    exit_code = ExitCode.HOST_DROPPED


class HostNotReady(AgentlaunchError):
    """A host lacks what the command needs there (agentlaunch, one speaking this fleet contract, tmux, a CLI)."""

    exit_code = ExitCode.HOST_NOT_READY


class Interrupted(AgentlaunchError):
    exit_code = ExitCode.INTERRUPTED
