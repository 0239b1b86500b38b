"""Rules that hold templates to the release lock: a released artifact modified in place (PO009), and the
head template against the released snapshots (used by PO001)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from promptops.core.artifacts import check_artifacts
from promptops.core.findings import FILE_START, Finding, Span
from promptops.core.lock import ReleaseLock
from promptops.lint.model import LintContext, Rule
from promptops.lint.subject import Subject


class ReleasedArtifactModified(Rule):
    """A released artifact (prompt snapshot, frozen partial or schema) no longer matches the release lock.

    ``release cut`` records the sha256 of every file it releases in ``versions/<contract>/releases.yaml``;
    released files are immutable, because services render and parse with them side by side during a
    rollout. An artifact whose bytes changed is reported on the artifact itself (the lock keeps only its
    digest, so the finding points at the file's start); a locked artifact that is gone is reported on its
    line in the lock. Checked for every contract the lint run touches (its head, a snapshot or partial under
    ``versions/<contract>/``, or any contract file); inline suppressions cannot hide it (editing a released
    file to add one changes its digest too), only the configuration can.

    Fails (the snapshot was edited after release 1.0.0 locked it)::

        versions/review-result/releases.yaml:  prompts/1.0.0.j2: 3f1c...e2
        versions/review-result/prompts/1.0.0.j2 now hashes to 9b07...41

    Passes (the change goes into the head template and is cut as a new release)::

        versions/review-result/releases.yaml:  prompts/1.0.0.j2: 3f1c...e2
        versions/review-result/prompts/1.0.0.j2 still hashes to 3f1c...e2
    """

    code = "PO009"
    name = "released-artifact-modified"
    kinds = frozenset()  # not per template: ``check_lock`` runs once per contract in scope

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        return iter(())

    def check_lock(self, root: Path, lock: ReleaseLock, enabled: Callable[[str], bool]) -> Iterator[Finding]:
        for problem in check_artifacts(root, lock):
            if problem.kind == "unlocked":
                continue  # not a released artifact: ``release verify`` reports strays
            if problem.kind == "missing":
                path = problem.file.removeprefix(f"{lock.directory}/")
                line = lock.lines.get(path, 1)
                file, span = lock.source, self._lock_span(root, lock, line, path)
                message = f"released artifact {problem.file} is missing: {problem.message}"
            else:
                file, span = problem.file, FILE_START
                message = (
                    f"released artifact modified in place: {problem.message} "
                    f"({lock.source}); restore it and release the change as a new version"
                )
            if enabled(file):
                yield Finding(self.code, self.name, self.level, file, span, message)

    @staticmethod
    def _lock_span(root: Path, lock: ReleaseLock, line: int, path: str) -> Span:
        try:
            text = (root / lock.source).read_text(encoding="utf-8").split("\n")[line - 1]
        except (OSError, IndexError, UnicodeDecodeError):
            return Span.point(line)
        column = text.find(path) + 1
        return Span(line, column, line, column + len(path)) if column else Span.point(line)
