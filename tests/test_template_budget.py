"""The sandbox's size budget, through the real CLI in a subprocess whose address space is capped (RLIMIT_AS): a
template that builds a huge integer, string or list, by any operator, method, filter, format or global, stops
with one line naming the template's file and line and the limit, in `render`, `lint` and `release cut` alike;
never MemoryError, a stall or "internal error"."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.helpers import REPO_ROOT

MEMORY = 1 << 30  # the child's address space: each payload would take more, or minutes, without the budget
HEAD = "templates/review-result.j2"

# (template text appended to the head, what the one-line error must say)
PAYLOADS: list[tuple[str, str]] = [
    # the cases
    (
        "{% set ns = namespace(x=2**999) %}{% for i in range(25) %}{% set ns.x = ns.x * ns.x %}{% endfor %}"
        "{{ ns.x > 0 }}",
        "'*' would build a 7,993-bit integer (the sandbox's limit is 4,096)",
    ),
    ('{{ "a"|center(1000000000) }}', "the center filter would build 1,000,000,000 characters"),
    ("{{ lipsum(1000000) }}", "lipsum() would build"),
    ('{{ "%01000000000d" % 1 }}', "'%' would build 1,000,000,017 characters"),
    ("{{ range(10**9)|length }}", "range() would build 1,000,000,000 items (the sandbox's limit is 1,000,000)"),
    # integers
    ("{{ 3 ** 999 * 3 ** 999 * 3 ** 999 }}", "'*' would build a"),
    ("{{ 1000 ** 999 }}", "'**' would build a 9,990-bit integer"),
    # string methods
    ('{{ "a".center(10**9) }}', "str.center would build 1,000,000,000 characters"),
    ('{{ "a".ljust(10**9) ~ "a".rjust(10**9) }}', "str.ljust would build"),
    ('{{ "7".zfill(10**9) }}', "str.zfill would build"),
    ('{{ ("\t" * 1000).expandtabs(1000000) }}', "str.expandtabs would build"),
    ('{{ ("x" * 1000000).replace("", "y" * 100) }}', "str.replace would build"),
    ('{{ "ab".translate({97: "x" * 10000000}) }}', "str.translate would build"),
    ('{{ "-".join(["x" * 10000000] * 10) }}', "str.join would build"),
    ('{{ (1).to_bytes(1000000000, "big") }}', "int.to_bytes would build"),
    # formatting
    ('{{ "{:>1000000000}".format(1) }}', "str.format would build"),
    ('{{ "{:.1000000000f}".format(1.5) }}', "str.format would build"),
    ('{{ "{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}".format("x" * 10000000) }}', "str.format would build"),
    ('{{ "{x:>1000000000}".format_map({"x": 1}) }}', "str.format would build"),
    ('{{ "%*d" % (1000000000, 1) }}', "'%' would build"),
    ('{{ "%s%s" % ("x" * 10000000, "y" * 10000000) }}', "'%' would build"),
    ('{{ "%1000000000s"|format(1) }}', "the format filter would build"),
    # filters
    ('{{ ("a\\n" * 1000000)|indent(100) }}', "the indent filter would build"),
    ('{{ ("a b " * 1000000)|wordwrap(1, wrapstring="x" * 100) }}', "the wordwrap filter would build"),
    ('{{ ("x" * 1000000)|replace("", "y" * 100) }}', "the replace filter would build"),
    ('{{ (["x" * 10000000] * 10)|join }}', "the join filter would build"),
    ("{{ [1]|batch(1000000000, 0)|list }}", "the batch filter would build 1,000,000,000 items"),
    ("{{ [1]|slice(1000000000)|list }}", "the slice filter would build 1,000,000,000 items"),
    ('{{ range(100)|map("center", 100000000)|list }}', "the center filter would build 100,000,000 characters"),
    ("{{ [1, 2, 3]|tojson(1000000000) }}", "the tojson filter would build"),
    ('{{ (["x" * 10000000] * 10)|string }}', "the string filter would build"),
    ('{{ (["x" * 10000000] * 10)|upper }}', "the upper filter would build"),
    ('{{ (["x" * 10000000] * 10)|json }}', "the json filter would build"),
    # growth by repetition: each step is small, the result doubles
    (
        '{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}',
        "'~' would build 16,777,216 characters",
    ),
    (
        '{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}',
        "'+' would build 16,777,216 characters",
    ),
    (
        "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
        "'+' would build 1,048,576 items",
    ),
    ('{% set l = [1] %}{% for i in range(40) %}{{ l.extend(l) or "" }}{% endfor %}', "list.extend would build"),
    # printing a value whose text is huge although the value is small, or nested past what repr can print
    ('{{ ["x" * 10000000] * 10 }}', "printing a value would build"),
    ('{% set d = {}.fromkeys(range(1000000), "x" * 10000000) %}{{ d }}', "printing a value would build"),
    (
        "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}",
        "a value nested more than 256 deep (the sandbox's limit)",
    ),
    # any other call: what it returns is checked before a next step can multiply it
    ('{{ ("x" * 10000000).encode("utf-32").hex() }}', "encode() would build 40,000,004 characters"),
    # many values each within bounds, kept: the running total stops them
    (
        '{% set m = [] %}{% for i in range(1000) %}{{ m.append("x"|center(10000000)) or "" }}{% endfor %}',
        "the template built more than 134,217,728 bytes of values in all",
    ),
    (
        '{% set big = "x" * 10000000 %}{% macro m() %}{% for i in range(1000) %}{{ big }}{% endfor %}{% endmacro %}'
        "{% set r = m() %}",
        "the template built more than",
    ),
]

DRIVER = """
import io, json, sys
import promptops.cli
out = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    sys.stderr, saved = err, sys.stderr
    try:
        code = promptops.cli.run(args)
    finally:
        sys.stderr = saved
    out.append([code, err.getvalue()])
