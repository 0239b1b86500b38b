"""The release lock format: a lossless round trip, and a one-line error naming the key for each defect."""

from __future__ import annotations

import pytest

from promptops.core.lock import LockError, Release, ReleaseLock, dump_lock, parse_lock
from promptops.core.versioning import PromptVersion, SchemaVersion

A, B = "a" * 64, "b" * 64


def _release(version: str, schema: str = "1.0", note: str = "n", digest: str = A) -> Release:
    v, s = PromptVersion.parse(version), SchemaVersion.parse(schema)
    artifacts = {f"prompts/{v}.j2": digest, f"schemas/{s}.json": B}
    return Release(v, s, "patch", "unchanged", "2025-06-02T09:30:00Z", note, "released", artifacts)


def test_round_trip_keeps_every_field_and_locates_artifacts() -> None:
    note = "multi\nline: # not a comment — ünïcode 'q' \"d\"\nprompts/9.9.9.j2: looks like an artifact"
    lock = ReleaseLock("x", (_release("1.0.0", note=note), _release("1.1.0", "1.1")), True)
    text = dump_lock(lock)
    assert text.startswith("# Release lock of the x contract: written by `promptops release cut`")
    parsed = parse_lock(text, "x", "versions/x/releases.yaml")
    assert parsed.releases == lock.releases
    lines = text.split("\n")
    assert parsed.lines.keys() == {"prompts/1.0.0.j2", "schemas/1.0.json", "prompts/1.1.0.j2", "schemas/1.1.json"}
    for path, number in parsed.lines.items():
        assert lines[number - 1].strip().startswith(f"{path}:")


GOOD = dump_lock(ReleaseLock("x", (_release("1.0.0"), _release("1.0.1")), True))


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("contract: x", "contract: y", "key 'contract' is 'y' but the directory is 'x'"),
        ("lock_version: 1", "lock_version: 2", "key 'lock_version' must be 1"),
        ("lock_version: 1", "lock_version: 1\nextra: 1", "key 'extra': unknown key"),
        ("- version: 1.0.1", "- version: '1.0'", "key 'releases[1].version': prompt version '1.0' must be written"),
        ("  class: patch", "  class: huge", "key 'releases[0].class': must be one of initial, major, minor, patch"),
        ("  status: released", "  status: live", "key 'releases[0].status': must be one of deprecated, released"),
        ("'2025-06-02T09:30:00Z'", "2025-06-02", "key 'releases[0].date': must be a UTC timestamp"),
        (f"prompts/1.0.0.j2: {A}", f"prompts/1.0.0.j2: {A[:-1]}", "key 'releases[0].artifacts.prompts/1.0.0.j2'"),
        (
            f"prompts/1.0.0.j2: {A}",
            f"prompts/1.0.2.j2: {A}",
            "key 'releases[0].artifacts': must include prompts/1.0.0.j2",
        ),
        (f"prompts/1.0.0.j2: {A}", f"../x.j2: {A}", "'../x.j2' is not a relative path under the contract directory"),
        ("  note: n\n", "", "key 'releases[0].note': required, a string"),
        ("  note: n\n", "  note: n\n  by: me\n", "key 'releases[0].by': unknown key"),
        (
            f"schemas/1.0.json: {B}\n",
            f"schemas/1.0.json: {A}\n",
            "key 'releases[1].artifacts.schemas/1.0.json': digest differs from the one release 1.0.0 locked",
        ),
        ("contract: x", "contract: [x", "line 4: invalid YAML"),
        # an impossible date, quoted or not, is refused by its key
        ("'2025-06-02T09:30:00Z'", "'2026-02-30T25:61:61Z'", "key 'releases[0].date': must be a UTC timestamp"),
        ("'2025-06-02T09:30:00Z'", "2026-02-30T23:00:00Z", "'releases[0].date': must be a UTC timestamp"),
        # a key given twice is refused at its second line, never last-wins
        ("lock_version: 1", "lock_version: 1\nlock_version: 1", "line 5: invalid YAML: duplicate key 'lock_version'"),
        ("  note: n\n", "  note: n\n  note: m\n", "invalid YAML: duplicate key 'note' (first on line"),
        (
            f"prompts/1.0.0.j2: {A}",
            f"prompts/1.0.0.j2: {A}\n    prompts/1.0.0.j2: {A}",
            "duplicate key 'prompts/1.0.0.j2'",
        ),
    ],
)
def test_each_defect_is_one_line_naming_the_key(old: str, new: str, problem: str) -> None:
    # the first occurrence is edited, except for the digest conflict, which edits the second release
    text = GOOD.replace(old, new, 1) if "digest differs" not in problem else _second(GOOD, old, new)
    with pytest.raises(LockError) as caught:
        parse_lock(text, "x", "versions/x/releases.yaml")
    message = str(caught.value)
    assert message.startswith("versions/x/releases.yaml: ") and "\n" not in message
    assert problem in message


def _second(text: str, old: str, new: str) -> str:
    first = text.index(old) + len(old)
    return text[:first] + text[first:].replace(old, new, 1)


def test_releases_must_move_forward() -> None:
    text = dump_lock(ReleaseLock("x", (_release("1.0.1"), _release("1.0.0")), True))
    with pytest.raises(LockError, match=r"key 'releases\[1\]\.version': 1\.0\.0 does not follow 1\.0\.1"):
        parse_lock(text, "x", "versions/x/releases.yaml")
