"""Breaking changes between two OpenAPI documents, found by a differ nobody here wrote: Optic's CLI.

`kumitate import openapi` turns an existing document into a kumitate service and must prove that the
service's generated document breaks no client of the original. Our own `kumitate diff` compares specs, so
the proof comes from an independent differ: Optic (`@useoptic/optic`, MIT), `optic diff ORIGINAL
REGENERATED --check` with its standard `breaking-changes` ruleset, on OpenAPI 3.0 and 3.1, resolving
relative multi-file `$ref`s itself (docs/openapi-diff.md has the evidence, what it catches and what it
misses). It is installed with npm, pinned, with Node 22 from npm, as the OpenAPI linters are
(codegen/npm.py); oasdiff, the usual choice, is a Go module and the Go module proxy is not reachable here.

Optic's `--json` prints only the changelog, not the check results; those it writes as
`ci-run-details.json` in its working directory when `CI` is set, so the differ runs in a scratch
directory with `CI=true` and that file is read. The ruleset is named by a standard file of our own
(`--standard`), so neither an `x-optic-standard` key in the original nor an `optic.dev.yml` nearby can
change the rules. Telemetry is off (`OPTIC_TELEMETRY_LEVEL=off`, no update check).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen import npm

__all__ = [
    "BreakingChange",
    "ByOperation",
    "DiffFailed",
    "breaking_changes",
    "breaking_changes_by_operation",
    "install",
    "parse_results",
]

OPTIC = "@useoptic/optic@1.0.9"
AJV = "ajv@8.20.0"
"""Installed beside Optic so that Spectral's modules (which want ajv ^8.18) and `ajv-errors` share one ajv:
with only Optic's exact pin (8.17.1) at the top, `ajv-errors` compiles against a second copy and the CLI
dies on start-up with `SyntaxError: Unexpected token ':'` in a compiled schema."""
STANDARD = "ruleset:\n  - breaking-changes\n"
"""Optic's standard of rules: its built-in breaking-change rules and nothing else."""
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kumitate" / "openapi-diff"
"""Where npm installs Optic when the caller names no cache (kept across projects: one install per machine)."""
RUN_TIMEOUT_S = 300
"""Optic compares documents of a few hundred kB in seconds, but it inlines every `$ref` where it is used, and
on deep, widely shared schemas (openEO's, Qdrant's, Lob's in tests/data/openapi-corpus) it does not finish:
DiffFailed after this, rather than a job that hangs."""
DOCUMENT_KEYS = frozenset({"openapi", "info", "jsonSchemaDialect", "servers", "security", "tags"})
"""What a one-operation document keeps of the whole besides its operation and components (webhooks and `x-`
keys go: they are no path, and their refs would name components the operation does not reach)."""
METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})
_OPERATION = re.compile(r"^(GET|PUT|POST|DELETE|OPTIONS|HEAD|PATCH|TRACE) (\S+)")


@dataclass(frozen=True)
class BreakingChange:
    """One failed check of Optic's breaking-change rules: what a client of the original would trip on."""

    operation: str
    """`METHOD /path` of the operation it is in (as the original names it when removed), or "" for none."""
    where: str
    """Optic's description of the place, e.g. `GET /notes query parameter: tag`."""
    pointer: str
    """A JSON pointer to the place, into the original when `in_original` (something removed), else into the
    regenerated document."""
    in_original: bool
    """Whether `pointer` points into the original document (rather than the regenerated one)."""
    rule: str
    """The rule's name, e.g. `prevent operation removal`: Optic's rules have names, no other ids."""
    message: str
    """Optic's sentence, e.g. `cannot remove an operation. This is a breaking change.`"""

    def __str__(self) -> str:
        return f"{self.where}: [{self.rule}] {self.message}"


class DiffFailed(RuntimeError):
    """Optic ran but compared nothing (a document it cannot read, or does not hold valid, say): not a verdict."""


def install(cache: Path = DEFAULT_CACHE) -> Path:
    """The directory of Optic's executable under `cache`, installed with npm when missing."""
    return npm.install(cache, [OPTIC, AJV], ["optic"], "openapi-diff")


