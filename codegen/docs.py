"""Reference docs per service (docs/reference/<service>.md), rendered from the spec tree.

For each tool: summary, when to use it (the description), input and output tables, errors
with their HTTP statuses, examples, a curl call and an MCP `tools/call` body; resources
likewise. Each page opens with the estimated token cost of the service's MCP `tools/list`,
which `check_budget` compares with the budget in specs/token-budget.yaml.

Output is deterministic (no dates, no machine-dependent tokenizer), so the drift check can
cover it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from codegen import naming
from codegen.links import next_line
from codegen.refs import parse_yaml
from codegen.specs import (
    GENERIC_ERRORS,
    TOOLSETS_FILE,
    Problem,
    ResourceSpec,
    ServiceSpec,
    SpecTree,
    ToolSpec,
)
from kumitate.policies.idempotency import with_key_argument

BUDGET_FILE = "token-budget.yaml"
"""specs/token-budget.yaml: {default: N, services: {name: N}, toolsets: {name: N}} (tokens of tools/list)."""
DEFAULT_BUDGET = 12_000
BUDGET_RULE = "KT205"
BASE_URL = "http://127.0.0.1:8000"
CONSTRAINT_KEYS = (
    "const",
    "format",
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "default",
)


# --- the MCP tools/list entry and its token cost ---------------------------------------------


def mcp_description(tool: ToolSpec) -> str:
    """The description MCP clients see: deprecation first, the spec's text, then the workflow's next steps."""
    text = "\n".join(part for part in (tool.description.strip(), next_line(tool.links)) if part)
    dep = tool.deprecated
    if dep:
        note = f"DEPRECATED since {dep.since}"
        if dep.sunset:
            note += f", removed after {dep.sunset}"
        if dep.replacement:
            note += f"; use {dep.replacement} instead"
        text = f"{note}.\n\n{text}"
    return text


def mcp_input_schema(tool: ToolSpec) -> dict[str, Any]:
    """The input schema `tools/list` shows: the spec's, with the runtime's `idempotency_key` argument."""
    return with_key_argument(tool.wire_input) if tool.rules.idempotency else tool.wire_input


def tool_list_entry(tool: ToolSpec) -> dict[str, Any]:
    """One entry of the MCP `tools/list` result, as the server builds it from the spec."""
    return {
        "name": tool.name,
        "title": tool.annotations.title or tool.summary.strip(),
        "description": mcp_description(tool),
        "inputSchema": mcp_input_schema(tool),
        "outputSchema": tool.wire_output,
        "annotations": tool.annotations.as_spec(),
    }


def estimate_tokens(text: str) -> int:
    """ceil(ASCII characters / 4) + one token per non-ASCII character.

    The chars/4 rule holds for English and JSON; CJK text costs about one token per character,
    which chars/4 would undercount fourfold. No tokenizer library is used, so the estimate (and
    the generated docs) do not depend on what is installed.
    """
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def list_tokens(tools: list[ToolSpec]) -> int:
    """The estimated tokens of a tools/list made of these tools."""
    entries = [tool_list_entry(t) for t in sorted(tools, key=lambda t: t.name)]
    return estimate_tokens(json.dumps(entries, ensure_ascii=False, separators=(",", ":")))


def tools_list_tokens(svc: ServiceSpec) -> int:
    """The estimated tokens of the service's whole tools/list: what an LLM client pays to see it."""
    return list_tokens(svc.tools)


def tool_tokens(tool: ToolSpec) -> int:
    """The estimated tokens of one tool's tools/list entry."""
    return estimate_tokens(json.dumps(tool_list_entry(tool), ensure_ascii=False, separators=(",", ":")))


