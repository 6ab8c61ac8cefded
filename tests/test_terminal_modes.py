"""What the native mode switches off after a CLI that crashed, and where it may add bytes (pure, no terminal)."""

from __future__ import annotations

from agentlaunch.launch.native.last_words import last_words, strip_escapes
from agentlaunch.launch.native.terminal import ScreenModes


def fed(*chunks: bytes) -> ScreenModes:
    modes = ScreenModes()
    for chunk in chunks:
        modes.feed(chunk)
    return modes


def test_a_clean_exit_leaves_nothing_to_reset() -> None:
    modes = fed(b"\x1b[?1049h\x1b[?1000;1006h\x1b[?2004h\x1b[?25l", b"hello", b"\x1b[?2004l\x1b[?1000;1006l\x1b[?1049l\x1b[?25h")
    assert modes.reset() == b""


def test_modes_left_on_are_switched_off_alternate_screen_last_cursor_shown() -> None:
    reset = fed(b"\x1b[?1049h\x1b[?1002h\x1b[?2004h\x1b[>1u\x1b[?25l text").reset()
    assert reset == b"\x1b[?1002l\x1b[?2004l\x1b[<1u\x1b[?1049l\x1b[0m\x1b[?25h"


def test_a_sequence_cut_between_two_chunks_is_still_seen() -> None:
    modes = fed(b"abc\x1b[?10", b"49h more")
    assert 1049 in modes.on and modes.at_boundary
    assert modes.reset() == b"\x1b[?1049l\x1b[0m"


def test_no_boundary_inside_an_escape_a_title_or_a_character() -> None:
    assert not fed(b"text \x1b[3").at_boundary
    assert fed(b"text \x1b[31m").at_boundary
    assert not fed(b"\x1b]2;a title that goes on").at_boundary
    assert not fed(b"\x1b]2;a title", b" still").at_boundary
    assert fed(b"\x1b]2;a title", b" ends\x07 after").at_boundary
    assert not fed("é".encode()[:1]).at_boundary
    assert fed("é✓".encode()).at_boundary


def test_a_cli_cut_off_inside_a_sequence_gets_it_cancelled_first() -> None:
    assert fed(b"\x1b[?2004h\x1b[3").reset().startswith(b"\x18")


def test_modify_other_keys_is_reset() -> None:
    assert fed(b"\x1b[>4;2m").reset() == b"\x1b[>4;0m\x1b[0m"
    assert fed(b"\x1b[>4;2m", b"\x1b[>4;0m").reset() == b""


def test_last_words_are_the_text_without_escapes() -> None:
    tail = b"\x1b[2J\x1b[H\x1b[31mError:\x1b[0m cannot start\r\n\x1b]0;title\x07the key was refused\r\n\x1b[?25h"
    assert strip_escapes(tail.decode()).strip().splitlines()[-1] == "the key was refused"
    assert last_words(tail) == ["Error: cannot start", "the key was refused"]
    assert last_words(b"\x1b[?1049h\x1b[?1049l") == []
