"""`kumitate init` and `kumitate new`: start a project, add a service, a tool or a resource.

Everything written here is hand-owned from then on (specs and handlers): scaffolding writes a
file only when it does not exist yet, and regenerates generated/ afterwards so the new project or
tool is served at once. A new tool is a stub that answers NOT_IMPLEMENTED (with an example that
says so), so the project's tests pass until the handler is written.

A service is written in the layout every service of this repository has (docs/writing-a-service.md):
`handlers/<svc>/__init__.py` the adapter (one method per tool, `create(setup)`), `settings.py` its
environment variables, `core/` its domain logic. `kumitate new service` adds `store.py` (its tables, one
to start with, on `setup.database`) and `migrations/` with the first migration, which `kumitate db
upgrade` applies (docs/writing-a-service.md, "Tables and migrations"); the service of `kumitate init`
keeps nothing.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jinja2

from codegen import naming
from codegen.scaffold import origin

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)
BASE_ERRORS = Path(__file__).with_name("errors.yaml")
MARKER = "    # kumitate new: methods for new tools and resources are added above this line\n"
NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class ScaffoldError(ValueError):
    """What cannot be scaffolded, and why (the CLI prints it and exits 2)."""


@dataclass(frozen=True, slots=True)
class Written:
    """A file `kumitate new` wrote, and what to do with it next."""

    path: Path
    note: str = ""


def _check_name(kind: str, name: str) -> None:
    if not NAME.match(name):
        raise ScaffoldError(f"{kind} name {name!r} must be snake_case: a-z first, then a-z, 0-9, _ (32 at most)")


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _write(path: Path, text: str, written: list[Written]) -> None:
    if path.exists():
        raise ScaffoldError(f"{path} already exists; nothing was changed")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    written.append(Written(path))


def init_project(
    target: Path, service: str = "hello", tool: str = "greet", kumitate: str | None = None
) -> list[Written]:
    """A new project in `target` (empty or absent) with one service and one working tool. It depends on
    `kumitate` (a path or a requirement), by default on the kumitate running this (origin.running)."""
    _check_name("service", service)
    _check_name("tool", tool)
    try:
        requirement = origin.running() if kumitate is None else origin.given(kumitate)
    except ValueError as exc:
        raise ScaffoldError(str(exc)) from None
    if target.exists() and any(target.iterdir()):
        raise ScaffoldError(f"{target} is not empty; `kumitate init` starts a project in a new directory")
    name = target.resolve().name
    written: list[Written] = []
    source = origin.portable(requirement)
    requirement = source.requirement
    if source.wheel is not None:
        vendored = target / origin.VENDOR / source.wheel.name
        vendored.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.wheel, vendored)
        note = "kumitate's wheel, from a local file: commit it; make and CI install kumitate from here"
        written.append(Written(vendored, note))
    values = {
        "name": name,
        "service": service,
        "tool": tool,
        "vendored": source.wheel is not None,
        "kumitate": requirement,
        "kumitate_dev": origin.with_extra(requirement, "codegen,fuzz"),
        "kumitate_codegen": origin.with_extra(requirement, "codegen"),
    }
    for template, path in (
        ("pyproject.toml.jinja", "pyproject.toml"),
        ("Makefile.jinja", "Makefile"),
        ("README.md.jinja", "README.md"),
        ("gitignore.jinja", ".gitignore"),
        ("ci_run.jinja", ".ci/run"),
        ("pre-commit-config.yaml.jinja", ".pre-commit-config.yaml"),
        ("test_examples.py.jinja", "tests/test_examples.py"),
        ("redocly.yaml.jinja", ".redocly.yaml"),  # `make lint-openapi`: what stays a warning, and why
        ("spectral.yaml.jinja", ".spectral.yaml"),
    ):
        _write(target / path, _render(template, **values), written)
    if source.warning:
        written.append(Written(target / "pyproject.toml", f"WARNING: {source.warning}"))
    (target / ".ci/run").chmod(0o755)
    _write(target / WORKFLOW, review_workflow("make venv", ".venv/bin/kumitate"), written)
    _write(target / "tests/__init__.py", "", written)
    _write(target / "handlers/__init__.py", '"""Hand-written domain logic, one package per service."""\n', written)
    _write(target / "specs/errors.yaml", BASE_ERRORS.read_text(encoding="utf-8"), written)
    written += _service_files(target / "specs", target / "handlers", service, first_tool=tool)
    _write(target / f"tests/test_{service}_core.py", _render("test_core.py.jinja", service=service), written)
    return written


WORKFLOW = ".github/workflows/spec-review.yml"


def review_workflow(install: str, kumitate: str) -> str:
    """The GitHub Actions workflow that reviews each pull request's specs (`kumitate diff` against its
    base): `install` is the step that installs kumitate with its generator, `kumitate` its command."""
    return _render("spec-review.yml.jinja", install=install, kumitate=kumitate)


def new_service(specs: Path, handlers: Path, service: str) -> list[Written]:
    """specs/<service>/service.yaml with one stub tool, and handlers/<service>/."""
    _check_name("service", service)
    if (specs / service).exists():
        raise ScaffoldError(f"{specs / service} already exists; nothing was changed")
    written = _service_files(specs, handlers, service, first_tool=f"{service}_status", stub=True, store=True)
    return written + _store_files(handlers / service, service)


def _store_files(package: Path, service: str) -> list[Written]:
    """handlers/<service>/store.py with one table, and its first migration (branch `<service>`)."""
    written: list[Written] = []
    names = {"service": service, "title": _title(service), "store_class": f"{naming.pascal(service)}Store"}
    _write(package / "store.py", _render("store.py.jinja", **names), written)
    migrations = package / "migrations"
    _write(migrations / "__init__.py", f'"""{service}\'s migrations (Alembic branch `{service}`)."""\n', written)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    _write(
        migrations / f"{service}_0001_{service}_items.py", _render("migration.py.jinja", **names, date=date), written
    )
    return written


