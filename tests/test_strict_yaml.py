"""promptops.core.strict_yaml.parse: the one YAML reader of hand-kept files (contracts, locks, rollout plans)."""

from __future__ import annotations

import pytest

from promptops.core import strict_yaml

# (text, line, message start): every problem carries the line it is on, so each caller's error is one line
# naming the file and the line.
REFUSED = [
    ("a: 1\na: 2\n", 2, "invalid YAML: duplicate key 'a' (first on line 1)"),
    ("a:\n  b: 1\n  c: 2\n  b: 3\n", 4, "invalid YAML: duplicate key 'b' (first on line 2)"),
    ("- {x: 1, x: 1}\n", 1, "invalid YAML: duplicate key 'x' (first on line 1)"),
    ("a: 1\nb: \x07\n", 2, "invalid YAML: unacceptable character #x0007"),
    ("a: [1,\n", 2, "invalid YAML: "),
    (f"a: 1\nb:\n  c: {'9' * 5000}\n", 3, "a value cannot be read: Exceeds the limit"),
    (f"- [1, {'9' * 5000}]\n", 1, "a value cannot be read: "),
]


@pytest.mark.parametrize(("text", "line", "message"), REFUSED)
def test_a_problem_names_its_line(text: str, line: int, message: str) -> None:
    with pytest.raises(strict_yaml.YamlProblem) as info:
        strict_yaml.parse(text)
    assert (info.value.line, info.value.message[: len(message)]) == (line, message)
    assert str(info.value).startswith(f"line {line}: ") and "\n" not in str(info.value)
    assert len(info.value.message) <= 160  # a 5,000-digit value is not echoed back


def test_dates_stay_the_text_written() -> None:
    # The readers check dates themselves, so an impossible one is named by its key, not refused here.
    assert strict_yaml.parse("at: 2026-02-30\nwhen: 2026-11-02T09:00:00Z\n") == {
        "at": "2026-02-30",
        "when": "2026-11-02T09:00:00Z",
    }
