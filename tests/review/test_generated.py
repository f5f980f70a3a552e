"""The tool lockfile and the reference docs: deterministic, one line per tool, budgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen import docs, lint, lockfile, specs
from kumitate.policies.deprecation import Deprecation
from tests.conftest import seeded_copy
from tests.review.support import REPO, build


def _tree(tmp: Path) -> specs.SpecTree:
    return specs.load(build(tmp) / "specs")


def test_lockfile_is_reproducible_and_canonical(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    text = lockfile.render(tree)
    assert text == lockfile.render(_tree(tmp_path / "again"))
    entries = lockfile.parse(text)
    assert sorted(entries) == ["demo.lookup", "demo.tag_item"]
    lookup = tree.all_tools()[0]
    assert entries["demo.lookup"]["sha256"] == lockfile.sha256(lockfile.surface(lookup))
    assert lockfile.canonical({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'.encode()
    assert json.loads(text)["format"] == lockfile.FORMAT


def test_lockfile_changes_in_exactly_one_line(tmp_path: Path) -> None:
    before = lockfile.render(_tree(tmp_path / "a"))
    specs_dir = build(tmp_path / "b") / "specs"
    tool = specs_dir / "demo" / "tools" / "tag_item.yaml"
    doc = yaml.safe_load(tool.read_text(encoding="utf-8"))
    doc["description"] += "It returns every tag of the item.\n"
    tool.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    after = lockfile.render(specs.load(specs_dir))
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(changed) == 1 and '"tool": "tag_item"' in changed[0][1]
    old, new = json.loads(changed[0][0].rstrip(",")), json.loads(changed[0][1].rstrip(","))
    assert [k for k in old if old[k] != new[k]] == ["sha256", "description"]


def test_lockfile_hashes_what_tools_list_serves(tmp_path: Path) -> None:
    """Policy-derived surface counts: idempotency adds an argument, a deprecation a description prefix."""
    tree = _tree(tmp_path)
    tag = next(t for t in tree.all_tools() if t.name == "tag_item")
    tag.policy["idempotency"] = False
    before = lockfile.entry(tag)
    tag.policy["idempotency"] = True
    after = lockfile.entry(tag)
    assert [k for k in before if before[k] != after[k]] == ["sha256", "input"]
    assert "idempotency_key" in lockfile.surface(tag)["inputSchema"]["properties"]
    tag.deprecated = Deprecation("2025-01-01", replacement="lookup")
    deprecated = lockfile.entry(tag)
    assert [k for k in after if after[k] != deprecated[k]] == ["sha256", "description"]
    assert lockfile.surface(tag)["description"].startswith("DEPRECATED since 2025-01-01; use lookup instead.")


def test_lockfile_matches_a_live_tools_list(tmp_path: Path, seeded_data_dir: Path) -> None:
    """A client that hashes the entries of a real tools/list (in memory) gets the committed lockfile's hashes."""
    import asyncio

    from fastmcp import Client

    from kumitate.runtime import Runtime
    from kumitate.settings import Settings
    from kumitate.transports.mcp import build_server

    data_dir = seeded_copy(seeded_data_dir, tmp_path / "var")  # no first start's imports to wait for

    async def served() -> list[dict[str, Any]]:
        runtime = Runtime(
            Settings(data_dir=data_dir, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000")
        )
        try:
            async with Client(build_server(runtime)) as client:
                result = await client.list_tools_mcp()
        finally:
            runtime.close()
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in result.tools]

    from generated.registry import SERVICES

    locked = lockfile.parse((REPO / lockfile.PATH).read_text(encoding="utf-8")).values()
    entries = {e["tool"]: e for e in locked if not SERVICES[e["service"]].opt_in}  # served by default
    tools = asyncio.run(served())
    assert sorted(t["name"] for t in tools) == sorted(entries)
    for tool in tools:
        assert lockfile.served_hash(tool) == entries[tool["name"]]["sha256"], tool["name"]
        for part, key in lockfile.PARTS.items():
            assert lockfile.sha256(tool[key])[:12] == entries[tool["name"]][part], (tool["name"], part)


