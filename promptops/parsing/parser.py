"""The parser: model text in, ParseOutcome out, for one contract under one policy.

Build one Parser per (contract, policy) and reuse it: it compiles its decoders once. ``parse`` never raises
for anything a model can produce; every input ends as an accepted or rejected outcome with diagnostics.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from promptops.contract import Contract
from promptops.errors import PolicyError
from promptops.parsing.diagnostics import ERROR, Code, Diagnostic, ParseOutcome
from promptops.parsing.fastpath import Declined, FastPath, declared_version, version_peek
from promptops.parsing.itemwise import read_itemwise
from promptops.parsing.jsontext import (
    Rejection,
    brackets_at_most,
    decode_text,
    native_brackets,
    read_document,
    read_span,
    with_duplicates,
)
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.scan import native as _native_clean
from promptops.parsing.scan import native_accept as _accept
from promptops.parsing.scan import native_count
from promptops.parsing.typed import TypedShape
from promptops.parsing.validate import Validator
from promptops.parsing.versions import VersionGate
from promptops.parsing.walks import SHALLOW
from promptops.policy import ParserPolicy


class _Peek(enum.Enum):
    SEARCH = "search"  # Parser._declined: the declared schema version is yet to be searched for


_SEARCH: Final = _Peek.SEARCH


class Parser:
    """Parses responses for one contract under one policy.

    ``fast_path=False`` sends every response down the diagnostic path, and ``speedups=False`` keeps the fast
    path off the optional C scanner; outcomes are identical either way (the test suite checks it), only speed
    differs.
    """

    def __init__(
        self,
        contract: Contract,
        policy: ParserPolicy | None = None,
        *,
        fast_path: bool = True,
        speedups: bool = True,
    ) -> None:
        self.contract = contract
        self.policy = policy or contract.default_policy
        gate = VersionGate(contract, self.policy)
        self._limits = self.policy.limits
        self._max_bytes, self._max_depth = self._limits.max_bytes, self._limits.max_depth  # read by every parse
        self._speedups = speedups
        floor = self.policy.schema_floor
        readable = [v for v in contract.schema_versions if v.major == floor.major and v >= floor]
        typed = {v: t for v in readable if (t := TypedShape.build(contract, contract.shape(v))) is not None}
        self._validator = Validator(contract, self.policy, gate, typed, speedups=speedups)
        self._fast: dict[str, FastPath | None] = {
            str(v): FastPath(typed[v], gate, speedups=speedups, validate=self._validator.validate)
            if fast_path and v in typed
            else None
            for v in readable
        }
        self._only_fast = self._fast[str(readable[0])] if len(readable) == 1 else None
        self._scan = native_count if speedups else None
        self._clean = _native_clean if speedups else None  # what each FastPath.verdict runs
        # With several readable versions, the fast path that accepted the last response is tried before the
        # text is searched for the declared version (see parse).
        self._peek: tuple[re.Pattern[str], re.Pattern[bytes]] | None = None
        if len(readable) > 1 and contract.versions.schema is not None:
            self._peek = version_peek(contract.versions.schema)
        self._needs_request_versions = contract.versions.schema is None or contract.versions.prompt is None
        guess = next((f for f in self._fast.values() if f is not None), None) if len(readable) > 1 else None
        self._winner = self._guessing(guess)
        self._refusals: dict[tuple[Any, Any], _Refusal] = {}  # see _refusal

    def parse(
        self,
        raw: str | bytes,
        changed_files: ChangedFiles | Iterable[str],
        *,
        schema_version: str | None = None,
        prompt_version: str | None = None,
    ) -> ParseOutcome:
        """Parse one response.

        ``changed_files`` are the repository paths of the review target (a ChangedFiles built once is
        cheaper when many responses share them). ``schema_version``/``prompt_version`` state what the request
        asked for, and are required for contracts whose output carries no version fields.
        """
        changed = changed_files if isinstance(changed_files, ChangedFiles) else ChangedFiles(changed_files)
        guess, accept, bound = self._winner
        if accept is not None:
            # The common case (the guess has the accepted route in C, so the output declares its versions):
            # nothing else is looked at first. Traffic declares one version for long runs, so the last winner
            # usually accepts at once; a fast path accepts only declarations it reads exactly, so a wrong guess
            # costs time, never the outcome.
            if not (type(raw) is bytes and len(raw) <= self._max_bytes):
                too_large = self._size_problem(raw)
                if too_large is not None:
                    return too_large
            accepted = accept(bound, raw, changed)
            if type(accepted) is ParseOutcome:
                return accepted
            assert guess is not None
            return self._handed_back(raw, changed, guess, accepted)
        request_versions: tuple[str, str] | None = None
        if self._needs_request_versions:
            if schema_version is None or prompt_version is None:
                name = self.contract.name
                raise PolicyError(
                    f"contract {name}: responses carry no versions; pass schema_version and prompt_version"
                )
            request_versions = (schema_version, prompt_version)
        if not (type(raw) is bytes and len(raw) <= self._max_bytes):
            too_large = self._size_problem(raw)
            if too_large is not None:
                return too_large
        scanned: int | None = None
        if guess is not None and request_versions is None:  # the last winner first, as above
            if self._scan is not None:
                scanned = self._scan(raw)  # FastPath.scan, one call less
            outcome = guess.parse(raw, changed, self._max_depth, None, scanned)
            return self._guess_declined(raw, changed, guess, scanned, outcome, _SEARCH)
        return self._declined(raw, changed, request_versions, None, scanned, None)

    def _handed_back(self, raw: str | bytes, changed: ChangedFiles, guess: FastPath, accepted: Any) -> ParseOutcome:
        """``parse`` when ``_place.accept`` did not accept: it hands back what it found on the way (see
        FastPath.accept_reference), and the guessed fast path goes on from there."""
        declared: str | _Peek | None
        if type(accepted) is int:
            scanned, decoded, declared, placed = accepted, None, _SEARCH, None  # all it could hand back
        else:
            scanned, decoded, declared, placed = accepted
            if scanned < 0 or type(decoded) is _INVALID:
                # guess.parse's answer to both is None at once (an invalid value is no decline to act on)
                return self._declined(raw, changed, None, guess, scanned, None, declared)
        outcome = guess.parse(raw, changed, self._max_depth, None, scanned, decoded, placed)
        return self._guess_declined(raw, changed, guess, scanned, outcome, declared)

    def _guess_declined(
        self,
        raw: str | bytes,
        changed: ChangedFiles,
        guess: FastPath,
        scanned: int | None,
        outcome: ParseOutcome | Declined | None,
        declared: str | _Peek | None,
    ) -> ParseOutcome:
        """``parse`` once the guessed fast path has answered ``outcome``."""
        if isinstance(outcome, ParseOutcome):
            return outcome
        if outcome is not None and outcome.refused is not None:
            return self._refusal(raw, changed, guess, scanned, outcome.refused, declared)
        return self._declined(raw, changed, None, guess, scanned, outcome, declared)

    @property
    def _guess(self) -> FastPath | None:
        """The fast path tried first (the one that accepted last), for contracts with several readable versions."""
        return self._winner[0]

    def _guessing(self, fast: FastPath | None) -> tuple[FastPath | None, Callable[..., Any] | None, Any]:
        """``fast`` as the guess, with ``_place.accept`` and what it takes for ``fast`` when the accepted route in
        C applies (else None, None); one tuple, so that threads sharing the parser never read a guess with another
        path's bound."""
        bound = fast.accept_bound if fast is not None and not self._needs_request_versions else None
        return (fast, _accept, bound) if bound is not None and _accept is not None else (fast, None, None)

    def _declined(
        self,
        raw: str | bytes,
        changed: ChangedFiles,
        request_versions: tuple[str, str] | None,
        guess: FastPath | None,
        scanned: int | None,
        declined: Declined | None,
        declared: str | _Peek | None = _SEARCH,
    ) -> ParseOutcome:
        """``parse`` once the guessed fast path (if any) has declined, ``declined`` saying why; ``declared``: the
        schema version the text declares as version_peek reads it, when accept has read it."""
        fast = self._only_fast
        if fast is None:
            if declared is _SEARCH or request_versions is not None:
                fast = self._fast_path_for(raw, request_versions)
            elif declared is not None:
                fast = self._fast.get(declared)
        if fast is not None:
            if guess is None:
                scanned = fast.scan(raw)
            if fast is not guess:
                outcome = fast.parse(raw, changed, self._max_depth, request_versions, scanned)
                if isinstance(outcome, ParseOutcome):
                    if guess is not None:
                        self._winner = self._guessing(fast)
                    return outcome
                declined = outcome
            # A text that is not one JSON value is no envelope either: only the generic reader can take it.
            if declined is None or not declined.not_one_value:
                clean = self._clean  # fast.verdict, inlined
                verdict = None if scanned is None or clean is None else scanned >= 0 and clean(raw)
                typed_document = read_itemwise(fast, raw, self._max_depth, request_versions, verdict)
                if typed_document is not None:
                    return self._validator.validate(typed_document, changed, request_versions)
        text = decode_text(raw)
        if isinstance(text, Rejection):
            return _rejected(text)
        typed_items = (
            functools.partial(self._typed_items, request_versions=request_versions) if self._speedups else None
        )
        items_field, max_depth = self.contract.items, self._limits.max_depth
        not_one_value = declined is not None and declined.not_one_value
        document = read_document(
            text, items_field, max_depth, speedups=self._speedups, typed_items=typed_items, not_one_value=not_one_value
        )
        if isinstance(document, Rejection):
            return _rejected(document)
        if document.span is not None:  # an object taken out of a wrapper: it may well be clean JSON
            span_outcome = self._typed_span(document.span, changed, request_versions)
            if span_outcome is not None:
                return span_outcome
            document = read_span(document, self._limits.max_depth)
            if isinstance(document, Rejection):
                return _rejected(document)
            document = with_duplicates(document, self.contract.items)
        return self._validator.validate(document, changed, request_versions)

    def _refusal(
        self,
        raw: str | bytes,
        changed: ChangedFiles,
        guess: FastPath,
        scanned: int | None,
        versions: tuple[Any, Any],
        declared: str | _Peek | None,
    ) -> ParseOutcome:
        """A response the guessed fast path read whole and clean, but declined for its declared versions alone.

        When the diagnostic path rejects such a response for an incompatible version, that rejection depends on
        the two declarations only (the validator judges versions before anything else, and a clean scan means
        no repeated key to report first), provided the text cannot nest too deeply: it is remembered, and the
        next response declaring the same pair is answered without reading it again.
        """
        known = self._refusals.get(versions)
        if known is not None and self._surely_shallow(raw):
            return ParseOutcome(accepted=False, reason=known.code, diagnostics=[Diagnostic(*known.fields)])
        outcome = self._declined(raw, changed, None, guess, scanned, None, declared)
        diagnostics = outcome.diagnostics
        if (
            outcome.reason is Code.INCOMPATIBLE_VERSION
            and len(diagnostics) == 1
            and not outcome.extracted
            and not outcome.truncated
            and self._surely_shallow(raw)
        ):
            if len(self._refusals) >= _REFUSALS_LIMIT:
                self._refusals.clear()
            self._refusals[versions] = _Refusal.of(diagnostics[0])
        return outcome

    def _surely_shallow(self, raw: str | bytes) -> bool:
        """No more opening brackets than the depth limit allows (nor than any decoder's recursion)."""
        at_most = native_brackets if self._speedups and native_brackets is not None else brackets_at_most
        return at_most(raw, min(self._limits.max_depth, SHALLOW))

    def _typed_span(
        self, span: str, changed: ChangedFiles, request_versions: tuple[str, str] | None
    ) -> ParseOutcome | None:
        # As in parse: the last winner first, and the search for the declared version only if it declines.
        guess = self._guess if request_versions is None else None
        scanned: int | None = None
        if guess is not None:
            scanned = guess.scan(span)
            outcome = guess.parse(span, changed, self._limits.max_depth, None, scanned)
            if isinstance(outcome, ParseOutcome):
                return outcome.mark_extracted()
        fast = self._fast_path_for(span, request_versions)
        if fast is None:
            return None
        if fast is not guess:
            scanned = fast.scan(span)
            outcome = fast.parse(span, changed, self._limits.max_depth, request_versions, scanned)
            if isinstance(outcome, ParseOutcome):
                return outcome.mark_extracted()
        typed_document = read_itemwise(
            fast, span, self._limits.max_depth, request_versions, fast.verdict(span, scanned)
        )
        if typed_document is None:
            return None
        typed_document.extracted = True
        return self._validator.validate(typed_document, changed, request_versions)

    def _typed_items(
        self, members: dict[str, Any], request_versions: tuple[str, str] | None
    ) -> Callable[[str], Any] | None:
        """For the complete findings of a cut response: the typed decoder of the schema the validator will read
        them with, when the salvaged top level declares versions a fast path reads exactly (what the itemwise
        reader requires of the findings it hands over as Structs)."""
        fields = self.contract.versions
        # Where the validator takes each declaration from: the output's field, else the request.
        schema, prompt = (
            members.get(field) if field is not None else request_versions[index] if request_versions else None
            for index, field in enumerate((fields.schema, fields.prompt))
        )
        if type(schema) is not str or type(prompt) is not str:
            return None  # absent or not text: the validator rejects the response before its findings
        fast = self._fast.get(schema)
        if fast is None or not fast.versions_ok((schema, prompt)):
            return None
        return fast.typed.decode_item

    def _fast_path_for(self, raw: str | bytes, request_versions: tuple[str, str] | None) -> FastPath | None:
        if request_versions is not None:
            return self._fast.get(request_versions[0])
        if self._only_fast is not None or self._peek is None:
            return self._only_fast
        declared = declared_version(self._peek, raw)
        return None if declared is None else self._fast.get(declared)

    def _size_problem(self, raw: str | bytes) -> ParseOutcome | None:
        limit = self._limits.max_bytes
        if isinstance(raw, str):
            if len(raw) * 4 <= limit:
                return None  # cannot exceed the limit even if every character took four bytes
            size = len(raw.encode("utf-8", "surrogatepass"))
        else:
            size = len(raw)
        if size <= limit:
            return None
        return _rejected(Rejection(Code.TOO_LARGE, f"response is {size} bytes, over the {limit}-byte limit"))


_REFUSALS_LIMIT = 4096  # declared pairs come from model output: keep the memo bounded
_INVALID = msgspec.ValidationError  # a typed decoding's complaint about a value (FastPath.parse: a plain decline)


@dataclass(frozen=True)
class _Refusal:
    """The one diagnostic of a version rejection, as the validator wrote it."""

    code: Code
    fields: tuple[Any, ...]

    @classmethod
    def of(cls, diagnostic: Diagnostic) -> _Refusal:
        d = diagnostic
        return cls(d.code, (d.code, d.level, d.path, d.message, d.finding_index, d.finding_id))


def _rejected(rejection: Rejection) -> ParseOutcome:
    diagnostic = Diagnostic(rejection.code, ERROR, None, rejection.message)
    return ParseOutcome(accepted=False, reason=rejection.code, diagnostics=[diagnostic])
