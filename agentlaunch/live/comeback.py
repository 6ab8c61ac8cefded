"""Where a session is brought back: in the folder it ran in, or, when that was a worktree since removed, in a new one.

`restart`, `tmux up` on a dead pane and `tmux up --resume` resume an agent's session in its working directory.
A worktree agentlaunch made for the agent and removed since (the deck's ``M`` merges it and removes it,
`agentlaunch worktrees remove` does the latter) has no folder left to resume in: the agent comes back in a
new worktree of the same repository (``run --worktree``: made from the repository's HEAD, the updated base
after a merge, on ``worktree_branch``, ``worktree_setup`` run in it), at the same path unless
``worktrees_dir`` changed. Its conversation comes with it when the CLI can resume it there (the same
folder, or a CLI that resumes from another: :attr:`ProviderDescriptor.no_resume_elsewhere`), else it
starts a new session, and says which. A plain folder that is gone is refused (exit 2), naming what works.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentlaunch import paths
from agentlaunch.errors import UsageError

if TYPE_CHECKING:
    from agentlaunch.usage.records import SessionRow


class SessionFolderGone(UsageError):
    """The session's working directory is gone and was no worktree agentlaunch made: there is nowhere to resume it."""


@dataclass(frozen=True)
class WayBack:
    """How one agent's session comes back: what `agentlaunch run AGENT` gets and the folder it starts from.

    ``worktree`` is the new worktree it runs in when its own is gone (None: the folder it ran in, as it is);
    ``resumed`` False: the CLI cannot resume the session there, so a new one starts (``why_new`` says why).
    """

    row: SessionRow
    resumed: bool
    start: Path  # the folder `run` starts from: its working directory, or the repository a new worktree is made of
    worktree: Path | None = None
    gone: Path | None = None  # the removed worktree the session ran in
    why_new: str = ""

    @property
    def agent(self) -> str:
        return self.row.agent

    @property
    def args(self) -> list[str]:
        """The arguments of `agentlaunch run AGENT` after its name."""
        resume = ["-r", self.row.session_id] if self.resumed else []
        return [*resume, *(["--worktree"] if self.worktree is not None else []), "--working-dir", str(self.start)]

    def where(self) -> str:
        """Where it runs, for the line that says what is brought back: ``in DIR`` or ``in a new worktree ...``."""
        if self.worktree is None:
            return f"in {self.row.working_dir}"
        was = "there" if self.gone == self.worktree else str(self.gone)
        return f"in a new worktree {self.worktree} of {self.start} (its worktree {was} was removed)"

    def summary(self) -> str:
        """One line after the start, for the deck's message line: which session, in which new worktree."""
        if self.resumed:
            return f"{self.agent}: resumed its session {self.row.session_id[:8]} {self.where()}"
        return f"{self.agent}: new session {self.where()}: {self.why_new}"


def way_back(row: SessionRow, state_dir: Path | None = None, worktrees_dir: Path | None = None) -> WayBack:
    """How ``row`` is resumed: in its folder; in a new worktree when its worktree was removed (resumed when the CLI
    can there, else a new session); a :class:`SessionFolderGone` (exit 2) naming what works when neither.

    ``worktrees_dir``: config.yaml's (None: read it, else ``<state dir>/worktrees``).
    """
    from agentlaunch.providers.descriptors import describe
    from agentlaunch.worktrees import git_worktree as worktree

    folder = Path(row.working_dir)
    if folder.is_dir():
        return WayBack(row, True, folder)
    state_dir = state_dir or paths.state_dir()
    made = worktree.former(state_dir, row.agent, folder)
    cannot = describe(row.provider).no_resume_elsewhere
    if made is None or not Path(made.repo).is_dir():
        was = f"; it was a worktree of {made.repo}, which is gone too" if made is not None else ""
        elsewhere = "" if cannot else f"; agentlaunch run {row.agent} -r {row.session_id[:8]} --working-dir DIR resumes it in DIR"
        raise SessionFolderGone(
            f"{row.agent}'s session {row.session_id[:8]} ran in {folder}, which no longer exists{was}: it cannot be resumed "
            "there",
            hint=f"agentlaunch tmux up {row.agent} --fresh starts {row.agent} in a new session{elsewhere}",
        )
    if worktrees_dir is None:
        from agentlaunch.definitions.settings import load_settings

        worktrees_dir = load_settings().worktrees_dir
    repo = Path(made.repo)
    new = worktree.worktree_path((worktrees_dir or state_dir / "worktrees").resolve(), repo, row.agent)
    here = new == folder or cannot is None
    why = "" if here else f"{cannot} (its session {row.session_id[:8]} ran in {folder})"
    return WayBack(row, here, repo, worktree=new, gone=folder, why_new=why)
