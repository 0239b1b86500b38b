"""Whether a head template still matches a released snapshot: lint's PO009 and ``release check`` ask."""

from __future__ import annotations

from pathlib import Path

from promptops.core.lock import ReleaseLock, frozen_dir, snapshot_path
from promptops.core.versioning import PromptVersion
from promptops.render.renderer import TEMPLATES_DIR, find_template


def snapshot_difference(head: Path, root: Path, lock: ReleaseLock, version: PromptVersion) -> str | None:
    """How the head template ``head`` differs from the released snapshot of ``version``, or None.

    The head is compared byte for byte with the snapshot, and every partial frozen with the release with
    the template of the same name under ``templates/``. Equal bytes import equal names, so this covers the
    head's whole import closure without parsing anything.
    """
    release = lock.get(version)
    assert release is not None
    base = root / lock.directory
    snapshot = base / snapshot_path(version)
    released, current = snapshot.read_bytes() if snapshot.is_file() else None, head.read_bytes()
    if released != current:
        if released is None:
            return f"its snapshot {lock.directory}/{snapshot_path(version)} is missing"
        line = _first_difference(released, current)
        return f"this template differs from {lock.directory}/{snapshot_path(version)} (from line {line})"
    prefix = f"{frozen_dir(version)}/"
    for path in sorted(p for p in release.artifacts if p.startswith(prefix)):
        name = path.removeprefix(prefix)
        template = find_template(root, name)  # the project's partial, else the packaged one
        frozen = base / path
        now = template.read_bytes() if template is not None else None
        then = frozen.read_bytes() if frozen.is_file() else None
        if now == then:
            continue
        if now is None or then is None:
            gone = f"{TEMPLATES_DIR}/{name}" if now is None else f"{lock.directory}/{path}"
            return f"{gone} (imported by release {version}) is missing"
        line = _first_difference(then, now)
        return f"{TEMPLATES_DIR}/{name} differs from {lock.directory}/{path} (from line {line})"
    return None


def _first_difference(old: bytes, new: bytes) -> int:
    old_lines, new_lines = old.split(b"\n"), new.split(b"\n")
    for number, (a, b) in enumerate(zip(old_lines, new_lines, strict=False), start=1):
        if a != b:
            return number
    return min(len(old_lines), len(new_lines)) + 1
