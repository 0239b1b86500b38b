"""Rules for the instructions the ReviewResult contract requires of a prompt: changed files only (PO005),
omit rather than fabricate (PO006), strict JSON with no prose (PO007). Each reads the sentences of the
representative render."""

from __future__ import annotations

import re
from collections.abc import Iterator

from promptops.core.findings import FILE_START, Finding, Span
from promptops.lint.model import LintContext, Rule
from promptops.lint.subject import CONTRACT_KINDS, Subject
from promptops.render import reading, regexes
from promptops.render.renderer import SAMPLE_CHANGED_FILES


def _prompt_start(subject: Subject) -> Span:
    """Where a missing instruction is reported: the template line that renders the prompt's first text (an
    instruction is a whole-prompt property, but the file's line 1 is usually a comment or a pin)."""
    assert subject.render is not None
    text = subject.render.text
    start = len(text) - len(text.lstrip())
    line = text[start:].split("\n", 1)[0]
    return subject.locate(start, line) if line.strip() else FILE_START


def _first(subject: Subject, *patterns: re.Pattern[str]) -> reading.Sentence | None:
    assert subject.render is not None
    for sentence in reading.sentences(subject.render.text):
        if all(p.search(sentence.text) for p in patterns):
            return sentence
    return None


_CHANGED = regexes.lazy(r"\bchanged[ _-]?files?\b", re.IGNORECASE)
_ONLY = regexes.lazy(r"\b(only|exclusively|solely)\b", re.IGNORECASE)


class ChangedFilesOnly(Rule):
    """No instruction to report findings only on the changed files, or the changed files are not rendered.

    The rendered prompt needs a sentence that says "only" (or "exclusively", "solely") and "changed files"
    (or ``changed_files``), and it must list the files: every path of the lint render's sample
    ``changed_files`` has to appear in the rendered text. Findings on other files are dropped by the parser
    (``file_not_in_changed_files``), so a prompt without the list wastes the model's work.

    Fails (instruction present, files never rendered)::

        Report findings only on the changed files.

    Passes::

        Report findings only on the changed files:
        {% for path in changed_files %}
        - {{ path | json }}
        {% endfor %}
    """

    code = "PO005"
    name = "changed-files-only"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        if subject.render is None:
            return
        instruction = _first(subject, _CHANGED, _ONLY)
        if instruction is None:
            yield self.finding(
                subject, _prompt_start(subject), "no instruction to report findings only on the changed files"
            )
        missing = [p for p in SAMPLE_CHANGED_FILES if p not in subject.render.text]
        if missing:
            span = subject.locate(instruction.offset, instruction.text) if instruction else _prompt_start(subject)
            shown = len(SAMPLE_CHANGED_FILES) - len(missing)
            yield self.finding(
                subject,
                span,
                f"the changed files are not rendered into the prompt ({shown} of "
                f"{len(SAMPLE_CHANGED_FILES)} sample paths appear): list them from `changed_files`",
            )


_OMIT = regexes.lazy(
    r"\b(omit\w*|leave (?:it |them )?out|skip|drop|(?:do not|don't|never) (?:report|include))\b",
    re.IGNORECASE,
)
_DOUBT = regexes.lazy(
    r"\b(uncertain\w*|unsure|not (?:sure|certain|confident)|invalid|unverif\w*|"
    r"can(?:not|'t) (?:verify|confirm)|speculative|fabricat\w*|invent\w*|guess\w*|ma(?:k|d)e up)\b",
    re.IGNORECASE,
)
# What a reviewer reports, in the words templates use for it (a contract's items may be "vulnerabilities").
_FINDING = regexes.lazy(
    r"\b(findings?|issues?|problems?|vulnerabilit(?:y|ies)|bugs?|defects?|flaws?|weakness(?:es)?|risks?|"
    r"concerns?|comments?|results?|items?)\b",
    re.IGNORECASE,
)


class OmitUncertain(Rule):
    """No instruction to omit invalid or uncertain findings rather than fabricate them.

    The rendered prompt needs one sentence that names findings (or issues, problems, vulnerabilities, bugs,
    defects...), says to omit them
    (omit, leave out, skip, do not report...) and says when or instead of what (uncertain, invalid, not
    sure, rather than fabricating, guessing...). The parser drops an invalid finding; a fabricated one that
    happens to validate is worse.

    Fails::

        Be careful with uncertain findings.

    Passes::

        If a finding is uncertain, omit it rather than fabricating details.
    """

    code = "PO006"
    name = "omit-uncertain"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        if subject.render is not None and _first(subject, _OMIT, _DOUBT, _FINDING) is None:
            yield self.finding(
                subject,
                _prompt_start(subject),
                "no instruction to omit uncertain or invalid findings rather than fabricate them",
            )


_JSON_ONLY = regexes.lazy(
    r"\bJSON\b.*\b(only|strict|strictly|single|exactly one|nothing else|nothing but)\b|"
    r"\b(only|strict|strictly|single|exactly one|nothing but)\b.*\bJSON\b",
    re.IGNORECASE,
)
_NEGATION = regexes.lazy(r"\b(no|not|without|never|don't|do not)\b", re.IGNORECASE)
_WRAPPERS = regexes.lazy(
    r"\b(prose|markdown|code ?fences?|fences?|backticks|commentary|explanations?|preamble|"
    r"text (?:before|after|around))\b",
    re.IGNORECASE,
)


class StrictJson(Rule):
    """No instruction to answer with strict JSON only, or none forbidding prose and markdown wrappers.

    The rendered prompt needs a sentence that asks for JSON only (JSON with "only", "strict", "single",
    "exactly one" or "nothing else") and a sentence (it may be the same) that rules out wrappers: a negation
    (no, not, without, never) with prose, markdown, code fences, commentary or explanation.

    Fails::

        Respond in JSON.

    Passes::

        Respond with exactly one JSON object and nothing else: no prose, no markdown code fences.
    """

    code = "PO007"
    name = "strict-json"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        if subject.render is None:
            return
        if _first(subject, _JSON_ONLY) is None:
            yield self.finding(subject, _prompt_start(subject), "no instruction to answer with strict JSON only")
        if _first(subject, _NEGATION, _WRAPPERS) is None:
            yield self.finding(
                subject, _prompt_start(subject), "no instruction forbidding prose or markdown fences around the JSON"
            )
