"""Templates that would exhaust memory or time end as a definition error naming the file and line.

The hostile cases run in a child process whose address space is capped
(RLIMIT_AS) and whose CPU time is capped (RLIMIT_CPU): a case that escaped
the sandbox's limits would end the child with MemoryError or SIGXCPU, and
the test would fail, without any timing assertion.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from agentlaunch.definitions.render import make_env, render_instructions, render_string
from agentlaunch.definitions.spec import load_agent
from agentlaunch.errors import DefinitionError
from testbed.agent_files import write_agent

# Each case: a template (on line 2 of the file) that asks for far more than a render may spend.
from tests.support.cli_runs import run_cli_inprocess

HOSTILE = {
    "range(10**9)": "{% for i in range(10**9) %}x{% endfor %}",
    "nested range(100000) loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "'x' * 10**9": "{{ 'x' * 10**9 }}",
    "[1] * 10**9": "{{ [1] * 10**9 }}",
    '"%*d"|format(10**9, 1)': '{{ "%*d"|format(10**9, 1) }}',
    "'%*d' % (10**9, 1)": "{{ '%*d' % (10**9, 1) }}",
    "'%1000000000d' % 1": "{{ '%1000000000d' % 1 }}",
    "str.format width": "{{ '{:>1000000000}'.format(1) }}",
    "str.format nested width": "{{ '{:>{w}}'.format(1, w=10**9) }}",
    "lipsum(10**6)": "{{ lipsum(10**6) }}",
    "lipsum(1, max=10**9)": "{{ lipsum(1, max=10**9) }}",
    "macro self-recursion": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "macro doubling": "{% macro f(n) %}{% if n %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(40) }}",
    "recursive loop": (
        "{% for x in range(100000) recursive %}{% if loop.depth < 3 %}{{ loop(range(100000)) }}{% endif %}{% endfor %}"
    ),
    "repr of repeated string": "{% set a = 'x' * 1000000 %}{{ [a] * 100000 }}",
    "join of repeated string": "{% set a = 'x' * 1000000 %}{{ ([a] * 100000)|select|join }}",
    "doubling with ~": "{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
    "2 ** (10 ** 8)": "{{ 2 ** (10 ** 8) }}",
    "squaring in a loop": "{% set ns = namespace(n=3) %}{% for i in range(40) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
    "center(10**9)": "{{ 'x'.center(10**9) }}",
    "center filter": "{{ 'x'|center(10**7) * 10 }}",
    "indent": "{% set a = '\\n' * 1000000 %}{{ a|indent(1000) }}",
    "replace": "{% set a = 'x' * 1000000 %}{{ a|replace('x', a) }}",
    "str.replace": "{% set a = 'x' * 1000000 %}{{ a.replace('', a) }}",
    "str.join": "{% set a = 'x' * 1000000 %}{{ a.join(a) }}",
    "to_bytes": "{{ (1).to_bytes(10**9, 'big') }}",
    "batch fill": "{{ [1]|batch(10**9, 0)|list }}",
    "slice count": "{{ [1]|slice(10**7)|list }}",
    "sum of lists": "{{ range(100000)|batch(1)|sum(start=[]) }}",
    "literal text in loops": "{% for i in range(100000) %}{% for j in range(9) %}" + "x" * 10000 + "{% endfor %}{% endfor %}",
    "growing list": "{% set l = [] %}{% for i in range(100000) %}{% set _ = l.append('x' * 1000000) %}{% endfor %}",
    "list doubling": "{% set l = [1] %}{% for i in range(40) %}{% set _ = l.extend(l) %}{% endfor %}",
    "tojson indent": "{{ [[1]] * 100000|tojson(indent=10**6) }}",
    "wordwrap wrapstring": "{% set a = 'x ' * 1000000 %}{{ a|wordwrap(1, wrapstring=a) }}",
    "division by zero": "{{ 1 // 0 }}",
    "float overflow": "{{ 10.0 ** 1000 }}",
    "int too long to print": "{{ 10 ** 5000 }}",
}

CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
resource.setrlimit(resource.RLIMIT_CPU, (120, 120))
from agentlaunch.definitions.render import make_env, render_string
from agentlaunch.errors import DefinitionError
results = {}
for name, template in json.loads(sys.stdin.read()).items():
    try:
        render_string(make_env(), "first line\n" + template + "\n", {}, "agents/evil/soul.md")
        results[name] = "rendered"
    except DefinitionError as exc:
        results[name] = exc.message
print(json.dumps(results))
"""


