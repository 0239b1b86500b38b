"""The typed fast path: accept a clean response in one C decoding pass.

Most responses need no diagnostics at all. For those, msgspec decodes and validates the whole document in C
(see typed.py), and a few vectorized checks cover what a Struct cannot express: surrounding whitespace and
repeated keys (the C scanner in scan.py), version acceptance, line ranges, reconciliation and duplicate ids.
Anything else (a coercion, a drop, a rejection, a wrapper) returns None and the diagnostic path decides, so
both paths give the same outcome for every input (the test suite checks this differentially).
"""

from __future__ import annotations

import inspect
import itertools
import operator
import re
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec

from promptops.errors import VersionError
from promptops.parsing.diagnostics import ParseOutcome
from promptops.parsing.jsontext import TRAILING, Document
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.scan import (
    native,
    native_accept,
    native_checked,
    native_count,
    native_decoded_members,
    native_outcome,
    native_placed,
    python_clean,
    strings_clean,
)
from promptops.parsing.typed import DECODE_ERRORS, PLACE_OUT, UNSET, TypedShape
from promptops.parsing.versions import VersionGate
from promptops.versioning import PromptVersion, SchemaVersion

_VERSION_CACHE_LIMIT = 4096
_TRUNCATED = "Input data was truncated"  # msgspec's complaint about a text that ends inside a value
Validate = Callable[[Document, ChangedFiles, "tuple[str, str] | None"], ParseOutcome]


class Declined(NamedTuple):
    """Why ``FastPath.parse`` declined, when the parser can act on it (a plain decline is None).

    Returned rather than kept on the FastPath, which parsers share across responses (and callers' threads).
    """

    # The declared versions, when they alone made it decline: the text was read whole and clean, a typed
    # decoding, versions from the text (not the request). The parser may know that refusal (Parser._refusal).
    refused: tuple[Any, Any] | None = None
    # The text is not one JSON value (msgspec: it ends inside one, or goes on after one): no typed reader can
    # take it, the envelope reader included.
    not_one_value: bool = False


NOT_ONE_VALUE = Declined(not_one_value=True)


def _clean_outcome(
    cls: type[ParseOutcome], diagnostics: list[Any], typed: Any, versions: tuple[str, str], findings: int
) -> ParseOutcome:
    """ParseOutcome.clean with the class first: the stand-in for scan.native_outcome (its reference)."""
    return cls.clean(diagnostics, typed, versions, findings)


def _slots_read(getter: Any, owner: Any) -> tuple[Any, ...] | None:
    """The member descriptors of ``owner`` that an ``operator.attrgetter`` reads (C reads the slots directly),
    else None: a getter of dotted names, of anything but slots, or not an attrgetter."""
    if type(getter) is not operator.attrgetter or not isinstance(owner, type):
        return None
    names = getter.__reduce__()[1]
    slots = tuple(inspect.getattr_static(owner, name, None) for name in names)
    return slots if all(type(slot) is types.MemberDescriptorType for slot in slots) else None


def version_peek(field: str) -> tuple[re.Pattern[str], re.Pattern[bytes]]:
    """The search for the schema version a text declares in ``field`` (its group, decoded as UTF-8 with
    replacement for bytes), for str and for bytes: before anything is decoded, it says which fast path to try."""
    pattern = re.compile(rf'"{re.escape(field)}"\s*:\s*"([^"\\]*)"')
    return pattern, re.compile(pattern.pattern.encode())


def declared_version(peek: tuple[re.Pattern[str], re.Pattern[bytes]], data: bytes | str) -> str | None:
    """The declared schema version ``version_peek``'s search reads (None: no match)."""
    if isinstance(data, bytes):
        found = peek[1].search(data)
        return None if found is None else found.group(1).decode("utf-8", "replace")
    match = peek[0].search(data)
    return None if match is None else match.group(1)


def _undecodable(exc: BaseException) -> Declined | None:
    """FastPath.parse's answer when the typed decoder raised ``exc`` (one of DECODE_ERRORS)."""
    if type(exc) is msgspec.DecodeError:
        message = str(exc)
        if message == _TRUNCATED or message.startswith(TRAILING):
            return NOT_ONE_VALUE
    return None


