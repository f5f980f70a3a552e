"""`$ref` resolution confined to the repository.

Spec schemas may reference `types/*.json` by relative path and `#/...` pointers.
Anything with a URI scheme (http:, file:, urn: ...) or a path that escapes the
spec root is rejected, so a spec can never pull schema from the network.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias, TypeVar
from urllib.parse import unquote

import yaml


class RefError(Exception):
    """A `$ref` that is remote, escapes the repository, or points nowhere."""

    def __init__(self, message: str, pointer: str) -> None:
        super().__init__(message)
        self.pointer = pointer


JsonValue: TypeAlias = "Mapping[str, JsonValue] | Sequence[JsonValue] | str | int | float | bool | None"
"""JSON data as codegen reads it: a spec document's part, a JSON Schema (an object or a boolean), an example's
input or output, a response body. Read-only (Mapping, Sequence), so a dict or list of any JSON values is one;
a reader narrows it with isinstance where it steps in. What a YAML file holds before it is checked is `object`
(a YAML timestamp is a date), and a walk that gives back the shape it was given takes `JsonT`."""

JsonT = TypeVar("JsonT", dict[str, Any], list[Any], object)
"""A JSON node that a walk gives back in the same shape: an object for an object, an array for an array,
anything else as it was."""

_DOC_CACHE: dict[Path, object] = {}
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CoreSchemaLoader(_SAFE_LOADER):  # type: ignore[valid-type,misc]
    """PyYAML's safe loader reading plain scalars by YAML 1.2's core schema, as OpenAPI (3.0 and 3.1) and every
    JavaScript tool that reads it do: `NO`, `yes`, `on` and `off` stay text (PyYAML's YAML 1.1 reads Norway's
    country code as `false`), `1:30` is text, not 90, `010` is ten, and an unquoted `2024-01-01` stays the text
    it is. libyaml's loader where PyYAML has it (about 8x faster than the pure-Python one on a spec tree);
    PyYAML resolves tags in Python either way, so the table below applies to both."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012


_CORE_SCALARS = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
)
for _tag, _pattern, _first in _CORE_SCALARS:
    _CoreSchemaLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
for _first, _resolvers in _SAFE_LOADER.yaml_implicit_resolvers.items():  # merge keys (`<<`) and the rest as is
    for _tag, _regexp in _resolvers:
        if _tag.rsplit(":", 1)[-1] not in {"bool", "int", "float", "null", "timestamp"}:
            _CoreSchemaLoader.add_implicit_resolver(_tag, _regexp, [_first])


def _core_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """YAML 1.2's integers: decimal (a leading zero too), `0o` octal, `0x` hex."""
    text = str(loader.construct_scalar(node))
    base = {"0o": 8, "0x": 16}.get(text[:2], 10)
    return int(text[2:] if base != 10 else text, base)


_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", _core_int)
_YAML_LOADER = _CoreSchemaLoader


class YamlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper quoting every string that YAML 1.1 or YAML 1.2's core schema would read as
    something else: `"00926"` and `"1e3"` are text to PyYAML's YAML 1.1 but numbers to `parse_yaml`, `"NO"`
    the other way round; written plain, either would come back as another value."""


for _tag, _pattern, _first in _CORE_SCALARS:
    YamlDumper.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def dump_yaml(doc: object, dumper: type[YamlDumper] = YamlDumper) -> str:
    """YAML as a person writes it (keys in the order given, block style, Unicode as is) that `parse_yaml`
    and any YAML 1.1 reader read back as `doc`."""
    return yaml.dump(doc, Dumper=dumper, sort_keys=False, allow_unicode=True, width=120)


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def parse_yaml(text: str) -> object:
    """`yaml.safe_load` by YAML 1.2's core schema (`_CoreSchemaLoader`): JSON data, whatever the YAML writes."""
    return yaml.load(text, Loader=_YAML_LOADER)  # a safe loader: CSafeLoader or SafeLoader


