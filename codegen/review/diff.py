"""The review's entry point: compare two loaded spec trees and classify every change with a rule from
rules.yaml, then apply exceptions and decide each service's verdict.

Tools are paired by name (names are unique across services); a HEAD tool that declares
`renamed_from: old` (or has the same schemas as exactly one removed tool) is paired with BASE's `old` and
reported as TOOL_RENAMED instead of a removal plus an addition. The comparisons themselves live beside
this module, one job each: schemas.py (JSON Schemas by direction), changes.py (a tool, resource or
service on every surface), pyapi.py (the generated Python API), renames.py, versions.py (what a major
version allows), exceptions.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from codegen import lint
from codegen.review import surfaces
from codegen.review.changes import diff_resource, diff_service, diff_tool
from codegen.review.exceptions import apply_exceptions
from codegen.review.findings import Change, Finding, Review, ServiceVerdict, field_of
from codegen.review.pyapi import PyApi, diff_classes
from codegen.review.renames import renamed_from_problems, tool_renames
from codegen.review.rules import Exception_
from codegen.review.versions import needs, path_bump, version_bump
from codegen.specs import ServiceSpec, SpecTree

__all__ = ["Finding", "Review", "ServiceVerdict", "compare", "review"]


Routes = dict[tuple[str, str], str | None]
"""(kind, subject) -> the route's /vN change, if any: what allows a breaking HTTP finding."""


def compare(base: SpecTree, head: SpecTree) -> list[Finding]:
    """Every finding between two trees, before exceptions, sorted; `allowed_by` is set where a major
    version allows a breaking finding."""
    api = (PyApi.of(base), PyApi.of(head))
    services_a = {s.name: s for s in base.services}
    services_b = {s.name: s for s in head.services}
    routes: Routes = {}
    found = [
        *_service_findings(services_a, services_b, api, routes),
        *_tool_findings(base, head, services_a, services_b, api, routes),
        *_resource_findings(base, head, services_a, services_b, api, routes),
    ]

    def allowed(f: Finding) -> str | None:
        if f.severity != "breaking":
            return None
        if f.surface == "http":
            return routes.get((f.kind, f.subject))
        if f.surface == "python":
            return version_bump(services_a.get(f.service), services_b.get(f.service))
        return None  # mcp, http+mcp: MCP tool names carry no version

    unique = {(f.rule, f.service, f.kind, f.subject, f.detail): f for f in found}
    return sorted((replace(f, allowed_by=allowed(f)) for f in unique.values()), key=Finding.sort_key)


def _findings(changes: Iterator[Change], service: str, kind: str, subject: str) -> Iterator[Finding]:
    """The changes one comparison found, as findings about `subject`."""
    for rule, detail, cause in changes:
        yield Finding(rule, service, kind, subject, detail, cause, field=field_of(detail))


def _service_findings(
    services_a: dict[str, ServiceSpec], services_b: dict[str, ServiceSpec], api: tuple[PyApi, PyApi], routes: Routes
) -> Iterator[Finding]:
    """Services added, removed and changed (their own fields and their Python API classes); records each
    kept service's base-path bump in `routes`."""
    for name in sorted(services_a.keys() | services_b.keys()):
        sa, sb = services_a.get(name), services_b.get(name)
        if sa is None:
            yield Finding("SERVICE_ADDED", name, "service", name, f"service `{name}` added")
        elif sb is None:
            yield Finding("SERVICE_NO_DELETE", name, "service", name, f"service `{name}` removed")
        else:
            routes["service", name] = path_bump(sa.base_path, sb.base_path, "base path")
            yield from _findings(diff_service(sa, sb), name, "service", name)
            classes = diff_classes(api[0].classes.get(name, {}), api[1].classes.get(name, {}))
            yield from _findings(classes, name, "service", name)


