"""The fast path's accepted outcome built in C (_place.clean_outcome) against ParseOutcome.clean, its reference:
every slot the same object, for any arguments, on ParseOutcome and on a subclass."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops.parsing import ParseOutcome
from promptops.parsing.diagnostics import ERROR, Code, Diagnostic
from promptops.parsing.scan import native_outcome

pytestmark = pytest.mark.skipif(native_outcome is None, reason="the C helpers are not built")

_SLOTS = list(ParseOutcome.__slots__)


class _Outcome(ParseOutcome):
    __slots__ = ("extra",)


def _slots(outcome: ParseOutcome) -> dict[str, Any]:
    return {name: getattr(outcome, name) for name in _SLOTS}


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.just(Diagnostic(Code.DUPLICATE_FINDING_ID, ERROR, None, "m")), max_size=2),
    st.one_of(st.none(), st.integers(), st.text(max_size=3), st.builds(dict)),
    st.tuples(st.text(max_size=4), st.text(max_size=4)),
    st.integers(0, 2**70),
    st.sampled_from([ParseOutcome, _Outcome]),
)
def test_clean_outcome_sets_every_slot_like_the_reference(
    diagnostics: list[Diagnostic], typed: Any, versions: tuple[str, str], findings: int, cls: type[ParseOutcome]
) -> None:
    assert native_outcome is not None
    built = native_outcome(cls, diagnostics, typed, versions, findings)
    expected = cls.clean(diagnostics, typed, versions, findings)
    assert type(built) is cls
    got, want = _slots(built), _slots(expected)
    assert got.keys() == want.keys()
    for name in _SLOTS:
        assert got[name] is want[name] or (type(got[name]) is int and got[name] == want[name]), name
    assert built.result == expected.result and built.outcome == expected.outcome


def test_clean_outcome_refuses_what_it_cannot_build() -> None:
    assert native_outcome is not None
    with pytest.raises(TypeError):
        native_outcome(ParseOutcome, [], None, ("1.0",), 1)
    with pytest.raises(TypeError):
        native_outcome(ParseOutcome, [], None, ["1.0", "1.0.0"], 1)
    with pytest.raises(AttributeError):
        native_outcome(int, [], None, ("1.0", "1.0.0"), 1)
    assert type(native_outcome(ParseOutcome, [], None, ("1.0", "1.0.0"), 1)) is ParseOutcome