def load_document(path: Path) -> object:
    """Parse a YAML or JSON file once per process."""
    path = path.resolve()
    if path not in _DOC_CACHE:
        text = path.read_text(encoding="utf-8")
        _DOC_CACHE[path] = json.loads(text) if path.suffix == ".json" else parse_yaml(text)
    return _DOC_CACHE[path]


def clear_cache() -> None:
    """Forget the documents read so far (for a caller, such as a test, that rewrites spec files)."""
    _DOC_CACHE.clear()


def walk_pointer(doc: object, fragment: str, where: str) -> object:
    """The node at JSON pointer `fragment` (`/a/b~1c`, percent-decoded) of `doc`; RefError naming `where`
    when it is not there."""
    if not fragment or fragment == "/":
        return doc
    node = doc
    for raw in fragment.lstrip("/").split("/"):
        token = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise RefError(f"$ref target #{fragment} does not exist", where)
    return node


def split_ref(ref: str, base_file: Path, root: Path, where: str) -> tuple[Path, str]:
    """Resolve `ref` (relative to `base_file`) to (file, fragment), local only."""
    if _SCHEME.match(ref.split("#", 1)[0]):
        raise RefError(f"remote $ref {ref!r} is not allowed: refs must stay inside the repository", where)
    file_part, _, fragment = ref.partition("#")
    target = base_file if not file_part else (base_file.parent / file_part).resolve()
    try:
        target.relative_to(root.resolve())
    except ValueError:
        raise RefError(f"$ref {ref!r} leaves the spec tree", where) from None
    if not target.is_file():
        raise RefError(f"$ref {ref!r}: file {file_part} not found", where)
    return target, fragment


def resolve(target_file: Path, fragment: str, root: Path) -> object:
    """The dereferenced schema at `fragment` of `target_file` (a pair `on_ref` observed)."""
    target = walk_pointer(load_document(target_file), fragment, "")
    return dereference(copy.deepcopy(target), target_file, root)


def dereference(
    schema: object,
    base_file: Path,
    root: Path,
    where: str = "",
    on_ref: Callable[[Path, str], None] | None = None,
    _stack: tuple[tuple[Path, str], ...] = (),
) -> object:
    """Return `schema` with every `$ref` inlined (sibling keywords are kept).

    Recursive schemas are refused: tool schemas are shown to LLMs and should be
    flat enough to read. `on_ref` observes each (file, fragment) followed.
    """
    if isinstance(schema, list):
        return [dereference(v, base_file, root, f"{where}/{i}", on_ref, _stack) for i, v in enumerate(schema)]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema and isinstance(schema["$ref"], str):
        target_file, fragment = split_ref(schema["$ref"], base_file, root, f"{where}/$ref")
        key = (target_file, fragment)
        if key in _stack:
            raise RefError(f"recursive $ref {schema['$ref']!r}", f"{where}/$ref")
        if on_ref:
            on_ref(target_file, fragment)
        target = walk_pointer(load_document(target_file), fragment, f"{where}/$ref")
        resolved = dereference(copy.deepcopy(target), target_file, root, where, on_ref, (*_stack, key))
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if siblings and isinstance(resolved, dict):
            merged = dict(resolved)
            merged.update(_dereference_keywords(siblings, base_file, root, where, on_ref, _stack))
            return merged
        return resolved
    return _dereference_keywords(schema, base_file, root, where, on_ref, _stack)


def _dereference_keywords(
    schema: dict[str, object],
    base_file: Path,
    root: Path,
    where: str,
    on_ref: Callable[[Path, str], None] | None,
    _stack: tuple[tuple[Path, str], ...],
) -> dict[str, object]:
    """The keywords of a schema without a `$ref` (or a `$ref`'s siblings), each dereferenced."""
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key in ("$defs", "definitions", "$comment"):
            continue  # uses are inlined; maintainer comments are not for clients (nor their token budget)
        out[key] = dereference(value, base_file, root, f"{where}/{key}", on_ref, _stack)
    return out
