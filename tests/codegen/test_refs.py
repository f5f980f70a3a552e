"""codegen/refs.py: `$ref` resolution confined to the spec tree."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from codegen import refs


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """specs/ with types/a.json (refs inside itself and into b.json) and a tool file."""
    refs.clear_cache()
    specs = tmp_path.resolve() / "specs"
    (specs / "svc" / "types").mkdir(parents=True)
    (specs / "svc" / "tools").mkdir()
    a = {
        "$defs": {
            "Name": {"type": "string", "minLength": 1},
            "Person": {
                "type": "object",
                "properties": {"name": {"$ref": "#/$defs/Name"}, "pet": {"$ref": "b.json#/$defs/Pet"}},
            },
            "Loop": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Loop"}}},
            "PingA": {"$ref": "#/$defs/PingB"},
            "PingB": {"anyOf": [{"$ref": "#/$defs/PingA"}, {"type": "null"}]},
            "a/b": {"type": "integer"},
            "With Space": {"type": "boolean"},
            "Remote": {"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}},
        }
    }
    b = {"$defs": {"Pet": {"type": "object", "properties": {"kind": {"enum": ["cat", "dog"]}}}}}
    (specs / "svc" / "types" / "a.json").write_text(json.dumps(a), encoding="utf-8")
    (specs / "svc" / "types" / "b.json").write_text(json.dumps(b), encoding="utf-8")
    (specs / "svc" / "tools" / "t.yaml").write_text("name: t\n", encoding="utf-8")
    (specs.parent / "outside.json").write_text('{"type": "string"}', encoding="utf-8")
    return specs


def _tool(root: Path) -> Path:
    return root / "svc" / "tools" / "t.yaml"


def _deref(root: Path, schema: Any, where: str = "/input") -> Any:
    return refs.dereference(schema, _tool(root), root, where)


def test_relative_refs_resolve_and_are_inlined(root: Path) -> None:
    out = _deref(root, {"$ref": "../types/a.json#/$defs/Person"})
    assert out == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "pet": {"type": "object", "properties": {"kind": {"enum": ["cat", "dog"]}}},
        },
    }
    assert "$ref" not in json.dumps(out)


def test_nested_refs_inside_an_inline_schema(root: Path) -> None:
    schema = {"type": "object", "properties": {"who": {"$ref": "../types/a.json#/$defs/Name"}}, "required": ["who"]}
    assert _deref(root, schema) == {
        "type": "object",
        "properties": {"who": {"type": "string", "minLength": 1}},
        "required": ["who"],
    }


def test_sibling_keywords_are_kept_and_win(root: Path) -> None:
    schema = {"$ref": "../types/a.json#/$defs/Name", "description": "Who to greet.", "minLength": 3}
    assert _deref(root, schema) == {"type": "string", "minLength": 3, "description": "Who to greet."}


def test_local_fragment_ref_in_the_same_file(root: Path) -> None:
    types = root / "svc" / "types" / "a.json"
    assert refs.dereference({"$ref": "#/$defs/Name"}, types, root) == {"type": "string", "minLength": 1}


def test_pointer_escapes(root: Path) -> None:
    assert _deref(root, {"$ref": "../types/a.json#/$defs/a~1b"}) == {"type": "integer"}
    assert _deref(root, {"$ref": "../types/a.json#/$defs/With%20Space"}) == {"type": "boolean"}


def test_whole_document_ref_drops_defs(root: Path) -> None:
    assert _deref(root, {"$ref": "../types/b.json"}) == {}
    assert _deref(root, {"type": "object", "$defs": {"X": {}}}) == {"type": "object"}


def test_source_documents_are_not_mutated(root: Path) -> None:
    doc = refs.load_document(root / "svc" / "types" / "a.json")
    before = copy.deepcopy(doc)
    out = _deref(root, {"$ref": "../types/a.json#/$defs/Person", "title": "P"})
    out["properties"]["name"]["minLength"] = 99
    assert refs.load_document(root / "svc" / "types" / "a.json") == before


def test_on_ref_observes_every_followed_ref(root: Path) -> None:
    seen: list[tuple[str, str]] = []
    refs.dereference(
        {"$ref": "../types/a.json#/$defs/Person"}, _tool(root), root, on_ref=lambda f, frag: seen.append((f.name, frag))
    )
    assert seen == [("a.json", "/$defs/Person"), ("a.json", "/$defs/Name"), ("b.json", "/$defs/Pet")]


@pytest.mark.parametrize("name", ["Loop", "PingA"])
def test_recursive_refs_are_refused(root: Path, name: str) -> None:
    with pytest.raises(refs.RefError, match="recursive") as info:
        _deref(root, {"$ref": f"../types/a.json#/$defs/{name}"})
    assert info.value.pointer.startswith("/input") and info.value.pointer.endswith("/$ref")


def test_recursive_ref_pointer_names_the_cycle(root: Path) -> None:
    with pytest.raises(refs.RefError) as info:
        _deref(root, {"$ref": "../types/a.json#/$defs/Loop"})
    assert info.value.pointer == "/input/properties/next/$ref"


def test_a_ref_used_twice_is_not_recursion(root: Path) -> None:
    schema = {
        "properties": {"a": {"$ref": "../types/a.json#/$defs/Name"}, "b": {"$ref": "../types/a.json#/$defs/Name"}}
    }
    out = _deref(root, schema)
    assert out["properties"]["a"] == out["properties"]["b"] == {"type": "string", "minLength": 1}


@pytest.mark.parametrize(
    "ref",
    [
        "https://example.com/schemas/person.json",
        "http://example.com/p.json#/$defs/P",
        "file:///etc/passwd",
        "urn:example:person",
    ],
)
def test_remote_refs_are_refused_with_pointer(root: Path, ref: str) -> None:
    schema = {"type": "object", "properties": {"p": {"$ref": ref}}}
    with pytest.raises(refs.RefError, match="remote \\$ref") as info:
        _deref(root, schema)
    assert info.value.pointer == "/input/properties/p/$ref"


def test_remote_ref_inside_a_referenced_file_is_refused(root: Path) -> None:
    with pytest.raises(refs.RefError, match="remote") as info:
        _deref(root, {"$ref": "../types/a.json#/$defs/Remote"}, where="/output")
    assert info.value.pointer == "/output/properties/x/$ref"


@pytest.mark.parametrize("ref", ["../../../outside.json", "../../../outside.json#/type"])
def test_refs_escaping_the_tree_are_refused(root: Path, ref: str) -> None:
    assert (root.parent / "outside.json").is_file()  # it exists, and is still refused
    with pytest.raises(refs.RefError, match="leaves the spec tree") as info:
        _deref(root, {"$ref": ref})
    assert info.value.pointer == "/input/$ref"


def test_absolute_path_escaping_the_tree_is_refused(root: Path) -> None:
    with pytest.raises(refs.RefError, match="leaves the spec tree"):
        _deref(root, {"$ref": str(root.parent / "outside.json")})


@pytest.mark.parametrize(
    ("ref", "message"),
    [("../types/missing.json", "not found"), ("../types/a.json#/$defs/Nobody", "does not exist")],
)
def test_dangling_refs_are_refused(root: Path, ref: str, message: str) -> None:
    with pytest.raises(refs.RefError, match=message) as info:
        _deref(root, {"allOf": [{"$ref": ref}]})
    assert info.value.pointer == "/input/allOf/0/$ref"


def test_split_ref(root: Path) -> None:
    target, fragment = refs.split_ref("../types/a.json#/$defs/Name", _tool(root), root, "")
    assert target == (root / "svc" / "types" / "a.json").resolve() and fragment == "/$defs/Name"
    assert refs.split_ref("#/x", _tool(root), root, "") == (_tool(root), "/x")


def test_load_document_caches_until_cleared(root: Path) -> None:
    path = root / "svc" / "types" / "b.json"
    first = refs.load_document(path)
    path.write_text('{"changed": true}', encoding="utf-8")
    assert refs.load_document(path) is first
    refs.clear_cache()
    assert refs.load_document(path) == {"changed": True}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("NO", "NO"),  # Norway, as OpenAPI (YAML 1.2) and Prism read it; PyYAML's YAML 1.1 reads False
        ("yes", "yes"),
        ("off", "off"),
        ("true", True),
        ("FALSE", False),
        ("010", 10),
        ("0o17", 15),
        ("0x1f", 31),
        ("1:30", "1:30"),
        ("1_000", "1_000"),
        ("2024-01-01", "2024-01-01"),
        ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
        ("-1.5e3", -1500.0),
        ("~", None),
        ("", None),
    ],
)
def test_yaml_plain_scalars_are_read_by_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    assert refs.parse_yaml(f"v: {text}\n") == {"v": value}


def test_yaml_keeps_merge_keys_and_explicit_tags() -> None:
    doc = refs.parse_yaml("base: &b {a: 1}\nchild: {<<: *b, c: !!int '2'}\n")
    assert doc == {"base": {"a": 1}, "child": {"a": 1, "c": 2}}


def test_yaml_written_by_dump_yaml_reads_back_the_same_by_either_yaml_version() -> None:
    import yaml

    doc = {"zip": "00926", "exp": "1e3", "country": "NO", "on": "on", "octal": "0o17", "n": 10, "flag": False}
    text = refs.dump_yaml(doc)
    assert refs.parse_yaml(text) == doc
    assert yaml.safe_load(text) == doc
