"""Developer commands of the `kumitate` CLI: init, new, import, generate, lint, tools, call, diff.

Each imports what it needs when it runs, so `kumitate serve` and `kumitate mcp --stdio` never
load the generator (datamodel-code-generator, ruff) or an HTTP client they do not use.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codegen.scaffold import Written
    from kumitate.bindings import ToolBinding
    from kumitate.cliprogress import Bar

EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
CODEGEN_MODULES = frozenset({"datamodel_code_generator", "jinja2", "jsonschema", "referencing", "mypy", "ruff"})
"""What the `codegen` extra installs and the runtime does without (pyproject.toml)."""


def _needs_codegen(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A generator command run where only the runtime is installed says what to install, not a traceback."""

    def checked(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in CODEGEN_MODULES:
                raise
            print(
                f"kumitate {args.command}: the generator is not installed (no module {exc.name!r}). Install it"
                " with kumitate's codegen extra: pip install 'kumitate[codegen]' (in a project made by"
                " `kumitate init`: make venv, which installs its dev extra).",
                file=sys.stderr,
            )
            return EXIT_USAGE

    return checked


class Subcommands(Protocol):
    """What `add_parsers` uses of the `kumitate` parser's subcommands (what `add_subparsers()` returned)."""

    def add_parser(
        self, name: str, *, help: str | None = ..., description: str | None = ...
    ) -> argparse.ArgumentParser:
        """A new subcommand's own parser."""
        ...


def add_parsers(sub: Subcommands) -> None:
    """Add the project subcommands (generate, lint, new, diff, ...) to the `kumitate` argument parser."""
    generate = sub.add_parser("generate", help="specs/ -> generated/ (models, bindings, OpenAPI, docs)")
    generate.add_argument("--check", action="store_true", help="list stale or orphan generated files; write nothing")
    generate.set_defaults(run=_needs_codegen(_generate))

    lint = sub.add_parser("lint", help="check the specs (schema, catalogue, annotations) and their agent readiness")
    lint.set_defaults(run=_needs_codegen(_lint))

    tools = sub.add_parser("tools", help="list tools with their lockfile hashes; with --url, compare a live server")
    tools.add_argument("--url", help="a running server's base URL, e.g. http://127.0.0.1:8000 (MCP tools/list)")
    tools.add_argument("--token", help="bearer token for --url")
    tools.set_defaults(run=_needs_codegen(_tools))

    call = sub.add_parser("call", help="call one tool and print its result (or the catalogue error)")
    call.add_argument("service", help="the service, as in specs/<service>/")
    call.add_argument("tool", help="the tool's name")
    call.add_argument("--json", default="{}", help="the arguments as a JSON object (or @file.json)")
    call.add_argument("--url", help="call a running server at this base URL instead of in process")
    call.add_argument("--transport", choices=("http", "mcp"), default="http", help="with --url: HTTP /v1 or MCP")
    call.add_argument("--token", help="bearer token for --url")
    call.add_argument("--idempotency-key", help="retry-safe key for tools that declare idempotency")
    call.set_defaults(run=_call)

    init = sub.add_parser("init", help="start a new project in DIR: one service, one tool, tests, Makefile, CI")
    init.add_argument("dir", type=Path, help="the new project's directory (absent or empty)")
    init.add_argument("--service", default="hello", help="the first service's name (default: hello)")
    init.add_argument("--tool", default="greet", help="the first tool's name (default: greet)")
    init.add_argument(
        "--kumitate",
        default=None,
        help="the kumitate the project depends on: a wheel or directory path, or a requirement"
        " (default: this kumitate, as installed: its version, or the wheel/directory/commit it came from)",
    )
    init.set_defaults(run=_needs_codegen(_init))

    new = sub.add_parser("new", help="add a service, a tool or a resource to this project (spec + handler stub)")
    kinds = new.add_subparsers(dest="kind", required=True, help="service, tool or resource")
    service = kinds.add_parser("service", help="specs/NAME/ and handlers/NAME/ with one stub tool")
    service.add_argument("name", help="the new service's name (snake_case)")
    for kind in ("tool", "resource"):
        parser = kinds.add_parser(
            kind, help=f"a {kind} spec in SERVICE and a handler stub that answers NOT_IMPLEMENTED"
        )
        parser.add_argument("service", help="an existing service of this project")
        parser.add_argument("name", help=f"the new {kind}'s name (snake_case)")
    new.set_defaults(run=_needs_codegen(_new))

    imports = sub.add_parser("import", help="write a service from another API's description (OpenAPI 3.0/3.1)")
    formats = imports.add_subparsers(dest="format", required=True, help="the description's format")
    openapi = formats.add_parser(
        "openapi",
        help="one tool per operation of an OpenAPI 3.0/3.1 document, with IMPORT-REPORT.md (docs/importing-an-api.md)",
    )
    openapi.add_argument("document", metavar="DOC", help="the document: a file or an http(s) URL, YAML or JSON")
    openapi.add_argument("--service", required=True, help="the new service's name (snake_case)")
    openapi.add_argument(
        "--forward", metavar="BASE_URL", default=None, help="make the handlers a facade that forwards every call there"
    )
    openapi.add_argument(
        "--base-path",
        metavar="PREFIX",
        default=None,
        help="a prefix of every imported route (default: none, the document's own paths)",
    )
    openapi.set_defaults(run=_needs_codegen(_import))

    diff = sub.add_parser(
        "diff",
        help="review spec changes between two git refs or directories (breaking / non-breaking / info)",
        description="Review the spec changes between two git refs or directories (codegen/review).",
    )
    diff.add_argument("base", metavar="BASE", help="git ref or directory (holding specs/, or a specs dir)")
    diff.add_argument(
        "head",
        metavar="HEAD",
        nargs="?",
        default=None,
        help="git ref or directory (default: the working tree when its specs/ differ from HEAD, else HEAD)",
    )
    diff.add_argument("--repo", type=Path, default=None, help="the git repository for refs (default: .)")
    diff.add_argument(
        "--format", choices=("markdown", "json"), default="markdown", help="report format (default: markdown)"
    )
    diff.add_argument("--output", "-o", type=Path, default=None, help="write the report here instead of stdout")
    diff.add_argument(
        "--exceptions", type=Path, default=None, help="exceptions file (default: HEAD's specs/review-exceptions.yaml)"
    )
    diff.set_defaults(run=_needs_codegen(_diff))


def _diff(args: argparse.Namespace) -> int:
    from codegen.review.cli import run

    return run(args.base, args.head, args.repo, args.format, args.output, args.exceptions)


def _init(args: argparse.Namespace) -> int:
    from codegen import scaffold

    make = partial(scaffold.init_project, args.dir, args.service, args.tool, args.kumitate)
    status = _scaffold(make, args.dir / "specs", args.dir)
    if status == 0:
        print(f"\nnext: cd {args.dir} && make test && make serve")
    return status


def _new(args: argparse.Namespace) -> int:
    from codegen import scaffold
    from kumitate.project import Project

    project = Project.discover()
    if args.kind == "service":
        make = partial(scaffold.new_service, project.specs, project.handlers, args.name)
    elif args.kind == "tool":
        make = partial(scaffold.new_tool, project.specs, project.handlers, args.service, args.name)
    else:
        make = partial(scaffold.new_resource, project.specs, project.handlers, args.service, args.name)
    return _scaffold(make, project.specs, project.out)


def _scaffold(make: Callable[[], list[Written]], specs: Path, out: Path) -> int:
    """Write what `make` scaffolds (EXIT_USAGE and nothing written on a ScaffoldError), say what was written,
    then generate the project's code from `specs` into `out`."""
    from codegen import scaffold
    from codegen.__main__ import main as codegen_main

    try:
        written = make()
    except scaffold.ScaffoldError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    for item in written:
        print(f"{item.note}: {item.path}" if item.note else f"wrote {item.path}")
    return codegen_main(["--specs", str(specs), "--out", str(out)])


def _import(args: argparse.Namespace) -> int:
    """Write the imported service, summarise its report, then generate the project's code."""
    from codegen.__main__ import main as codegen_main
    from codegen.importer import ImportFailed, Options, import_openapi
    from kumitate.project import Project

    project = Project.discover()
    options = Options(args.document, args.service, args.forward, args.base_path)
    try:
        imported = import_openapi(options, project.specs, project.handlers)
    except ImportFailed as exc:
        print(f"kumitate import openapi: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for path in imported.written:
        print(f"wrote {path}")
    if imported.report is not None:
        print("\n".join(imported.report.summary()))
    return codegen_main(["--specs", str(project.specs), "--out", str(project.out)])


def _generate(args: argparse.Namespace) -> int:
    from codegen.__main__ import main as codegen_main

    return codegen_main(["--check"] if args.check else [])


def _lint(args: argparse.Namespace) -> int:
    from codegen import readiness
    from codegen.__main__ import main as codegen_main

    status = codegen_main(["--lint"])
    return status or readiness.main([])


def _tools(args: argparse.Namespace) -> int:
    from codegen import lockfile
    from kumitate.project import Project

    project = Project.discover()
    path = project.generated / "tools.lock.json"
    locked = lockfile.parse(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if args.url is None:
        if not locked:
            print(f"no {path}: run `kumitate generate`", file=sys.stderr)
            return EXIT_USAGE
        for key, entry in sorted(locked.items()):
            print(f"{key}\t{entry['sha256']}")
        return 0
    served = asyncio.run(_served_tools(args.url, args.token))
    by_name = {entry["tool"]: entry for entry in locked.values()}
    drift = 0
    for name, digest in sorted(served.items()):
        expected = by_name.get(name, {}).get("sha256")
        verdict = "ok" if digest == expected else ("not in the lockfile" if expected is None else "DRIFT")
        drift += verdict != "ok"
        print(f"{name}\t{digest}\t{verdict}")
    # a tool is missing only from a service the server serves (it may serve a few, and opt-in ones are off)
    services = {by_name[name]["service"] for name in served if name in by_name}
    for name in sorted(set(by_name) - set(served)):
        missing = by_name[name]["service"] in services
        drift += missing
        print(f"{name}\t-\t{'not served' if missing else 'its service is not served here'}")
    return EXIT_TOOL_ERROR if drift else 0


async def _served_tools(url: str, token: str | None) -> dict[str, str]:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    from codegen.lockfile import served_hash

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with Client(StreamableHttpTransport(f"{url.rstrip('/')}/mcp", headers=headers)) as client:
        tools = await client.list_tools()
    return {t.name: served_hash(t.model_dump(mode="json", by_alias=True, exclude_none=True)) for t in tools}


def _arguments(raw: str) -> dict[str, object]:
    text = Path(raw[1:]).read_text(encoding="utf-8") if raw.startswith("@") else raw
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"--json is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise SystemExit("--json must be a JSON object (the tool's arguments)")
    return value


def _print(body: object) -> None:
    print(json.dumps(body, ensure_ascii=False, indent=2))


def _call(args: argparse.Namespace) -> int:
    arguments = _arguments(args.json)
    from kumitate.cliprogress import progress_bar

    if args.url is None:
        with progress_bar(args.tool) as bar:
            ok, body = asyncio.run(_call_in_process(args.service, args.tool, arguments, args.idempotency_key, bar))
    elif args.transport == "mcp":
        with progress_bar(args.tool) as bar:
            ok, body = asyncio.run(_call_mcp(args.url, args.tool, arguments, args.token, bar))
    else:
        ok, body = _call_http(args.url, args.service, args.tool, arguments, args.token, args.idempotency_key)
    _print(body)
    return 0 if ok else EXIT_TOOL_ERROR


def _binding(service: str, tool: str) -> ToolBinding:
    from kumitate.project import Project, load_generated

    Project.discover().activate()
    _, services = load_generated()
    if service not in services:
        raise SystemExit(f"unknown service {service!r}; known: {', '.join(sorted(services))}")
    for binding in services[service].tools:
        if binding.name == tool:
            return binding
    raise SystemExit(
        f"service {service!r} has no tool {tool!r}; it has {', '.join(t.name for t in services[service].tools)}"
    )


async def _call_in_process(
    service: str, tool: str, arguments: dict[str, object], key: str | None, bar: Bar | None = None
) -> tuple[bool, object]:
    from kumitate.observability import correlation
    from kumitate.pipeline import CallRequest
    from kumitate.runtime import Runtime
    from kumitate.settings import Settings

    binding = _binding(service, tool)
    runtime = Runtime(Settings.from_env(), [service])
    try:
        ids = (correlation.new_id(), correlation.new_id())
        progress = bar.report if bar is not None else None
        request = CallRequest(transport="cli", ids=ids, local=True, idempotency_key=key, progress=progress)
        outcome = await runtime.pipeline.call_tool(binding, arguments, request)
    finally:
        runtime.close()
    return outcome.ok, outcome.body


def _call_http(
    url: str, service: str, tool: str, arguments: dict[str, object], token: str | None, key: str | None
) -> tuple[bool, object]:
    import httpx

    binding = _binding(service, tool)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if key:
        headers["Idempotency-Key"] = key
    response = httpx.request(
        binding.http_method, url.rstrip("/") + binding.http_path, json=arguments, headers=headers, timeout=None
    )
    try:
        body = response.json()
    except ValueError:
        body = {"status": response.status_code, "body": response.text[:2000]}
    return response.is_success, body


async def _call_mcp(
    url: str, tool: str, arguments: dict[str, object], token: str | None, bar: Bar | None = None
) -> tuple[bool, object]:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with Client(StreamableHttpTransport(f"{url.rstrip('/')}/mcp", headers=headers), timeout=None) as client:
        result = await client.call_tool_mcp(tool, arguments, progress_handler=bar.on_progress if bar else None)
    from kumitate.client import mcp_result_body

    body = mcp_result_body(result)
    if body is None:
        body = {"content": [c.model_dump(mode="json", exclude_none=True) for c in result.content]}
    return not result.is_error, body
