"""codegen/openapi_diff.py: Optic, the independent differ, on crafted pairs of OpenAPI 3.0 and 3.1 documents.

tests/data/openapi-diff/<version>/ holds `base.yaml` (the original) and one changed document per case:
`breaking/` changes that break a client of the original (each must be found, by the rule named below),
`harmless/` changes that break none (nothing may be found), and `blind/` changes that do break a client
but that Optic's rules do not see (nothing is found today: a newer Optic that sees one fails here, so the
list in docs/openapi-diff.md is kept true). `multi-file/` is the 3.1 original split over two files by
relative `$ref`s. `false-positive/` is a change that breaks no client and that Optic reports (the import
proof explains it in proof.yaml; a newer Optic that stops reporting it fails here, and the entry goes).
The tests that run Optic need npm (CI installs it; here a non-root user without npm skips).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from codegen import openapi_diff
from codegen.openapi_diff import BreakingChange, DiffFailed
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "openapi-diff"
VERSIONS = ["3.0", "3.1"]
BREAKING = {
    "changed-path": ("prevent operation removal", "GET /notes/{noteId}"),
    "narrowed-request-type": ("prevent request property type changes", "POST /notes"),
    "new-required-query-parameter": ("prevent new required query parameters", "GET /notes"),
    "new-required-request-property": ("prevent changing request property to required", "POST /notes"),
    "optional-query-parameter-made-required": ("prevent requiring existing query parameters", "GET /notes"),
    "removed-operation": ("prevent operation removal", "DELETE /notes/{noteId}"),
    "removed-request-enum-value": ("request and response property enums", "POST /notes"),
    "removed-response-property": ("prevent removing response property", "GET /notes/{noteId}"),
    "removed-response-status": ("prevent response status code removal", "GET /notes/{noteId}"),
    "request-no-longer-nullable": ("prevent request property type changes", "POST /notes"),
    "response-property-no-longer-required": ("prevent making response property optional", "GET /notes/{noteId}"),
}
"""Each breaking case: a rule that must fail and the operation it must name."""

needs_npm = pytest.mark.skipif(
    shutil.which("npm") is None and os.geteuid() != 0, reason="no npm (and not root to apt-get it): CI has it"
)


def _cases(kind: str) -> list[tuple[str, str]]:
    return [(version, path.stem) for version in VERSIONS for path in sorted((DATA / version / kind).glob("*.yaml"))]


@pytest.fixture(scope="module")
def cache() -> Path:
    """Optic installed once for the module, under var/ (removed by make clean)."""
    path = REPO / "var" / "openapi-diff"
    openapi_diff.install(path)
    return path


def test_every_crafted_case_is_listed() -> None:
    for version in VERSIONS:
        assert {p.stem for p in (DATA / version / "breaking").glob("*.yaml")} == set(BREAKING), version


@pytest.mark.slow
@needs_npm
@pytest.mark.parametrize(("version", "case"), _cases("breaking"))
def test_breaking_changes_are_found(cache: Path, version: str, case: str) -> None:
    found = openapi_diff.breaking_changes(
        DATA / version / "base.yaml", DATA / version / "breaking" / f"{case}.yaml", cache
    )
    rule, operation = BREAKING[case]
    assert any(c.rule == rule and c.operation == operation for c in found), [str(c) for c in found]
    assert all(c.message and c.pointer.startswith("/paths/") for c in found)


@pytest.mark.slow
@needs_npm
@pytest.mark.parametrize(("version", "case"), _cases("harmless") + _cases("blind"))
def test_harmless_changes_and_the_known_blind_spots_find_nothing(cache: Path, version: str, case: str) -> None:
    kind = "harmless" if (DATA / version / "harmless" / f"{case}.yaml").exists() else "blind"
    assert (
        openapi_diff.breaking_changes(DATA / version / "base.yaml", DATA / version / kind / f"{case}.yaml", cache) == []
    )


@pytest.mark.slow
@needs_npm
def test_nullable_values_inside_a_union_are_reported_though_nothing_changed(cache: Path) -> None:
    """OpenAPI 3.0's `nullable: true` read beside 3.1's `type: [..., "null"]` (the one change between the two
    documents), inside an `anyOf`: Optic's union rules say a nullable boolean's type changed to null, and a
    nullable array's items lost (in an answer) or gained (in a request) their required properties. Outside a
    union, or not nullable, nothing is reported (the corpus shows both)."""
    case = DATA / "false-positive"
    found = openapi_diff.breaking_changes(case / "original.yaml", case / "regenerated.yaml", cache)
    assert sorted((c.operation, c.rule, c.message.partition("previous schema. ")[2]) for c in found) == [
        (
            "GET /telemetry",
            "prevent narrowing in response union types",
            "anyOf/0/devices.items/name: required property was removed",
        ),
        (
            "PUT /shapes",
            "prevent expanded in request union types",
            "anyOf/0/exterior: required property was added, anyOf/0/exterior/points: required property was added",
        ),
        (
            "PUT /shapes",
            "prevent expanded in request union types",
            "anyOf/0/on_disk: type: anyOf/0/on_disk: type boolean was changed to null",
        ),
    ]


@pytest.mark.slow
@needs_npm
def test_a_multi_file_original_is_resolved(cache: Path) -> None:
    """Optic follows the original's relative `$ref`s into schemas.yaml: no bundling step is needed."""
    original = DATA / "multi-file" / "openapi.yaml"
    assert openapi_diff.breaking_changes(original, DATA / "3.1" / "base.yaml", cache) == []
    found = openapi_diff.breaking_changes(original, DATA / "3.1" / "breaking" / "removed-response-property.yaml", cache)
    assert {(c.operation, c.rule) for c in found} >= {("GET /notes/{noteId}", "prevent removing response property")}