def breaking_changes(
    original: Path, regenerated: Path, cache: Path = DEFAULT_CACHE, *, strict: bool = False
) -> list[BreakingChange]:
    """What in `regenerated` breaks a client of `original`, by Optic's breaking-change rules (empty: none).

    Both are OpenAPI 3.0 or 3.1 documents, YAML or JSON, each possibly split over files by relative `$ref`s
    (Optic resolves them). Raises DiffFailed when Optic compares nothing (an unreadable document, or one
    that takes too long): no answer is never taken for "no breaking change".

    Optic checks only a document's outline (`--validation loose`) unless `strict`: its strict schema of
    OpenAPI 3.1 refuses valid documents (a top-level `jsonSchemaDialect`, as Adyen's have), and whether a
    document is valid is the linters' question (codegen/openapi_lint.py), not the differ's."""
    bin_dir = install(cache.resolve())  # absolute: Optic runs in a scratch directory
    env = npm.node_env(bin_dir)
    env.update({"CI": "true", "OPTIC_TELEMETRY_LEVEL": "off", "NO_UPDATE_NOTIFIER": "1"})
    with tempfile.TemporaryDirectory(prefix="kumitate-openapi-diff-") as tmp:
        scratch = Path(tmp)
        (scratch / "standard.yml").write_text(STANDARD, encoding="utf-8")
        command = [str(bin_dir / "optic"), "diff", str(original.resolve()), str(regenerated.resolve())]
        command += ["--check", "--standard", "standard.yml", "--validation", "strict" if strict else "loose"]
        try:
            done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise DiffFailed(f"optic took longer than {RUN_TIMEOUT_S} s (large documents with many $refs do)") from exc
        details = scratch / "ci-run-details.json"
        if not details.exists():
            raise DiffFailed(f"optic compared nothing (exit {done.returncode}):\n{_tail(done)}")
        found = parse_results(json.loads(details.read_text(encoding="utf-8")))
    if done.returncode != 0 and not found:
        raise DiffFailed(f"optic failed (exit {done.returncode}) without a failed check:\n{_tail(done)}")
    return found


@dataclass(frozen=True)
class ByOperation:
    """What `breaking_changes_by_operation` found, and the operations it could not compare (`GET /a/{}` -> why)."""

    changes: list[BreakingChange]
    not_compared: dict[str, str]


def breaking_changes_by_operation(
    original: Path, regenerated: Path, cache: Path = DEFAULT_CACHE, *, workers: int = 2
) -> ByOperation:
    """`breaking_changes`, one operation at a time: for a document Optic cannot compare whole in time (it
    inlines every `$ref` where it is used, and Lob's, openEO's and Qdrant's shared schemas multiply past
    300 s; Qdrant's `/collections/{}/cluster` alone, its GET and POST together, takes longer, each alone 2-5
    s), each operation of either document (its method and path template, `{name}`s aside) is compared in a
    document of its own that holds that operation and the components it reaches. Optic's rules are per
    operation, so the changes are the ones the whole would give; an operation only one side has is
    compared with an empty document (removed or added). An operation without `responses` (OpenAPI 3.1
    allows it, Optic's reader does not) is given an empty map, which adds nothing to compare. One Optic does
    not compare even alone is named in `not_compared` with why, never taken for "no breaking change"."""
    from codegen.importer.load import read  # the importer's bundler: relative-file refs made local

    before, after = read(str(original)).data, read(str(regenerated)).data
    keys = list(dict.fromkeys([*_operations(before), *_operations(after)]))
    with tempfile.TemporaryDirectory(prefix="kumitate-openapi-diff-paths-") as tmp:
        pairs = []
        for number, key in enumerate(keys):
            pair = (Path(tmp) / f"{number}-before.json", Path(tmp) / f"{number}-after.json")
            pair[0].write_text(json.dumps(_one_operation(before, key)), encoding="utf-8")
            pair[1].write_text(json.dumps(_one_operation(after, key)), encoding="utf-8")
            pairs.append(pair)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(lambda pair: _compared(pair[0], pair[1], cache), pairs))
    changes = [change for result in found if isinstance(result, list) for change in result]
    missed = {f"{m.upper()} {t}": result for (t, m), result in zip(keys, found, strict=True) if isinstance(result, str)}
    return ByOperation(changes, missed)


