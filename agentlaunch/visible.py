"""Text from a provider or a state file, made visible and harmless before it is printed.

A model name, a tool name, a summary or a record field is data agentlaunch
does not control: an escape sequence in it would retitle the terminal, clear
it or hide what follows, and reach a pipe raw. :func:`visible` writes every
control character (C0, DEL, C1) and every bidirectional override as a
visible escape (``\\x1b``, ``\\u202e``); printable text, including any
script, is unchanged. JSON output needs none of this: ``json.dumps`` escapes
control characters itself (also with ``ensure_ascii=False``).
"""

from __future__ import annotations

# Bidirectional embeddings, overrides and isolates reorder what follows them on screen.
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_LINE_BREAKS = [0x2028, 0x2029]  # line and paragraph separators: a new line inside a table cell


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_ONE_LINE = {code: _escape(code) for code in [*range(0x20), *range(0x7F, 0xA0), *_BIDI, *_LINE_BREAKS]}
_ONE_LINE.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
_MANY_LINES = {code: text for code, text in _ONE_LINE.items() if code not in (ord("\n"), ord("\t"))}


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters and bidi overrides written as escapes.

    ``keep_newlines`` keeps line feeds and tabs as they are (an answer's text);
    without it the result is one line (a table cell, a status line).
    """
    if text.isascii() and text.isprintable():
        return text  # the common case, at C speed
    return text.translate(_MANY_LINES if keep_newlines else _ONE_LINE)


def for_markup(text: str) -> str:
    """:func:`visible` and safe inside rich markup: ``[`` in the text is never taken as a tag."""
    from rich.markup import escape  # rich is loaded only where markup is printed

    return escape(visible(text))
