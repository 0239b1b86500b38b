"""The release lock cannot be made to pass by removing, emptying or replacing it, and the hand-kept YAML files
(``releases.yaml``, ``contract.yaml``) refuse impossible dates, duplicate keys, devices and oversized files,
each with one line naming the file (and the line or key) and a documented exit code."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from promptops.core import strict_yaml
from tests.conftest import Cli
from tests.release.conftest import LOCK, PROMPTS, cut

CONTRACT = "versions/review-result/contract.yaml"


def _one_line(err: str) -> None:
    assert err.count("\n") == 1 and "internal error" not in err and "Traceback" not in err, err


def test_verify_fails_when_the_lock_is_deleted_while_snapshots_remain(released: Path, cli: Cli) -> None:
    (released / LOCK).unlink()
    code, out, _ = cli(released, "release", "verify")
    assert code == 2
    assert f"{LOCK}: is missing, but 9 released files remain under versions/review-result/prompts/" in out
    code, out, _ = cli(released, "release", "verify", "--format", "json")
    assert code == 2 and '"lock_exists": false' in out


def test_verify_fails_when_the_lock_is_emptied(released: Path, cli: Cli) -> None:
    lock = released / LOCK
    text = lock.read_text(encoding="utf-8")
    lock.write_text(text[: text.index("releases:")] + "releases: []\n", encoding="utf-8")
    code, out, _ = cli(released, "release", "verify")
    assert code == 2 and f"{LOCK}: lists no releases, but 9 released files remain" in out


@pytest.mark.parametrize("replacement", ["directory", "dev-null", "dangling", "fifo"])
def test_verify_fails_when_the_lock_is_not_a_regular_file(released: Path, cli: Cli, replacement: str) -> None:
    lock = released / LOCK
    lock.unlink()
    if replacement == "directory":
        lock.mkdir()
    elif replacement == "dev-null":
        lock.symlink_to("/dev/null")
    elif replacement == "dangling":
        lock.symlink_to(released / "nowhere.yaml")
    else:
        os.mkfifo(lock)  # opening it must not block
    code, _, err = cli(released, "release", "verify")
    assert code == 3
    _one_line(err)
    assert err.startswith(f"promptops: error: {LOCK}: ")


def test_an_oversized_lock_is_refused(released: Path, cli: Cli) -> None:
    lock = released / LOCK
    lock.write_text(lock.read_text(encoding="utf-8") + "#" * strict_yaml.MAX_BYTES, encoding="utf-8")
    code, _, err = cli(released, "release", "verify")
    assert code == 3 and "larger than 4 MiB" in err
    _one_line(err)


def test_verify_still_passes_a_contract_that_was_never_released(released: Path, cli: Cli) -> None:
    code, out, err = cli(released, "release", "verify")
    assert code == 0, out + err
    shutil.rmtree(released / PROMPTS)
    (released / LOCK).unlink()
    code, out, _ = cli(released, "release", "verify")
    assert code == 0 and "no release locks" in out


def test_cut_refuses_an_impossible_date(unreleased: Path, cli: Cli) -> None:
    code, _, err = cli(unreleased, "release", "cut", "--contract", "review-result", "--date", "2026-02-30T25:61:61Z")
    assert code == 3 and "'2026-02-30T25:61:61Z' is not a UTC timestamp YYYY-MM-DDTHH:MM:SSZ that exists" in err
    _one_line(err)
    assert not (unreleased / LOCK).exists()


def test_the_lock_loader_refuses_an_impossible_date(released: Path, cli: Cli) -> None:
    lock = released / LOCK
    lock.write_text(lock.read_text(encoding="utf-8").replace("2025-06-02T09:30:00Z", "2026-02-30T25:61:61Z", 1))
    for command in (("release", "verify"), ("release", "list"), ("lint",)):
        code, _, err = cli(released, *command)
        assert code == 3, command
        _one_line(err)
        assert f"{LOCK}: line 10: key 'releases[0].date': must be a UTC timestamp" in err


def test_duplicate_keys_in_contract_yaml_are_refused_naming_the_line(released: Path, cli: Cli) -> None:
    contract = released / CONTRACT
    text = contract.read_text(encoding="utf-8")
    contract.write_text(text.replace("items: findings", "items: findings\nitems: results", 1), encoding="utf-8")
    line = text.split("\n").index("items: findings") + 2
    response = released / "response.json"
    response.write_text("{}", encoding="utf-8")
    for command in (("lint",), ("release", "check"), ("validate", "--contract", "review-result", str(response))):
        code, _, err = cli(released, *command)
        assert code == 3, (command, err)
        _one_line(err)
        assert f"{CONTRACT}: line {line}: invalid YAML: duplicate key 'items'" in err


@pytest.mark.parametrize("replacement", ["dev-zero", "directory", "huge"])
def test_contract_yaml_must_be_a_bounded_regular_file(released: Path, cli: Cli, replacement: str) -> None:
    contract = released / CONTRACT
    if replacement == "huge":
        contract.write_text(contract.read_text(encoding="utf-8") + "#" * strict_yaml.MAX_BYTES)
    else:
        contract.unlink()
        contract.symlink_to("/dev/zero") if replacement == "dev-zero" else contract.mkdir()
    code, _, err = cli(released, "release", "check", "--contract", "review-result")
    assert code == 3
    _one_line(err)


def test_cut_writes_a_lock_that_loads(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    assert cli(unreleased, "release", "verify")[0] == 0


def test_a_schema_replaced_by_a_device_is_refused(released: Path, cli: Cli) -> None:
    """Found by the bad-input fuzz: a schema symlinked to /dev/zero was read without bound (MemoryError)."""
    schema = released / "versions/review-result/schemas/1.1.json"
    schema.unlink()
    schema.symlink_to("/dev/zero")
    for command in (("release", "check", "--contract", "review-result"), ("lint",)):
        code, _, err = cli(released, *command)
        assert code == 3, command
        _one_line(err)
        assert "versions/review-result/schemas/1.1.json: not a regular file" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("lint", "\x00"), "a path cannot contain a NUL byte"),
        (("lint", "--config", "/dev/zero"), "/dev/zero: not a regular file"),
        (("lint", "--output", "a\x00b"), "a path cannot contain a NUL byte"),
    ],
)
def test_lint_flags_that_name_impossible_files(released: Path, cli: Cli, args: tuple[str, ...], message: str) -> None:
    """Found by the bad-input fuzz: a NUL byte in a path was an internal error, a device as --config hung."""
    code, _, err = cli(released, *args)
    assert code == 3 and message in err
    _one_line(err)