def _tool_findings(
    base: SpecTree,
    head: SpecTree,
    services_a: dict[str, ServiceSpec],
    services_b: dict[str, ServiceSpec],
    api: tuple[PyApi, PyApi],
    routes: Routes,
) -> Iterator[Finding]:
    """Tools added, changed (paired with their old name when renamed) and removed; an addition or removal
    caused by its whole service's is marked so; records each kept tool's route bump in `routes`."""
    tools_a = {t.name: t for t in base.all_tools()}
    tools_b = {t.name: t for t in head.all_tools()}
    renamed = tool_renames(tools_a, tools_b)
    for name, new in sorted(tools_b.items()):
        old_name = next((o for o, n in renamed.items() if n == name), name)
        old = tools_a.get(old_name)
        if old is None:
            cause = "SERVICE_ADDED" if new.service not in services_a else None
            models = ", ".join(f"`{m}`" for m in surfaces.tool_models(new))
            detail = f"tool `{name}` added (`{new.http_method} {new.http_path}`; models {models})"
            yield Finding("TOOL_ADDED", new.service, "tool", name, detail, cause)
            continue
        routes["tool", name] = path_bump(old.http_path, new.http_path, "route")
        declared = old_name == new.raw.get("renamed_from")
        yield from _findings(
            diff_tool(base, head, old, new, old_name != name, api, declared), new.service, "tool", name
        )
    for name, old in sorted(tools_a.items()):
        if name in tools_b or name in renamed:
            continue
        cause = "SERVICE_NO_DELETE" if old.service not in services_b else None
        models = ", ".join(f"`{m}`" for m in surfaces.tool_models(old))
        detail = f"tool `{name}` removed (`{old.http_method} {old.http_path}`; models {models})"
        yield Finding("TOOL_NO_DELETE", old.service, "tool", name, detail, cause)


def _resource_findings(
    base: SpecTree,
    head: SpecTree,
    services_a: dict[str, ServiceSpec],
    services_b: dict[str, ServiceSpec],
    api: tuple[PyApi, PyApi],
    routes: Routes,
) -> Iterator[Finding]:
    """Resources added, removed and changed, paired by (service, name); records each kept resource's
    route bump in `routes`."""
    res_a = {(s.name, r.name): r for s in base.services for r in s.resources}
    res_b = {(s.name, r.name): r for s in head.services for r in s.resources}
    for key in sorted(res_a.keys() | res_b.keys()):
        ra, rb = res_a.get(key), res_b.get(key)
        svc, name = key
        if ra is None and rb is not None:
            cause = "SERVICE_ADDED" if svc not in services_a else None
            yield Finding("RESOURCE_ADDED", svc, "resource", name, f"resource `{rb.uri}` added", cause)
        elif rb is None and ra is not None:
            cause = "SERVICE_NO_DELETE" if svc not in services_b else None
            yield Finding("RESOURCE_NO_DELETE", svc, "resource", name, f"resource `{ra.uri}` removed", cause)
        elif ra is not None and rb is not None:
            routes["resource", name] = path_bump(ra.http_path, rb.http_path, "route")
            yield from _findings(diff_resource(base, head, ra, rb, api), svc, "resource", name)


def review(
    base: SpecTree,
    head: SpecTree,
    exceptions: list[Exception_] | None = None,
    base_label: str = "BASE",
    head_label: str = "HEAD",
    exception_problems: list[str] | None = None,
    base_exceptions: list[Exception_] | None = None,
) -> Review:
    """The review of BASE -> HEAD. `exceptions` come from HEAD's specs/review-exceptions.yaml; those
    also in `base_exceptions` (BASE's file) were written for earlier changes and excuse nothing here."""
    earlier = {e.key for e in base_exceptions or []}
    carried = [e for e in exceptions or [] if e.key in earlier]
    fresh = [e for e in exceptions or [] if e.key not in earlier]
    findings, unused = apply_exceptions(compare(base, head), fresh)
    services_a = {s.name: s for s in base.services}
    services_b = {s.name: s for s in head.services}
    verdicts: dict[str, ServiceVerdict] = {}
    for name in sorted(services_a.keys() | services_b.keys()):
        sa, sb = services_a.get(name), services_b.get(name)
        verdict = ServiceVerdict(
            name,
            sa.version if sa else None,
            sb.version if sb else None,
            path_bump(sa.base_path, sb.base_path, "base path") if sa and sb else None,
            version_bump(sa, sb),
        )
        for f in findings:
            if f.service == name and f.severity == "breaking":
                verdict.breaking += 1
                verdict.excused += f.excused is not None
                verdict.allowed += f.excused is None and f.allowed_by is not None
                verdict.unexcused += f.blocking
        verdict.needs = needs(sa, [f for f in findings if f.service == name and f.blocking])
        verdicts[name] = verdict
    return Review(
        base=base_label,
        head=head_label,
        findings=findings,
        services=verdicts,
        exception_problems=list(exception_problems or []),
        unused_exceptions=unused,
        carried_exceptions=carried,
        base_problems=list(base.problems),
        head_problems=[*lint.lint(head), *renamed_from_problems(base, head)],
    )