@pytest.mark.slow
@needs_npm
def test_an_invalid_or_missing_document_is_no_verdict(cache: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    text = (DATA / "3.0" / "base.yaml").read_text(encoding="utf-8")
    assert text.count("required:\n      - title\n") == 1
    broken.write_text(text.replace("required:\n      - title\n", "required: []\n"), encoding="utf-8")
    with pytest.raises(DiffFailed, match="required"):
        openapi_diff.breaking_changes(DATA / "3.0" / "base.yaml", broken, cache, strict=True)
    with pytest.raises(DiffFailed):
        openapi_diff.breaking_changes(DATA / "3.0" / "base.yaml", tmp_path / "missing.yaml", cache)


def test_results_are_read_from_optics_ci_details() -> None:
    details = {
        "completed": [
            {
                "comparison": {
                    "results": [
                        {
                            "where": "GET /notes query parameter: tag",
                            "error": "cannot add required query parameter tag to an existing operation.",
                            "passed": False,
                            "exempted": False,
                            "location": {"jsonPath": "/paths/~1notes/get/parameters/1", "spec": "after"},
                            "name": "prevent new required query parameters",
                            "severity": 2,
                        },
                        {"where": "GET /notes", "error": "", "passed": True, "name": "prevent operation removal"},
                        {"where": "x", "error": "", "passed": False, "exempted": True, "name": "exempted"},
                    ]
                }
            }
        ],
        "failed": [],
        "noop": [],
    }
    assert openapi_diff.parse_results(details) == [
        BreakingChange(
            operation="GET /notes",
            where="GET /notes query parameter: tag",
            pointer="/paths/~1notes/get/parameters/1",
            in_original=False,
            rule="prevent new required query parameters",
            message="cannot add required query parameter tag to an existing operation.",
        )
    ]
    with pytest.raises(DiffFailed):
        openapi_diff.parse_results({"completed": [], "failed": [{"apiName": "a", "error": "boom"}]})


@pytest.mark.slow
@needs_npm
@pytest.mark.parametrize("case", ["changed-path", "removed-response-property", "new-required-query-parameter"])
def test_operation_by_operation_finds_what_the_whole_finds(cache: Path, case: str) -> None:
    """For documents Optic cannot compare whole in time: each path compared on its own (with the components
    it reaches, a path only one side has against an empty one) finds the changes the whole comparison does."""
    original, changed = DATA / "3.1" / "base.yaml", DATA / "3.1" / "breaking" / f"{case}.yaml"
    whole = openapi_diff.breaking_changes(original, changed, cache)
    split = openapi_diff.breaking_changes_by_operation(original, changed, cache)
    assert whole and sorted(map(str, split.changes)) == sorted(map(str, whole)) and not split.not_compared
    same = openapi_diff.breaking_changes_by_operation(DATA / "multi-file" / "openapi.yaml", original, cache)
    assert same == openapi_diff.ByOperation([], {})