print(json.dumps(out))
"""


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _run(commands: list[list[str]]) -> list[tuple[int, str]]:
    """Each command through the real CLI, in one child process capped at MEMORY bytes of address space."""
    env = {**os.environ, "PROMPTOPS_NO_TEMPLATE_CACHE": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_cap_memory,
        timeout=300,  # a guard against a hang (old code ran some payloads for minutes), measures nothing
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [(code, err) for code, err in json.loads(done.stdout.splitlines()[-1])]


def _head(project: Path, body: str) -> int:
    """Append ``body`` to the head template on a line of its own; returns that line's number."""
    head = project / HEAD
    text = head.read_text(encoding="utf-8")
    head.write_text(text + body + "\n", encoding="utf-8")
    return text.count("\n") + 1


@pytest.mark.parametrize(("body", "problem"), PAYLOADS, ids=[f"payload{i}" for i in range(len(PAYLOADS))])
def test_a_template_cannot_build_past_the_budget(project: Path, body: str, problem: str) -> None:
    line = _head(project, body)
    results = _run([["--root", str(project), *c] for c in (["render", "--contract", "review-result"], ["lint"])])
    for code, err in results:
        assert code == 3, err
        assert err.startswith(f"promptops: error: {HEAD}:{line}: "), err
        assert problem in err and err.count("\n") == 1, err


def test_release_cut_renders_within_the_budget(project: Path) -> None:
    line = _head(project, '{{ "a"|center(1000000000) }}')
    ((code, err),) = _run([["--root", str(project), "release", "cut", "--contract", "review-result"]])
    assert code == 3, err
    assert f"{HEAD}:{line}: the center filter would build 1,000,000,000 characters" in err
    assert err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("{{ 10.0 ** 400 }}", "OverflowError: (34, 'Numerical result out of range')"),
        ("{{ 1 / 0 }}", "ZeroDivisionError: division by zero"),
    ],
)
def test_a_template_raising_at_render_time_is_one_line_with_its_place(project: Path, body: str, problem: str) -> None:
    line = _head(project, body)
    ((code, err),) = _run([["--root", str(project), "render", "--contract", "review-result"]])
    assert (code, err) == (3, f"promptops: error: {HEAD}:{line}: {problem}\n")


def test_ordinary_templates_render_the_same_within_the_budget(project: Path, cli: Cli) -> None:
    """What real prompts do with these operators, methods and filters renders as before."""
    body = (
        '{% set ns = namespace(s="") %}{% for f in ["a.py", "b.py"] %}{% set ns.s = ns.s ~ f ~ "," %}{% endfor %}'
        '{{ ns.s }}|{{ "x"|center(5) }}|{{ "%03d" % 7 }}|{{ "{:>4}".format("ab") }}|{{ 2 ** 10 }}|{{ 7 - 9 }}|'
        '{{ "a b c"|wordwrap(3) }}|{{ "t"|indent(2, true) }}|{{ [1, 2] + [3] }}|{{ range(3)|join(",") }}|'
        '{{ "%s-%s"|format("a", "b") }}|{{ {"k": 1}|tojson }}|{{ "{x}".format_map({"x": 1}) }}|{{ "ab" * 2 }}|'
        '{{ "a-b".replace("-", "+") }}|{{ lipsum(1, false, 3, 4)|wordcount }}|{{ [[1], [2]]|sum(start=[]) }}'
    )
    _head(project, body)
    code, out, err = cli(project, "render", "--contract", "review-result")
    assert code == 0, err
    assert out.endswith(
        'a.py,b.py,|  x  |007|  ab|1024|-2|a b\nc|  t|[1, 2, 3]|0,1,2|a-b|{"k": 1}|1|abab|a+b|3|[1, 2]\n'
    )


def test_cached_compiled_templates_are_budgeted(project: Path, tmp_path: Path) -> None:
    """With the template cache on (the CLI's default), a warm run is checked like a cold one, and an entry
    written by code compiled without the budget (an earlier promptops, under the file name it used) is never
    loaded: Jinja keys an entry by the template alone, promptops by the compiling code too."""
    from jinja2 import FileSystemBytecodeCache
    from jinja2.sandbox import SandboxedEnvironment

    from promptops import defaults
    from promptops.render.renderer import new_environment

    # ~ is checked by what the template compiles to (the calls Jinja emits), so unbudgeted code would run it
    doubling = '{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}'
    line = _head(project, doubling)
    cache = tmp_path / "tmp" / f"_jinja2-cache-{os.getuid()}"
    cache.mkdir(parents=True, mode=0o700)
    search = [(project / "templates").resolve(), defaults.templates_dir()]  # as lint loads a head
    unbudgeted = SandboxedEnvironment(
        loader=new_environment(search).loader,
        bytecode_cache=FileSystemBytecodeCache(str(cache), pattern="__promptops_budgeted_%s.cache"),
    )
    unbudgeted.get_template("review-result.j2")
    (old,) = cache.iterdir()  # the head, compiled as promptops 8314abe would have (its partials load at render)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": str(REPO_ROOT)}
    env.pop("PROMPTOPS_NO_TEMPLATE_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps([["--root", str(project), "lint"]] * 2)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=_cap_memory,
        timeout=300,  # a guard against a hang, measures nothing
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for code, err in json.loads(done.stdout.splitlines()[-1]):
        assert code == 3 and err.startswith(f"promptops: error: {HEAD}:{line}: '~' would build 16,777,216"), err
    assert old in set(cache.iterdir()) and len(list(cache.iterdir())) > 1  # its own entries, beside the old one