def test_docs_are_reproducible_and_complete(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    pages = docs.render(tree)
    assert pages == docs.render(_tree(tmp_path / "again"))
    assert list(pages) == ["docs/reference/demo.md"]
    page = pages["docs/reference/demo.md"]
    for needle in (
        "# Demo (`demo`) — reference",
        "`tools/list` cost | ~",
        "## `lookup`",
        "### When to use it",
        "| `items[].kind` | string | yes | note or task. | one of `note`, `task` |",
        "| `limit` | integer | no | How many items to return. | minimum: `1`; maximum: `50`; default: `10` |",
        "| `NOT_FOUND` | 404 | no | The referenced object does not exist. |",
        "| `BAD_REQUEST` (any tool) | 400 |",
        "curl -sS -X POST http://127.0.0.1:8000/v1/demo/lookup",
        '-d \'{"query":"milk"}\'',
        '"method": "tools/call"',
        "## Resource `status`",
        '"method": "resources/read"',
        "ceil(ASCII characters / 4)",
    ):
        assert needle in page, needle


def test_token_estimate() -> None:
    assert docs.estimate_tokens("") == 0
    assert docs.estimate_tokens("abcde") == 2
    assert docs.estimate_tokens("千代田区") == 4


def test_budget(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    assert docs.check_budget(tree) == []
    cost = docs.tools_list_tokens(tree.services[0])
    (tree.root / docs.BUDGET_FILE).write_text(f"default: 100000\nservices:\n  demo: {cost - 1}\n", encoding="utf-8")
    problems = docs.check_budget(tree)
    assert [(p.file, p.rule) for p in problems] == [("specs/demo/service.yaml", "KT205")]
    assert f"~{cost} tokens, over the budget of {cost - 1}" in problems[0].message
    (tree.root / docs.BUDGET_FILE).write_text(f"default: {cost}\nservices:\n  demo: -3\n", encoding="utf-8")
    assert [p.pointer for p in docs.check_budget(tree)] == ["/services/demo"]


def test_toolsets_are_linted_costed_and_budgeted(tmp_path: Path) -> None:
    root = _tree(tmp_path).root
    (root / "toolsets.yaml").write_text(
        "toolsets:\n  look:\n    description: Look things up.\n    tools: [demo.lookup]\n"
        "  demo:\n    description: Clashes with the service.\n    tools: [demo, demo.nope, other]\n",
        encoding="utf-8",
    )
    tree = specs.load(root)
    assert sorted((p.pointer, p.rule) for p in lint.lint(tree)) == [
        ("/toolsets/demo", "KT114"),
        ("/toolsets/demo/tools/1", "KT114"),
        ("/toolsets/demo/tools/2", "KT114"),
    ]
    look = next(ts for ts in tree.toolsets if ts.name == "look")
    assert [t.name for t in tree.toolset_tools(look)] == ["lookup"]
    cost = docs.list_tokens(tree.toolset_tools(look))
    assert f"| `/mcp/look` | `lookup` | ~{cost} tokens | 12000 |" in docs.render(tree)["docs/reference/toolsets.md"]
    (root / docs.BUDGET_FILE).write_text(f"default: 100000\ntoolsets:\n  look: {cost - 1}\n", encoding="utf-8")
    problems = docs.check_budget(specs.load(root))
    assert [(p.file, p.pointer, p.rule) for p in problems] == [("specs/toolsets.yaml", "/toolsets/look", "KT205")]


def test_renderers_on_the_repository_specs() -> None:
    tree = specs.load(REPO / "specs")
    if tree.problems:
        pytest.skip(f"the repository's specs are mid-edit: {tree.problems[0]}")
    pages = docs.render(tree)
    assert set(pages) == {f"docs/reference/{s.name}.md" for s in tree.services} | {"docs/reference/toolsets.md"}
    assert docs.render(tree) == pages
    text = lockfile.render(tree)
    assert len(lockfile.parse(text)) == len(tree.all_tools())
    assert len(text.splitlines()) == len(tree.all_tools()) + 6