def _compared(original: Path, regenerated: Path, cache: Path) -> list[BreakingChange] | str:
    try:
        return breaking_changes(original, regenerated, cache)
    except DiffFailed as exc:
        return str(exc).splitlines()[0]


def _template(path: str) -> str:
    return re.sub(r"\{[^}/]*\}", "{}", path)


def _operations(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(path template, method) of each operation of `document`."""
    return [
        (_template(path), method)
        for path, item in (document.get("paths") or {}).items()
        if isinstance(item, dict)
        for method in item
        if method in METHODS
    ]


def _one_operation(document: dict[str, Any], key: tuple[str, str]) -> dict[str, Any]:
    """`document` with the one operation `key` names (its path item's other operations left out) and the
    components it reaches (refs followed)."""
    template, method = key
    paths = {
        path: {k: v for k, v in item.items() if k == method or k not in METHODS}
        for path, item in (document.get("paths") or {}).items()
        if isinstance(item, dict) and _template(path) == template and method in item
    }
    paths = json.loads(json.dumps(paths))  # a copy: the responses below are the comparison's, not the document's
    for item in paths.values():
        if isinstance(item.get(method), dict):
            item[method].setdefault("responses", {})
    components: dict[str, dict[str, Any]] = {}
    todo = _refs(paths)
    seen: set[str] = set()
    while todo:
        ref = todo.pop()
        parts = ref.split("/")
        if ref in seen or len(parts) != 4 or parts[:2] != ["#", "components"]:
            continue
        seen.add(ref)
        name = parts[3].replace("~1", "/").replace("~0", "~")
        target = ((document.get("components") or {}).get(parts[2]) or {}).get(name)
        if target is not None:
            components.setdefault(parts[2], {})[name] = target
            todo |= _refs(target)
    kept = {k: v for k, v in document.items() if k in DOCUMENT_KEYS}
    return {**kept, "paths": paths, "components": components}


def _refs(node: object) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()


def parse_results(details: dict[str, Any]) -> list[BreakingChange]:
    """The failed, unexempted checks in Optic's `ci-run-details.json` (read as `details`); DiffFailed for the
    comparisons it lists as failed."""
    failed = details.get("failed") or []
    if failed:
        raise DiffFailed(f"optic could not compare: {json.dumps(failed)[:2000]}")
    found: list[BreakingChange] = []
    for spec in details.get("completed") or []:
        for result in spec["comparison"]["results"]:
            if result["passed"] or result.get("exempted"):
                continue
            where = str(result.get("where", ""))
            operation = _OPERATION.match(where)
            location = result.get("location") or {}
            found.append(
                BreakingChange(
                    operation=" ".join(operation.groups()) if operation else "",
                    where=where,
                    pointer=str(location.get("jsonPath", "")),
                    in_original=location.get("spec") == "before",
                    rule=str(result["name"]),
                    message=str(result["error"]),
                )
            )
    return found


def _tail(done: subprocess.CompletedProcess[str]) -> str:
    """The end of what Optic printed: enough to see why it stopped."""
    return (done.stdout + done.stderr).strip()[-3000:]


def main(argv: list[str] | None = None) -> int:
    """`python -m codegen.openapi_diff ORIGINAL REGENERATED`: print each breaking change; exit 1 when any."""
    parser = argparse.ArgumentParser(prog="python -m codegen.openapi_diff", description=__doc__.splitlines()[0])
    parser.add_argument("original", type=Path, help="the document clients use today")
    parser.add_argument("regenerated", type=Path, help="the document that replaces it")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where npm installs Optic")
    args = parser.parse_args(argv)
    found = breaking_changes(args.original, args.regenerated, args.cache)
    for change in found:
        print(change)
    print(f"{len(found)} breaking change(s) by {OPTIC}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