def test_hostile_templates_end_as_definition_errors_in_bounded_memory_and_time() -> None:
    child = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(HOSTILE), capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    results = json.loads(child.stdout)
    assert set(results) == set(HOSTILE)
    for name, message in results.items():
        assert message.startswith("agents/evil/soul.md: template: line 2: "), (name, message)
        assert "MemoryError" not in message and "ran out of memory" not in message, (name, message)


def test_limits_are_named_in_the_message() -> None:
    def message(template: str) -> str:
        with pytest.raises(DefinitionError) as info:
            render_string(make_env(), template, {}, "soul.md")
        return info.value.message

    assert "range() of 1,000,000,000 numbers is above the limit of 100,000" in message("{{ range(10**9) }}")
    assert "more than 1,000,000 loop steps and calls" in message(HOSTILE["nested range(100000) loops"])
    assert "would build a string of 1,000,000,000 characters" in message("{{ 'x' * 10**9 }}")
    assert "recursion too deep" in message(HOSTILE["macro self-recursion"])
    assert "soul.md: template: nested too deeply to be read" in message("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}")


def test_ordinary_templates_still_render() -> None:
    env = make_env()
    text = (
        "{% for i in range(3) %}{{ i }}{% endfor %}|{{ 'ab' * 3 }}|{{ '%05d' % 42 }}|{{ '{:>6}'.format('x') }}|"
        "{{ ['a', 'b']|join(', ') }}|{{ 'a-b'|replace('-', '+') }}|{{ 2 ** 10 }}|{{ 'x'|center(5) }}|"
        "{% macro m(n) %}<{{ n }}>{% endmacro %}{{ m(1) }}|{{ [1, 2]|sum }}|{{ lipsum(1, false, 5, 6)|wordcount > 0 }}"
    )
    assert render_string(env, text, {}, "t") == "012|ababab|00042|     x|a, b|a+b|1024|  x  |<1>|3|True"


def test_each_render_gets_a_fresh_budget() -> None:
    """Limits are per render: many ordinary renders with one environment never add up to a refusal."""
    env = make_env()
    loop = "{% for i in range(100000) %}{% endfor %}done"
    for _ in range(12):  # 1.2 million steps in all, each render well within its million
        assert render_string(env, loop, {}, "t") == "done"


def test_a_hostile_soul_fails_render_with_exit_3(agents_dir: Path, tmp_path: Path) -> None:
    write_agent(agents_dir, "bomb", {"provider": "fake"}, {"soul.md": "Hello\n{{ 'x' * 10**9 }}\n"})
    with pytest.raises(DefinitionError, match=r"bomb/soul.md: template: line 2: "):
        render_instructions(load_agent(agents_dir, "bomb"), tmp_path, date(2026, 1, 1))
    result = run_cli_inprocess("render", "bomb", "--stdout", "--agents-dir", str(agents_dir), cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert b"bomb/soul.md: template: line 2:" in result.stderr and b"Traceback" not in result.stderr


def test_a_template_file_that_is_a_fifo_is_refused_without_blocking(agents_dir: Path, tmp_path: Path) -> None:
    import os

    templates = tmp_path / "tpl"
    templates.mkdir()
    os.mkfifo(templates / "instructions.md.j2")
    with pytest.raises(DefinitionError, match=r"instructions.md.j2: template: is a FIFO \(named pipe\), not a regular file"):
        render_instructions(load_agent(agents_dir, "reviewer"), tmp_path, date(2026, 1, 1), templates_dir=templates)


def test_error_in_a_user_template_file_names_that_file_and_line(agents_dir: Path, tmp_path: Path) -> None:
    templates = tmp_path / "tpl"
    templates.mkdir()
    (templates / "instructions.md.j2").write_text("ok\nok\n{{ 1 // 0 }}\n")
    with pytest.raises(DefinitionError) as info:
        render_instructions(load_agent(agents_dir, "reviewer"), tmp_path, date(2026, 1, 1), templates_dir=templates)
    expected = "template: line 3: ZeroDivisionError: integer division or modulo by zero"
    assert info.value.message == f"{templates / 'instructions.md.j2'}: {expected}"
