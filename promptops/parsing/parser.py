"""The parser: model text in, ParseOutcome out, for one contract under one policy.

Build one Parser per (contract, policy) and reuse it. ``parse`` never raises for any str or bytes: every input
ends as an accepted or rejected outcome with diagnostics. Two paths lead there, switched in ``parse`` only:

1. the fast path (fastpath.py) accepts a clean response in one typed decoding pass, or declines;
2. a declined response whose top level is clean is outlined once (typed.Outline: the findings decoded one by
   one), and the diagnostic path checks only the findings the fast path could not take; a text that is one object
   wrapped in prose is cut to it first;
3. the diagnostic path (jsontext.py, then validate.py and findings.py) decides everything else, from the raw
   input.

Both give the same outcome for every input; ``fast_path=False`` runs the diagnostic path alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from promptops.core.contract import Contract
from promptops.core.errors import PolicyError
from promptops.core.policy import ParserPolicy
from promptops.parsing.diagnostics import ERROR, Code, Diagnostic, ParseOutcome, extraction_note
from promptops.parsing.fastpath import FastPath
from promptops.parsing.jsontext import Rejection, decode_text, read_document, sole_object
from promptops.parsing.native import checks
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.typed import TypedShape
from promptops.parsing.validate import Validator
from promptops.parsing.versions import VersionGate

# Work limits besides the policy's size and depth: a response holding more quotes, opening brackets and tags
# than this (counted as '"', '{', '[' and '<' characters) is too_large, and so is one holding more findings.
# They keep every parse linear in the input with small constants (docs/parser.md states the bound).
MAX_TOKENS = 65_536
MAX_FINDINGS = 10_000
# A text starting with none of these is not JSON as a whole unless it is one of the literals.
_VALUE_STARTS = frozenset('{["-0123456789')
_LITERALS = frozenset({"true", "false", "null"})


class Parser:
    """Parses responses for one contract under one policy.

    ``fast_path=False`` sends every response down the diagnostic path: outcomes are identical either way (the
    test suite checks it), only speed differs.
    """

    def __init__(self, contract: Contract, policy: ParserPolicy | None = None, *, fast_path: bool = True) -> None:
        self.contract = contract
        self.policy = policy or contract.default_policy
        gate = VersionGate(contract, self.policy)
        limits = self.policy.limits
        self._max_bytes = limits.max_bytes
        floor = self.policy.schema_floor
        readable = [v for v in contract.schema_versions if v.major == floor.major and v >= floor]
        # With fast_path=False nothing generated or native is used: the diagnostic path reads field by field.
        typed = {v: TypedShape.build(contract, contract.shape(v)) for v in readable} if fast_path else {}
        self._plain: Callable[[str], bool] | None = None
        if fast_path and checks is not None:
            plain_keys, max_depth = checks.plain_keys, limits.max_depth
            self._plain = lambda text: plain_keys(text, max_depth)
        self._validator = Validator(contract, self.policy, gate, typed, MAX_FINDINGS)
        judged = self._validator.judged_versions.get
        fields = contract.versions
        self._needs_request_versions = fields.schema is None or fields.prompt is None
        # A fast path reads versions from the output (both fields) or from the request (neither field).
        fast_ok = (fields.schema is None) == (fields.prompt is None)
        self._fast: dict[str, FastPath] = {
            str(v): FastPath(t, judged, self._validator.versions_as_written, limits.max_depth, MAX_FINDINGS)
            for v, t in typed.items()
            if fast_ok and t is not None
        }
        self._only_fast = next(iter(self._fast.values())) if len(self._fast) == 1 and len(readable) == 1 else None
        # With several readable schema versions, the declared one picks the fast path to try (a wrong pick only
        # declines: the fast path checks the declaration it decodes).
        self._guess: FastPath | None = None
        self._peek: tuple[bytes, re.Pattern[bytes]] | None = None
        if fields.schema is not None:
            quoted = f'"{fields.schema}"'.encode()
            self._peek = (quoted, re.compile(re.escape(quoted) + rb'\s*:\s*"([^"\\]*)"'))

    def parse(
        self,
        raw: str | bytes,
        changed_files: ChangedFiles | Iterable[str],
        *,
        schema_version: str | None = None,
        prompt_version: str | None = None,
    ) -> ParseOutcome:
        """Parse one response.

        ``raw`` is the model's text: bytes are read as UTF-8; a str is encoded to UTF-8 first, with lone
        surrogates kept as their (invalid) bytes, so that a str and its bytes always get the same outcome.
        ``changed_files`` are the repository paths of the review target (a ChangedFiles built once is cheaper
        when many responses share them). ``schema_version``/``prompt_version`` state what the request asked
        for, and are required for contracts whose output carries no version fields.
        """
        changed = changed_files if isinstance(changed_files, ChangedFiles) else ChangedFiles(changed_files)
        request_versions: tuple[str, str] | None = None
        if self._needs_request_versions:
            if schema_version is None or prompt_version is None:
                name = self.contract.name
                raise PolicyError(
                    f"contract {name}: responses carry no versions; pass schema_version and prompt_version"
                )
            request_versions = (schema_version, prompt_version)
        if type(raw) is bytes:
            data = raw
        elif isinstance(raw, str):
            data = raw.encode("utf-8", "surrogatepass")
        else:
            data = bytes(raw)
        if len(data) > self._max_bytes:
            message = f"response is {len(data)} bytes, over the {self._max_bytes}-byte limit"
            return _rejected(Rejection(Code.TOO_LARGE, message), request_versions)
        if len(data) > MAX_TOKENS:
            tokens = data.count(b'"') + data.count(b"{") + data.count(b"[") + data.count(b"<")
            if tokens > MAX_TOKENS:
                message = f"response holds {tokens} quotes, brackets and tags, over the limit of {MAX_TOKENS}"
                return _rejected(Rejection(Code.TOO_LARGE, message), request_versions)
        guess = self._guess
        outcome = guess.accept(data, changed, request_versions) if guess is not None else None
        if outcome is not None:
            return outcome
        # Traffic declares one version for long runs: the fast path that accepted last is tried first, and the
        # declaration is looked for only when it declines.
        fast = self._only_fast or self._fast_path_for(data, request_versions)
        if fast is not None and fast is not guess:
            outcome = fast.accept(data, changed, request_versions)
            if outcome is not None:
                if request_versions is None:
                    self._guess = fast
                return outcome
        # Declined: the fast path sorts the findings of a response whose top level is clean, the diagnostic path
        # checks the ones it could not take; a text that is no JSON may be one object wrapped in prose.
        outline = fast.outline(data, changed, request_versions) if fast is not None else None
        if outline is not None:
            outcome = self._validator.validate_outline(outline, changed, False)
            if outcome is not None:
                return outcome
        text = decode_text(data)
        if isinstance(text, Rejection):
            return _rejected(text, request_versions)
        # Only a text that cannot start a JSON value is looked into here: the reader would extract from it.
        if self._fast and text[0] not in _VALUE_STARTS and text not in _LITERALS:
            outcome = self._wrapped(text, changed, request_versions)
            if outcome is not None:
                return outcome
        document = read_document(text, self.contract.items, self.policy.limits.max_depth, MAX_FINDINGS, self._plain)
        if isinstance(document, Rejection):
            return _rejected(document, request_versions)
        return self._validator.validate(document, changed, request_versions)

    def _wrapped(
        self, text: str, changed: ChangedFiles, request_versions: tuple[str, str] | None
    ) -> ParseOutcome | None:
        """The outcome of a text that is not JSON as a whole, when it holds one object the fast path takes whole
        or outlines (the diagnostic path's reader would extract that object), else None."""
        found = sole_object(text, self.policy.limits.max_depth)
        if found is None:
            return None
        data = found.encode()
        fast = self._only_fast or self._fast_path_for(data, request_versions)
        if fast is None:
            return None
        outcome = fast.accept(data, changed, request_versions)
        if outcome is not None:
            outcome.diagnostics.append(extraction_note())
            outcome.extracted = True
            return outcome
        outline = fast.outline(data, changed, request_versions)
        return self._validator.validate_outline(outline, changed, True) if outline is not None else None

    def _fast_path_for(self, data: bytes, request_versions: tuple[str, str] | None) -> FastPath | None:
        if request_versions is not None:
            return self._fast.get(request_versions[0])
        if self._peek is None or not self._fast:
            return None
        quoted, pattern = self._peek
        at = data.find(quoted)
        found = pattern.match(data, at) if at >= 0 else None
        return None if found is None else self._fast.get(found.group(1).decode("utf-8", "replace"))


def _rejected(rejection: Rejection, request_versions: tuple[str, str] | None) -> ParseOutcome:
    """A response rejected before any member was read: only the request's versions are known."""
    diagnostic = Diagnostic(rejection.code, ERROR, None, rejection.message)
    schema, prompt = request_versions or (None, None)
    return ParseOutcome(
        accepted=False,
        reason=rejection.code,
        diagnostics=[diagnostic],
        schema_version=schema,
        prompt_version=prompt,
    )
