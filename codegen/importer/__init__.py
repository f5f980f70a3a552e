"""`kumitate import openapi`: an HTTP API described by OpenAPI 3.0/3.1 as a kumitate service.

It reads the document (load: a file or URL, its relative-file refs bundled), converts its shared schemas
(schema: `components/schemas` -> types/<svc>.json), maps every operation to one tool (operation, with
inputs, outputs, examples and adapt; names for readable tool names; catalogue for error codes), and
writes the specs, the handlers (handlers: stubs, or a facade with `--forward`) and IMPORT-REPORT.md
(report: everything not carried or changed). docs/importing-an-api.md describes the mapping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen.importer import adapt, budget, inputs, load, names, operation, write
from codegen.importer.answers import AnswerViews
from codegen.importer.catalogue import Catalogue
from codegen.importer.load import ImportFailed
from codegen.importer.report import REPORT_FILE, Report
from codegen.importer.schema import FORMAT_ALIASES, Converter, break_cycles

__all__ = ["ImportFailed", "Imported", "Options", "import_openapi"]

METHODS = ("get", "put", "post", "delete", "patch")
OTHER_METHODS = ("head", "options", "trace")
SERVICE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
BASE_PATH = re.compile(r"^/[a-z0-9/_-]*[a-z0-9_]$")
SEMVER = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$")


@dataclass(frozen=True)
class Options:
    """What `kumitate import openapi` was asked."""

    source: str
    """The document: a path or an http(s) URL."""
    service: str
    forward: str | None = None
    """The upstream base URL: the handlers forward every call there."""
    base_path: str | None = None
    """A prefix of every imported route; by default a route is the document's own path, so the service
    answers where the API did (and a facade forwards each call to the same path upstream)."""


@dataclass
class Imported:
    """What an import wrote, and its report."""

    written: list[Path] = field(default_factory=list)
    report: Report | None = None


def _check(options: Options, specs: Path, handlers: Path) -> str:
    if not SERVICE_NAME.match(options.service):
        raise ImportFailed(
            f"service name {options.service!r} must be snake_case: a-z first, then a-z, 0-9, _ (32 at most)"
        )
    for taken in (specs / options.service, handlers / options.service):
        if taken.exists():
            raise ImportFailed(f"{taken} already exists; nothing was changed")
    if not (specs / "errors.yaml").is_file():
        raise ImportFailed(f"{specs / 'errors.yaml'} not found: import into a project made by `kumitate init`")
    prefix = (options.base_path or "").rstrip("/")
    if prefix and not BASE_PATH.match(prefix):
        raise ImportFailed(f"--base-path {prefix!r} must look like /v1/pets: lower case, digits, / _ -")
    if options.forward is not None and not options.forward.startswith(("http://", "https://")):
        raise ImportFailed(f"--forward {options.forward!r} must be an http(s) URL")
    return prefix


def _existing_tools(specs: Path) -> set[str]:
    return {path.stem for path in specs.glob("*/tools/*.yaml")}


def _document_notes(data: dict[str, Any], options: Options) -> tuple[list[str], bool]:
    """Findings about the whole document, and whether it declares any security."""
    notes: list[str] = []
    schemes = (data.get("components") or {}).get("securitySchemes") or {}
    secured = bool(data.get("security")) or any(
        bool(op.get("security"))
        for item in (data.get("paths") or {}).values()
        if isinstance(item, dict)
        for method, op in item.items()
        if method in METHODS and isinstance(op, dict)
    )
    if schemes or secured:
        listed = ", ".join(f"{name} ({(s or {}).get('type', '?')})" for name, s in schemes.items()) or "declared"
        notes.append(
            f"security schemes {listed} are not carried as kumitate auth: the service asks kumitate's own bearer"
            f" tokens (scope {options.service}); a facade passes the caller's Authorization on to the API"
        )
    servers = [str((s or {}).get("url")) for s in data.get("servers") or [] if isinstance(s, dict)]
    if servers:
        notes.append(
            f"servers: {', '.join(servers)}" + ("" if options.forward else " (import with --forward to reach one)")
        )
    if data.get("webhooks"):
        notes.append(
            f"webhooks ({', '.join(data['webhooks'])}) are not carried: a tool answers calls, it receives none"
        )
    return notes, bool(schemes or secured)


def _service(data: dict[str, Any], options: Options, prefix: str, secured: bool, report: Report) -> dict[str, Any]:
    info = data.get("info") or {}
    title = " ".join(str(info.get("title") or options.service).split())
    version = str(info.get("version") or "")
    if not SEMVER.match(version):
        fixed = f"{version}.0" if re.match(r"^[0-9]+\.[0-9]+$", version) else "0.1.0"
        report.document.append(f"version {version!r} is not x.y.z: the service's version is {fixed}")
        version = fixed
    description = (
        " ".join(str(info.get("description") or "").split("\n\n")[0].split()) or f"{title}, imported from OpenAPI."
    )
    doc: dict[str, Any] = {
        "name": options.service,
        "title": title,
        "version": version,
        "description": description,
        "instructions": (
            f"Each tool is one operation of {title} (imported from its OpenAPI document)."
            " Read a tool's description for when to use it; tools marked read-only change nothing."
        ),
    }
    if prefix:
        doc["http"] = {"base_path": prefix}
    doc["policy"] = {"scopes": [options.service]} if secured else {"public": True}
    doc["policy"]["assert_formats"] = True  # OpenAPI tooling asserts `format`: refuse what the API would
    return doc


RUNTIME_ROUTES = ("/mcp", "/healthz", "/readyz", "/metrics", "/v1/versions", "/v1/operations", "/.well-known/mcp")
"""Routes kumitate's runtime serves itself: an imported route under one of them needs --base-path."""