def _service_files(
    specs: Path, handlers: Path, service: str, *, first_tool: str, stub: bool = False, store: bool = False
) -> list[Written]:
    """The spec, handler bundle, settings and core of a new service; `store`: the bundle takes the service's
    store (store.py, written by `_store_files`), built on `setup.database` in `create`."""
    written: list[Written] = []
    _write(
        specs / service / "service.yaml",
        _render("service.yaml.jinja", service=service, title=_title(service)),
        written,
    )
    _write(specs / service / "tools" / f"{first_tool}.yaml", _tool_spec(service, first_tool, stub=stub), written)
    method = (
        _tool_method(service, first_tool)
        if stub
        else _render(
            "greet_method.py.jinja",
            tool=first_tool,
            input_model=naming.input_model(first_tool),
            output_model=naming.output_model(first_tool),
        )
    )
    names = {
        "service": service,
        "settings_class": f"{naming.pascal(service)}Settings",
        "store_class": f"{naming.pascal(service)}Store" if store else "",
    }
    package = handlers / service
    _write(
        package / "__init__.py",
        _render("handlers.py.jinja", **names, bundle=naming.bundle_name(service), methods=method),
        written,
    )
    _write(package / "settings.py", _render("settings.py.jinja", **names), written)
    _write(package / "core" / "__init__.py", _render("core.py.jinja", service=service, greet=not stub), written)
    return written


def _render(template: str, **values: object) -> str:
    return TEMPLATES.get_template(template).render(**values)


def _tool_spec(service: str, tool: str, *, stub: bool) -> str:
    summary = f"{_title(tool)}." if stub else "Greet someone by name."
    return _render(
        "tool.yaml.jinja",
        service=service,
        tool=tool,
        title=_title(tool),
        summary=summary,
        description=(
            f"Describe here, for an LLM, what {tool} does, what it returns and what it never does."
            if stub
            else "Answers with a greeting for the given name."
        ),
        use_when="you need what this tool returns" if stub else "you want to greet someone",
        input_description="The name to use." if stub else "Who to greet.",
        output_description="The result." if stub else "The greeting.",
        stub=stub,
    )


def _tool_method(service: str, tool: str) -> str:
    """A stub for a tool: the generated input model in, the output model out."""
    return _render(
        "stub_method.py.jinja",
        service=service,
        method=tool,
        summary=f"{_title(tool)}.",
        resource=False,
        input_model=naming.input_model(tool),
        output_model=naming.output_model(tool),
    )


def _resource_method(service: str, resource: str) -> str:
    """A stub for a resource: `read_<name>(ctx)` returning the resource's generated model."""
    return _render(
        "stub_method.py.jinja",
        service=service,
        method=naming.resource_method(resource),
        summary=f"{_title(resource)}.",
        resource=True,
        output_model=naming.resource_model(resource),
    )


def new_tool(specs: Path, handlers: Path, service: str, tool: str) -> list[Written]:
    """specs/<service>/tools/<tool>.yaml and a stub method in handlers/<service>/__init__.py."""
    _check_name("tool", tool)
    _require_service(specs, service)
    written: list[Written] = []
    _write(specs / service / "tools" / f"{tool}.yaml", _tool_spec(service, tool, stub=True), written)
    written.append(_add_method(handlers / service / "__init__.py", _tool_method(service, tool)))
    return written


def new_resource(specs: Path, handlers: Path, service: str, resource: str) -> list[Written]:
    """specs/<service>/resources/<resource>.yaml and a stub read_<resource> method."""
    _check_name("resource", resource)
    _require_service(specs, service)
    written: list[Written] = []
    text = _render("resource.yaml.jinja", service=service, resource=resource, summary=f"{_title(resource)}.")
    _write(specs / service / "resources" / f"{resource}.yaml", text, written)
    written.append(_add_method(handlers / service / "__init__.py", _resource_method(service, resource)))
    return written


def _require_service(specs: Path, service: str) -> None:
    if not (specs / service / "service.yaml").is_file():
        known = sorted(p.parent.name for p in specs.glob("*/service.yaml"))
        raise ScaffoldError(f"no service {service!r} in {specs}; known: {', '.join(known) or 'none'}")


def _add_method(module: Path, method: str) -> Written:
    """Insert the stub above the scaffold's marker line; without the marker, say what to paste where."""
    text = module.read_text(encoding="utf-8") if module.is_file() else ""
    if MARKER not in text:
        return Written(module, f"add this method to the handler class in {module}:\n{method}")
    module.write_text(text.replace(MARKER, method + MARKER, 1), encoding="utf-8")
    return Written(module, "stub method added")