def load_budget(tree: SpecTree) -> tuple[dict[str, int], list[Problem]]:
    """Budget per service name ('*' is the default) from specs/token-budget.yaml."""
    path = tree.root / BUDGET_FILE
    budgets: dict[str, int] = {"*": DEFAULT_BUDGET}
    if not path.is_file():
        return budgets, []
    rel = f"specs/{BUDGET_FILE}"
    try:
        doc = parse_yaml(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        return budgets, [Problem(rel, "", BUDGET_RULE, f"cannot parse: {exc}")]
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        return budgets, [Problem(rel, "", BUDGET_RULE, "expected a mapping {default, services}")]
    default = doc.get("default", DEFAULT_BUDGET)
    if isinstance(default, int) and default > 0:
        budgets["*"] = default
    else:
        problems.append(Problem(rel, "/default", BUDGET_RULE, "the default budget must be a positive integer"))
    for group in ("services", "toolsets"):  # toolset names are never service names (lint KT114)
        entries = doc.get(group) or {}
        for name, value in sorted(entries.items() if isinstance(entries, dict) else []):
            if isinstance(value, int) and value > 0:
                budgets[str(name)] = value
            else:
                problems.append(Problem(rel, f"/{group}/{name}", BUDGET_RULE, "a budget must be a positive integer"))
    return budgets, problems


def budget_for(budgets: dict[str, int], service: str) -> int:
    """The token budget of `service`, else the default (`*`) of specs/token-budget.yaml."""
    return budgets.get(service, budgets["*"])


def check_budget(tree: SpecTree) -> list[Problem]:
    """KT205: the tools/list of each service and of each named toolset stays within its token budget."""
    budgets, problems = load_budget(tree)
    groups = [(svc.name, svc.tools, f"specs/{svc.name}/service.yaml", "") for svc in tree.services]
    groups += [
        (ts.name, tree.toolset_tools(ts), f"specs/{TOOLSETS_FILE}", f"/toolsets/{ts.name}") for ts in tree.toolsets
    ]
    for name, tools, file, pointer in groups:
        cost, limit = list_tokens(tools), budget_for(budgets, name)
        if cost > limit:
            heavy = sorted(tools, key=lambda t: (-tool_tokens(t), t.name))[:3]
            top = ", ".join(f"{t.name} ({tool_tokens(t)})" for t in heavy)
            problems.append(
                Problem(
                    file,
                    pointer,
                    BUDGET_RULE,
                    f"tools/list costs ~{cost} tokens, over the budget of {limit} (specs/{BUDGET_FILE});"
                    f" largest tools: {top}",
                )
            )
    return problems


# --- schema tables ---------------------------------------------------------------------------


def _cell(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return " ".join(text.split()).replace("|", "\\|")


def type_label(schema: dict[str, Any]) -> str:
    """The type column of a reference table (`string`, `array of integer`, a union joined by `|`)."""
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return " \\| ".join(type_label({**schema, "type": k}) for k in kinds)
    if kinds == "array":
        items = schema.get("items")
        inner = type_label(items) if isinstance(items, dict) else "any"
        return f"array<{inner}>"
    if isinstance(kinds, str):
        return kinds
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return " \\| ".join(type_label(s) for s in schema[key] if isinstance(s, dict))
    if "enum" in schema:
        return "enum"
    if "const" in schema:
        return "const"
    return "any"


def _constraints(schema: dict[str, Any]) -> str:
    parts = []
    if "enum" in schema:
        parts.append("one of " + ", ".join(f"`{_cell(v)}`" for v in schema["enum"]))
    for key in CONSTRAINT_KEYS:
        if key in schema:
            parts.append(f"{key}: `{_cell(schema[key])}`")
    if schema.get("additionalProperties") is False and "properties" in schema:
        parts.append("no other keys")
    return "; ".join(parts)


def field_rows(schema: dict[str, Any], prefix: str = "", required: bool = True) -> Iterator[tuple[str, ...]]:
    """(path, type, required, description, constraints) for every field, depth first."""
    if prefix:
        desc = schema.get("description") or schema.get("title") or ""
        yield (f"`{prefix}`", type_label(schema), "yes" if required else "no", _cell(desc), _constraints(schema))
    props = schema.get("properties")
    if isinstance(props, dict):
        needed = set(schema.get("required", []))
        for name, sub in props.items():
            if isinstance(sub, dict):
                yield from field_rows(sub, f"{prefix}.{name}" if prefix else name, name in needed)
    items = schema.get("items")
    if isinstance(items, dict) and ("properties" in items or "items" in items):
        yield from field_rows_items(items, f"{prefix}[]")
    for key in ("oneOf", "anyOf"):
        for i, sub in enumerate(schema.get(key) or []):
            if isinstance(sub, dict) and "properties" in sub:
                yield from field_rows(sub, f"{prefix}<{key}[{i}]>", required)


def field_rows_items(items: dict[str, Any], prefix: str) -> Iterator[tuple[str, ...]]:
    """The reference table's rows for the items of an array field, their names under `prefix`."""
    props = items.get("properties")
    if isinstance(props, dict):
        needed = set(items.get("required", []))
        for name, sub in props.items():
            if isinstance(sub, dict):
                yield from field_rows(sub, f"{prefix}.{name}", name in needed)
    nested = items.get("items")
    if isinstance(nested, dict):
        yield from field_rows_items(nested, f"{prefix}[]")


def _table(schema: dict[str, Any] | None) -> list[str]:
    if not schema:
        return ["_No schema._", ""]
    rows = list(field_rows(schema))
    if not rows:
        return [f"_No fields_ ({_cell(type_label(schema))}).", ""]
    lines = ["| Field | Type | Required | Description | Constraints |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _json_block(value: object) -> list[str]:
    return ["```json", json.dumps(value, ensure_ascii=False, indent=2, sort_keys=False), "```", ""]


def _errors(tree: SpecTree, codes: list[str]) -> list[str]:
    lines = ["| Code | HTTP status | Retryable | Meaning |", "|---|---|---|---|"]
    for code in sorted(
        set(codes) | (set(GENERIC_ERRORS) & set(tree.errors)),
        key=lambda c: (tree.errors[c].status if c in tree.errors else 0, c),
    ):
        err = tree.errors.get(code)
        generic = " (any tool)" if code in GENERIC_ERRORS and code not in codes else ""
        if err is None:
            lines.append(f"| `{code}`{generic} | ? | ? | not in specs/errors.yaml |")
        else:
            retry = "yes" if err.retryable else "no"
            lines.append(f"| `{code}`{generic} | {err.status} | {retry} | {_cell(err.description or err.title)} |")
    return [*lines, ""]


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# --- pages -----------------------------------------------------------------------------------


def _flat(tool: ToolSpec) -> str:
    """`; form fields category, region, brewery → filters` for a tool with `http.form_flatten`."""
    parts = []
    for group in tool.form_flatten:
        names = ", ".join(tool.input_schema["properties"][group].get("properties", {}))
        parts.append(f"; form fields {names} → {group}")
    return "".join(parts)


def _tool_section(tree: SpecTree, tool: ToolSpec) -> list[str]:
    ann = ", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in tool.annotations.as_spec().items())
    lines = [f"## `{tool.name}`", "", f"> {_cell(tool.summary)}", ""]
    if tool.deprecated:
        lines += [f"**Deprecated:** {_cell(mcp_description(tool).split(chr(10))[0])}", ""]
    lines += ["### When to use it", "", tool.description.strip(), ""]
    lines += [
        "| | |",
        "|---|---|",
        f"| HTTP | `{tool.http_method} {tool.http_path}` ({', '.join(tool.content_types)}){_flat(tool)} |",
        f"| MCP annotations | {_cell(ann)} |",
        f"| Scopes | {', '.join(f'`{s}`' for s in tool.rules.scopes) or 'none'} |",
        f"| Models | `{_model(tool.name, 'Input')}`, `{_model(tool.name, 'Output')}` |",
        f"| tools/list cost | ~{tool_tokens(tool)} tokens |",
        "",
    ]
    lines += ["### Input", "", *_table(tool.input_schema)]
    lines += ["### Output", "", *_table(tool.output_schema)]
    lines += ["### Errors", "", *_errors(tree, tool.errors)]
    if tool.examples:
        lines += ["### Examples", ""]
        for ex in tool.examples:
            title = f"#### `{ex.name}`" + (f" — {_cell(ex.description)}" if ex.description else "")
            body: dict[str, Any] = {"input": ex.input}
            if ex.error is not None:
                body["error"] = ex.error
            else:
                body["output"] = ex.output
                if ex.match != "exact":
                    body["match"] = ex.match
            lines += [title, "", *_json_block(body)]
    sample = next(
        (ex.input for ex in tool.examples if ex.error is None), tool.examples[0].input if tool.examples else {}
    )
    payload = json.dumps(sample, ensure_ascii=False, separators=(",", ":"))
    lines += [
        "### Call it",
        "",
        "```bash",
        f"curl -sS -X {tool.http_method} {BASE_URL}{tool.http_path} \\",
        '  -H "Authorization: Bearer $KUMITATE_TOKEN" -H "Content-Type: application/json" \\',
        f"  -d {_shell_quote(payload)}",
        "```",
        "",
        *_json_block(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool.name, "arguments": sample}}
        ),
    ]
    return lines


def _model(name: str, kind: str) -> str:
    return naming.input_model(name) if kind == "Input" else naming.output_model(name)


def _resource_section(tree: SpecTree, res: ResourceSpec) -> list[str]:
    lines = [f"## Resource `{res.name}`", "", f"> {_cell(res.summary)}", "", res.description.strip(), ""]
    lines += [
        "| | |",
        "|---|---|",
        f"| URI | `{res.uri}` |",
        f"| Media type | `{res.mime_type}` |",
        f"| HTTP | `GET {res.http_path}` |",
        f"| Scopes | {', '.join(f'`{s}`' for s in res.rules.scopes) or 'none'} |",
        "",
    ]
    if res.output_schema is not None:
        lines += ["### Body", "", *_table(res.output_schema)]
    lines += ["### Errors", "", *_errors(tree, res.errors)]
    lines += [
        "### Read it",
        "",
        "```bash",
        f'curl -sS {BASE_URL}{res.http_path} -H "Authorization: Bearer $KUMITATE_TOKEN"',
        "```",
        "",
        *_json_block({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": res.uri}}),
    ]
    return lines


def render_service(tree: SpecTree, svc: ServiceSpec, budgets: dict[str, int]) -> str:
    """docs/reference/<service>.md: the service's tools and resources as a reader (or an
    LLM) needs them, with its tools/list cost against its budget."""
    tools = sorted(svc.tools, key=lambda t: t.name)
    resources = sorted(svc.resources, key=lambda r: r.name)
    cost, limit = tools_list_tokens(svc), budget_for(budgets, svc.name)
    lines = [
        f"<!-- GENERATED by `python -m codegen` from specs/{svc.name}/ (make generate). DO NOT EDIT. -->",
        "",
        f"# {svc.title} (`{svc.name}`) — reference",
        "",
        svc.description.strip(),
        "",
        "| | |",
        "|---|---|",
        f"| Version | {svc.version} |",
        f"| HTTP base path | `{svc.base_path}` |",
        f"| Tools | {len(tools)} |",
        f"| Resources | {len(resources)} |",
        f"| `tools/list` cost | ~{cost} tokens (budget {limit}) |",
        "",
        "Token cost: the compact JSON of the service's MCP `tools/list` entries (name, title, description,",
        "inputSchema, outputSchema, annotations), estimated as ceil(ASCII characters / 4) plus one token",
        "per non-ASCII character; no tokenizer library is used, so the figure is reproducible.",
        "",
    ]
    if svc.instructions.strip():
        lines += ["## Instructions (MCP)", "", svc.instructions.strip(), ""]
    if tools:
        lines += ["## Tools", ""]
        lines += [f"- [`{t.name}`](#{t.name}) — {_cell(t.summary)}" for t in tools]
        lines.append("")
    if resources:
        lines += ["## Resources", ""]
        lines += [f"- `{r.uri}` — {_cell(r.summary)}" for r in resources]
        lines.append("")
    for tool in tools:
        lines += _tool_section(tree, tool)
    for res in resources:
        lines += _resource_section(tree, res)
    text = "\n".join(lines).rstrip() + "\n"
    return text


def render_toolsets(tree: SpecTree, budgets: dict[str, int]) -> str:
    """docs/reference/toolsets.md: what each MCP endpoint costs a client, toolsets first."""
    lines = [
        "<!-- GENERATED by `python -m codegen` from specs/ (make generate). DO NOT EDIT. -->",
        "",
        "# MCP endpoints and toolsets — reference",
        "",
        "Each MCP endpoint lists only its own tools, so a client that needs one job connects to a smaller",
        f"endpoint. Named toolsets are defined in `specs/{TOOLSETS_FILE}` and served at `/mcp/<toolset>` (and by",
        "`kumitate mcp --stdio --toolset NAME`); the resources of the services they draw on come with them.",
        "Token cost: the compact JSON of the `tools/list` entries, ceil(ASCII characters / 4) plus one token",
        "per non-ASCII character (as in each service's page); budgets are in `specs/token-budget.yaml`.",
        "",
    ]
    if tree.toolsets:
        lines += [
            "## Toolsets",
            "",
            "| Endpoint | Tools | `tools/list` cost | Budget | What it is for |",
            "|---|---|---|---|---|",
        ]
        for ts in tree.toolsets:
            tools = tree.toolset_tools(ts)
            names = ", ".join(f"`{t.name}`" for t in sorted(tools, key=lambda t: t.name))
            cost = list_tokens(tools)
            lines.append(
                f"| `/mcp/{ts.name}` | {names} | ~{cost} tokens | {budget_for(budgets, ts.name)} | {_cell(ts.description)} |"
            )
        lines.append("")
    lines += ["## Services", "", "| Endpoint | Tools | `tools/list` cost | Budget |", "|---|---|---|---|"]
    for svc in sorted(tree.services, key=lambda s: s.name):
        cost = tools_list_tokens(svc)
        lines.append(f"| `/mcp/{svc.name}` | {len(svc.tools)} | ~{cost} tokens | {budget_for(budgets, svc.name)} |")
    served = tree.default_tools()
    lines.append(f"| `/mcp` (every tool) | {len(served)} | ~{list_tokens(served)} tokens | — |")
    lines += ["", *_smaller_bills(tree)]
    return "\n".join(lines) + "\n"


def _smaller_bills(tree: SpecTree) -> list[str]:
    """What `/mcp` costs a caller with a scoped token, and in search mode (kumitate/transports/mcp/listing.py)."""
    from kumitate.transports.mcp.listing import SEARCH_RESULTS, search_listing

    search = estimate_tokens(json.dumps(search_listing(), ensure_ascii=False, separators=(",", ":")))
    served = tree.default_tools()
    every = list_tokens(served)
    lines = [
        "## Smaller bills at `/mcp`",
        "",
        "`/mcp` lists fewer tools in two cases (`python -m bench.mcp_surface` prints each figure from a",
        "real client's listing):",
        "",
        "- **A token from the token table** (`KUMITATE_TOKENS`, `KUMITATE_TOKENS_FILE`) sees only the tools",
        "  its scopes let it call. A caller without a valid token still sees every tool (its call answers",
        "  401 and tells it to log in), and so does a token from the identity provider, which can ask for",
        "  more scopes after a 403 `insufficient_scope` (step-up authorization).",
        "- **Search mode** (`KUMITATE_MCP_TOOL_SEARCH=1`): `tools/list` lists a BM25 `search_tools` and a",
        f"  `call_tool` proxy instead of every tool; a search answers the best {SEARCH_RESULTS} matches with their",
        "  name, description and input schema, from the tools the caller may call. The tools stay callable",
        "  by name. It applies to the endpoint serving every tool (`/mcp`, and `kumitate mcp --stdio` without",
        "  `--service` or `--toolset`).",
        "",
        "| `/mcp` for | Tools listed | `tools/list` cost |",
        "|---|---|---|",
        f"| any caller, before (and a caller without a table token) | {len(served)} | ~{every} tokens |",
    ]
    for svc in sorted((s for s in tree.services if not s.opt_in), key=lambda s: s.name):
        scopes = sorted({scope for tool in svc.tools for scope in tool.rules.scopes})
        if scopes:
            names = ", ".join(f"`{s}`" for s in scopes)
            lines.append(f"| a token with {names} only | {len(svc.tools)} | ~{tools_list_tokens(svc)} tokens |")
    lines.append(f"| search mode | 2 | ~{search} tokens |")
    return lines


def render(tree: SpecTree) -> dict[str, str]:
    """docs/reference/<service>.md for every service, and docs/reference/toolsets.md if there are toolsets."""
    budgets, _ = load_budget(tree)
    pages = {
        f"docs/reference/{svc.name}.md": render_service(tree, svc, budgets)
        for svc in sorted(tree.services, key=lambda s: s.name)
    }
    if tree.toolsets:
        pages["docs/reference/toolsets.md"] = render_toolsets(tree, budgets)
    return pages


def write(tree: SpecTree, out: Path) -> list[Path]:
    """Write the pages under `out` (a repository root); for use before render is wired into emit."""
    written = []
    for rel, text in render(tree).items():
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written