def _routes(data: dict[str, Any], report: Report) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    routes = []
    taken = sorted({str(p) for p in data.get("paths") or {} if str(p).startswith(RUNTIME_ROUTES)})
    if taken:
        report.document.append(
            f"paths {', '.join(taken)} are routes of kumitate's runtime too: import with --base-path to serve them"
        )
    for path, item in (data.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        for method in item:
            if method in OTHER_METHODS:
                report.skipped.append(f"{method.upper()} {path}: kumitate binds GET, POST, PUT, PATCH and DELETE")
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            body = inputs.resolve_mapping(data, operation.get("requestBody") or {})
            content = body.get("content") or {}
            if body.get("required") is True and content and inputs.media(content) is None:
                report.skipped.append(
                    f"{method.upper()} {path}: its required request body is {', '.join(content)} only (no JSON, no"
                    " form), which a tool cannot send: write a handler for it"
                )
                continue
            routes.append((method.upper(), str(path), item, operation))
    return routes


def import_openapi(options: Options, specs: Path, handlers: Path) -> Imported:
    """Import the document as service `options.service` into the project's `specs` and `handlers`."""
    prefix = _check(options, specs, handlers)
    document = load.read(options.source)
    data = document.data
    report = Report(options.source, options.service, openapi=str(data.get("openapi")))
    convert = Converter(data, document.version)
    notes, secured = _document_notes(data, options)
    report.document += notes + break_cycles(convert.defs) + convert.notes
    if document.hoisted:
        report.document.append(f"schemas from other files became shared types: {', '.join(document.hoisted)}")
    titles: set[str] = set()
    report.document += adapt.types(convert.defs, titles)
    catalogue = Catalogue.read(specs / "errors.yaml")
    service = _service(data, options, prefix, secured, report)
    report.title = service["title"]
    ctx = operation.Context(
        data,
        convert,
        catalogue,
        options.service,
        prefix,
        options.forward is not None,
        service["title"],
        titles,
        AnswerViews(convert),
    )
    taken = _existing_tools(specs)
    routes = _routes(data, report)
    common = names.common_prefix([path for _, path, _, _ in routes])
    tools: list[tuple[dict[str, Any], str]] = []
    for method, path, item, op in routes:
        name = names.tool_name(op.get("operationId"), method, path, common, taken)
        entry = report.operation(f"{method} {path}", name)
        if op.get("operationId") and names.snake(str(op["operationId"])) != name:
            entry.notes.append(f"operationId {op['operationId']!r} is the tool {name!r}")
        if op.get("callbacks"):
            entry.dropped.append(f"callbacks ({', '.join(op['callbacks'])}): a tool answers calls, it receives none")
        if op.get("security") == []:
            entry.notes.append("the document says it needs no credentials; kumitate's policy is the service's")
        tools.append((operation.tool(name, method, path, item, op, ctx, entry), f"{method} {path}"))
    if not tools:
        raise ImportFailed(f"{options.source}: no operation to import (GET, POST, PUT, PATCH or DELETE)")
    if ctx.answers.made:
        report.document.append(
            "answer views of shared types (an answer never carries a writeOnly property, nor is held to one a type"
            f" requires without declaring it; requests keep the type): {'; '.join(ctx.answers.made)}"
        )
    if convert.overlaps:
        report.document.append(
            f"{convert.overlaps} `oneOf`(s) where an alternative is valid for every object another takes (an open"
            " one that accepts another's every least instance, or an object requiring nothing beside another"
            " object), so an answer is valid against two alternatives and against no `oneOf`: read as `anyOf`"
        )
    for alias in sorted(convert.aliased):
        report.document.append(
            f"`format: {alias}` is no JSON Schema format: read as `{FORMAT_ALIASES[alias]}`, which the service asserts"
        )
    report.new_codes = [f"{code} ({entry['status']})" for code, entry in catalogue.added.items()]
    files = write.service_files(specs, handlers, service, tools, convert.defs, options.forward)
    try:
        written = write.write(files, report, catalogue, specs)
    except FileExistsError as exc:
        raise ImportFailed(str(exc)) from None
    written += _budget(specs, options, report)
    (specs / options.service / REPORT_FILE).write_text(report.markdown(), encoding="utf-8")  # with its findings
    return Imported(written, report)


def _budget(specs: Path, options: Options, report: Report) -> list[Path]:
    """Record the service's own token budget when its tools/list is over the project's default; note what
    the readiness lint finds (the document's words, which the import does not rewrite)."""
    cost, limit, findings = budget.measure(specs, options.service)
    if findings:
        listed = ", ".join(f"{count} {rule}" for rule, count in sorted(findings.items()))
        report.document.append(
            f"`kumitate lint` (agent readiness) finds what the document's words leave an LLM to guess ({listed}):"
            " say when to use each tool and when not, describe every parameter and enum value"
        )
    if cost <= limit:
        return []
    try:
        path, recorded = budget.record(specs, options.service, cost, Path(options.source).name)
    except ValueError as exc:
        report.document.append(f"tools/list costs ~{cost} tokens, over the budget of {limit}: {exc}")
        return []
    report.document.append(
        f"tools/list costs ~{cost} tokens, over the project's budget of {limit}: specs/token-budget.yaml gives"
        f" the service {recorded}; serve fewer tools at a time with toolsets (specs/toolsets.yaml) to lower it"
    )
    return [path]
