"""What an asking CLI asks, in one line (agentlaunch/providers/asked.py): the tool and the telling part of its input."""

from __future__ import annotations

from agentlaunch.providers.asked import QUESTION_CHARS, one_line, tool_question


def test_the_most_telling_field_of_a_tools_input_is_said_after_the_tool() -> None:
    assert tool_question("Bash", {"command": "rm -rf build", "description": "clean"}) == "Bash: rm -rf build"
    assert tool_question("Write", {"file_path": "/w/notes.md", "content": "x" * 10_000}) == "Write: /w/notes.md"
    assert tool_question("WebFetch", {"url": "https://example.com", "prompt": "read"}) == "WebFetch: https://example.com"
    assert tool_question("AskUserQuestion", {"questions": [{"question": "Which branch?", "options": []}]}) == (
        "AskUserQuestion: Which branch?"
    )
    assert tool_question("shell", ["git", "push"]) == "shell: git push"  # an argv
    assert tool_question("mcp__db__query", {"table": "users", "limit": 3}) == 'mcp__db__query: {"table":"users","limit":3}'
    assert tool_question("Task", {}) == "Task" and tool_question("Task", None) == "Task"


def test_hostile_input_is_kept_as_data_on_one_line_and_cut() -> None:
    said = tool_question("Bash", {"command": "printf '\x1b[2J'\n[b]x[/b]\t" + "y" * 1000})
    assert said.startswith("Bash: printf '\x1b[2J' [b]x[/b] yyy")  # new lines and tabs one space; escapes kept as data
    assert len(said) == QUESTION_CHARS and said.endswith("…")
    deep: object = {}
    for _ in range(5000):  # deeper than json.dumps goes: no crash, the tool alone
        deep = {"a": deep}
    assert tool_question("Odd", deep) == "Odd"
    assert tool_question("Odd", {"command": 3, "x": float("nan")}) == "Odd: " + '{"command":3,"x":NaN}'
    assert one_line("  a \n b  ") == "a b"
