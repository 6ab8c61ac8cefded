"""The line chat's waits on its loop, through a real terminal: the prompt ends on Ctrl-C or the CLI's exit, and a
permission question is answered by Ctrl-C or by --timeout while the person says nothing."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.test_interactive import PROMPT, chat, finish, only_child


@pytest.fixture
def chats() -> Iterator[list[pexpect.spawn]]:
    """Spawned terminals; any still alive at the end are ended (they are ours)."""
    spawned: list[pexpect.spawn] = []
    yield spawned
    for child in spawned:
        if child.isalive():
            child.terminate(force=True)


def test_ctrl_c_at_the_prompt_ends_the_chat_with_0(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    child.send("half a line")  # typed, not sent: the kernel holds it
    child.sendintr()
    assert finish(child) == 0


def test_the_cli_dying_while_the_person_is_at_the_prompt_ends_the_chat_at_once(
    chats: list[pexpect.spawn], agents_dir: Path
) -> None:
    child = chat(chats, agents_dir)
    child.sendline("hello")
    child.expect("turn 1.")
    child.expect(PROMPT)
    os.kill(only_child(child.pid), signal.SIGKILL)
    child.expect(r"the provider CLI exited \(code -9\) while waiting for you; the session ended")
    assert finish(child) == 1


def test_ctrl_c_at_a_permission_question_denies_and_the_chat_goes_on(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir)
    child.sendline("/tool")
    child.expect(r"\[n\] deny: ")
    child.sendintr()
    child.expect("The tool was denied.")
    child.expect(PROMPT)
    child.sendeof()
    assert finish(child) == 0


def test_timeout_counts_while_a_permission_question_waits(chats: list[pexpect.spawn], agents_dir: Path) -> None:
    child = chat(chats, agents_dir, "--timeout", "2")
    started = time.monotonic()
    child.sendline("/tool")
    child.expect(r"\[n\] deny: ")  # and nobody answers
    child.expect("took longer than 2s")
    assert finish(child) == 124
    assert time.monotonic() - started < 20