class FastPath:
    """Whole-document decoding for one schema version, with the version-acceptance cache."""

    def __init__(
        self, typed: TypedShape, gate: VersionGate, *, speedups: bool = True, validate: Validate | None = None
    ) -> None:
        self.typed = typed
        self._validate = validate
        self._gate = gate
        # What parse reads of ``typed`` for every response, bound once.
        self._decode = typed.decode_response
        self._versions_of = typed.versions
        self._items_of = typed.items
        self._plan = typed.plan
        self._plain_paths = typed.plain_paths
        self._open_probe = typed.open_probe
        self._native = native if speedups else None
        self._count = native_count if speedups else None
        self._decoded_members = native_decoded_members if speedups else None
        self._checked = native_checked if speedups else None
        self._placed = native_placed if speedups else None
        self._outcome = native_outcome if speedups and native_outcome is not None else _clean_outcome
        self._versions_ok: dict[tuple[Any, Any], bool] = {}
        # What _place.accept takes to run scan and parse's accepted route for versions read from the text in one
        # C call (see accept_reference); None without the C helpers or when the contract has no version fields.
        self.accept_bound: tuple[Any, ...] | None = None
        schema_field = typed.contract.versions.schema
        self._peek = version_peek(schema_field) if schema_field is not None else None
        natives = (native_accept, native_count, native_checked, native_outcome)
        if speedups and None not in natives and self._versions_of is not None and schema_field is not None:
            self.accept_bound = self._accept_bound(schema_field)

    def _accept_bound(self, schema_field: str) -> tuple[Any, ...]:
        """The pieces _place.accept works with (see _fused.c), getters of slots as the slots' descriptors."""
        response = getattr(getattr(self._decode, "__self__", None), "type", None)  # the decoder's Struct type
        versions = _slots_read(self._versions_of, response) or self._versions_of
        items = (_slots_read(self._items_of, response) or (self._items_of,))[0]
        probe = (_slots_read(self._open_probe, response) or (self._open_probe,))[0]
        listed = inspect.getattr_static(ChangedFiles, "listed_plain" if self._plain_paths else "listed")
        quoted = f'"{schema_field}"'  # where version_peek's search can match: its pattern starts with it, literally
        return (native_count, self._decode, versions, self._versions_ok, items, ChangedFiles, listed, self._plan,
                probe, self.typed.duplicate_ids, ParseOutcome, (quoted.encode(), quoted))  # fmt: skip

    def scan(self, data: bytes | str) -> int | None:
        """The C scanner's count of the raw text: its colons outside strings, -1 when a string has whitespace at
        an edge; None without the C helpers (``parse`` then checks the decoded strings in Python).

        Run once per response before any decoding; ``verdict`` turns it into the itemwise reader's gate.
        """
        return self._count(data) if self._count is not None else None

    def verdict(self, data: bytes | str, scanned: int | None) -> bool | None:
        """The C scanner's verdict on the raw text (no edge whitespace, no repeated key), None without it: for
        the readers that run once this path has declined (a failed count already says False)."""
        if scanned is None or self._native is None:
            return None
        return scanned >= 0 and self._native(data)

    def parse(
        self,
        data: bytes | str,
        changed: ChangedFiles,
        max_depth: int,
        request_versions: tuple[str, str] | None,
        scanned: int | None,
        decoded: Any = None,
        placed: int | None = None,
    ) -> ParseOutcome | Declined | None:
        """``decoded``: what ``self._decode(data)`` returned or raised, when ``accept`` already decoded the text
        (never None); ``placed``: what ``accept`` found ``checked`` answers for that decoded response, if it did."""
        # The hot path of the whole product: every check is a C call or a short loop, in order of cost.
        if scanned is not None and scanned < 0:
            return None
        if decoded is None:
            try:
                obj = self._decode(data)
            except DECODE_ERRORS as exc:
                return _undecodable(exc)
        elif isinstance(decoded, BaseException):
            if isinstance(decoded, DECODE_ERRORS):
                return _undecodable(decoded)
            raise decoded
        else:
            obj = decoded
        if request_versions is None:
            assert self._versions_of is not None  # contracts without version fields always pass request versions
            versions = self._versions_of(obj)
        else:
            versions = request_versions
        known = self._versions_ok.get(versions)
        if known is not True:
            if known is None:
                known = self._learn_versions(versions)
            if not known:
                if scanned is not None and request_versions is None and self._whole(obj, scanned):
                    return Declined(refused=versions)
                return None
        items = self._items_of(obj)
        if placed is not None:  # checked's answer, from accept
            if placed < 0:
                return None
        elif scanned is not None and self._checked is not None:
            # Each member of the text has one colon outside strings: as many members decoded, none was lost
            # to a repeated key (with the scan's clean edges, the C scanner's full verdict); then placed.
            listed = changed.listed_plain if self._plain_paths else changed.listed  # typed.listed, inlined
            placed = self._checked(self._plan, obj, items, listed, scanned)
            if placed < 0:
                return None
        elif scanned is not None or not self._python_gate(data, obj, items):
            return None
        elif self._placed is not None:
            listed = changed.listed_plain if self._plain_paths else changed.listed
            placed = self._placed(items, *self.typed.place_fields, listed, UNSET)
        else:
            placed = self.typed.placed(items, changed)
        if placed == PLACE_OUT:
            clean = scanned is not None
            return self._placed_elsewhere(obj, items, changed, max_depth, request_versions, versions, clean)
        open_probe = self._open_probe
        if open_probe is not None and open_probe(obj) and not self.typed.shallow(obj, items, max_depth):
            return None
        # placed is PLACE_OK (0) or PLACE_IDS_REPEAT
        diagnostics = self.typed.duplicate_ids(items) if placed else []
        return self._outcome(ParseOutcome, diagnostics, obj, versions, len(items))

    def accept_reference(
        self, data: bytes | str, changed: ChangedFiles
    ) -> ParseOutcome | tuple[int, Any, str | None, int | None]:
        """What ``accept`` answers, in Python (its reference, with versions read from the text): the outcome when
        ``parse`` accepts on its own route without looking into open objects; else the scanner's count, what
        decoding returned or raised (None: not decoded, the count declined), the schema version the text declares
        (``version_peek``'s reading) and checked's answer when it was asked; the caller runs ``parse`` with them
        (which then decides exactly as without ``accept``)."""
        scanned = self.scan(data)
        assert scanned is not None and self._checked is not None and self._versions_of is not None
        assert self._peek is not None
        if scanned < 0:
            return scanned, None, declared_version(self._peek, data), None
        try:
            obj = self._decode(data)
        except DECODE_ERRORS as exc:
            return scanned, exc, declared_version(self._peek, data), None
        versions = self._versions_of(obj)
        if self._versions_ok.get(versions) is not True:
            return scanned, obj, declared_version(self._peek, data), None
        items = self._items_of(obj)
        listed = changed.listed_plain if self._plain_paths else changed.listed
        placed = self._checked(self._plan, obj, items, listed, scanned)
        if placed < 0 or placed == PLACE_OUT or (self._open_probe is not None and self._open_probe(obj)):
            return scanned, obj, declared_version(self._peek, data), placed
        diagnostics = self.typed.duplicate_ids(items) if placed else []
        return ParseOutcome.clean(diagnostics, obj, versions, len(items))

    def _placed_elsewhere(
        self,
        obj: Any,
        items: list[Any],
        changed: ChangedFiles,
        max_depth: int,
        request_versions: tuple[str, str] | None,
        versions: tuple[str, str],
        clean: bool,
    ) -> ParseOutcome | None:
        """Valid as written, but some finding is not in place: the validator says which and why.

        ``clean``: the text has no repeated key and no edge whitespace (the C gate passed), so the document is
        exactly what the itemwise reader would build (every finding decodes typed on its own), without decoding
        it again.
        """
        if self._validate is None or not clean:
            return None
        typed = self.typed
        if typed.has_open_objects and not typed.shallow(obj, items, max_depth):
            return None
        top = {name: value for name, getter in typed.top_fields if (value := getter(obj)) is not UNSET}
        top[typed.contract.items] = items
        top_clean = strings_clean(typed.top_free_strings(obj))
        document = Document(top, checked_versions=versions if top_clean else None)
        return self._validate(document, changed, request_versions)

    def _whole(self, obj: Any, scanned: int) -> bool:
        """The decoded response holds every member of the text (``scanned`` colons): no key was repeated."""
        members = self._decoded_members
        return members is not None and members(obj, *self.typed.member_slots, UNSET) == scanned

    def versions_ok(self, versions: tuple[Any, Any]) -> bool:
        """These exact declarations are clean, accepted, and read with exactly this schema version."""
        known = self._versions_ok.get(versions)
        if known is None:
            known = self._learn_versions(versions)
        return known

    def _python_gate(self, data: bytes | str, obj: Any, items: list[Any]) -> bool:
        strings = itertools.chain(self.typed.top_free_strings(obj), self.typed.free_strings(items))
        return python_clean(data, obj, strings)

    def _learn_versions(self, versions: tuple[Any, Any]) -> bool:
        schema_text, prompt_text = versions
        ok = False
        clean = type(schema_text) is str and type(prompt_text) is str
        if clean and schema_text.strip() == schema_text and prompt_text.strip() == prompt_text:
            try:
                verdict = self._gate.judge(SchemaVersion.parse(schema_text), PromptVersion.parse(prompt_text))
            except VersionError:
                pass
            else:
                ok = verdict.accepted and verdict.shape is self.typed.shape and not verdict.tolerant
                ok = ok and all(self._matches_rule(name, text) for name, text in self._version_texts(versions))
        if len(self._versions_ok) >= _VERSION_CACHE_LIMIT:
            self._versions_ok.clear()
        self._versions_ok[versions] = ok
        return ok

    def _version_texts(self, versions: tuple[Any, Any]) -> list[tuple[str, str]]:
        fields = (self.typed.contract.versions.schema, self.typed.contract.versions.prompt)
        return [(name, text) for name, text in zip(fields, versions, strict=True) if name is not None]

    def _matches_rule(self, name: str, text: str) -> bool:
        rule = self.typed.shape.top.properties[name]
        too_short = rule.min_length is not None and len(text) < rule.min_length
        too_long = rule.max_length is not None and len(text) > rule.max_length
        return not too_short and not too_long and (rule.pattern is None or rule.pattern.search(text) is not None)
