"""Read an OpenAPI 3.0 or 3.1 document (a file or an http(s) URL, YAML or JSON) and bundle its `$ref`s.

Bundling leaves a document whose every `$ref` is local (`#/...`): a schema in another file is hoisted
into `components/schemas` under a name of its own (so it stays one shared type), anything else a
relative-file ref names (a parameter, a response, a path item) is inlined. A ref to another URL is
refused in one line: the importer never fetches more than the document it was given.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from codegen import naming, refs
from codegen.refs import parse_yaml

SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
SCHEMA_HOMES = frozenset({"schemas", "definitions", "$defs"})
SCHEMA_KEYS = frozenset({"type", "properties", "allOf", "oneOf", "anyOf", "enum", "items", "$ref"})
NOT_SCHEMA_KEYS = frozenset({"in", "content", "responses", "get", "put", "post", "delete", "patch", "parameters"})


class ImportFailed(Exception):
    """The document cannot be imported; the message is one line saying why (the CLI exits 2)."""


@dataclass(frozen=True)
class Document:
    """A bundled OpenAPI document: every `$ref` local, external schemas hoisted into components."""

    data: dict[str, Any]
    source: str
    version: str
    """`3.0` or `3.1`."""
    hoisted: tuple[str, ...] = ()
    """Names of the schemas that came from other files."""


def _plain(node: object) -> object:
    """YAML's keys as JSON has them: text (`200:` is "200")."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def parse(text: str, where: str) -> object:
    """JSON or YAML text as data; a parse error is one line naming `where`."""
    try:
        return json.loads(text) if text.lstrip().startswith("{") else _plain(parse_yaml(text))
    except ValueError as exc:
        raise ImportFailed(f"{where}: not JSON or YAML ({str(exc).splitlines()[0]})") from None
    except Exception as exc:  # yaml.YAMLError and its scanner errors
        raise ImportFailed(f"{where}: not JSON or YAML ({str(exc).splitlines()[0]})") from None


def _fetch(url: str) -> str:
    import httpx

    try:
        response = httpx.get(url, follow_redirects=True, timeout=30)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise ImportFailed(f"{url}: cannot fetch it ({exc})") from None
    return response.text


def read(source: str) -> Document:
    """The document at `source` (a path or an http(s) URL), checked to be OpenAPI 3.0/3.1, bundled."""
    remote = source.startswith(("http://", "https://"))
    if remote:
        text = _fetch(source)
        base: Path | None = None
    else:
        path = Path(source)
        if not path.is_file():
            raise ImportFailed(f"{source}: no such file")
        text = path.read_text(encoding="utf-8")
        base = path.resolve()
    data = parse(text, source)
    if not isinstance(data, dict):
        raise ImportFailed(f"{source}: not an OpenAPI document (expected a mapping at the top)")
    if "swagger" in data:
        raise ImportFailed(f"{source}: Swagger {data['swagger']} is not OpenAPI 3; convert it to OpenAPI 3 first")
    version = str(data.get("openapi", ""))
    if not re.match(r"^3\.[01](\.|$)", version):
        raise ImportFailed(f"{source}: `openapi: {version or '?'}` is not OpenAPI 3.0 or 3.1")
    if not isinstance(data.get("paths") or {}, dict):
        raise ImportFailed(f"{source}: `paths` is not a mapping")
    bundler = _Bundler(data, base, source)
    bundled = bundler.bundle()
    return Document(bundled, source, version[:3], tuple(bundler.hoisted.values()))


def resolve(document: dict[str, Any], node: object) -> object:
    """A schema, parameter, body, response, header or example with its (chain of) local `$ref`s followed,
    the ref's own siblings kept over the target's."""
    seen: set[str] = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"] not in seen:
        seen.add(node["$ref"])
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        target = walk_pointer(document, node["$ref"].partition("#")[2], node["$ref"])
        node = {**target, **siblings} if isinstance(target, dict) else target
    return node


def walk_pointer(doc: object, fragment: str, where: str) -> object:
    """The node at JSON pointer `fragment` of `doc` (codegen.refs' reading); ImportFailed when it is not there."""
    try:
        return refs.walk_pointer(doc, fragment, where)
    except refs.RefError as exc:
        raise ImportFailed(f"{where}: {exc}") from None


def _escape(key: str) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _looks_like_schema(node: object) -> bool:
    return isinstance(node, dict) and bool(SCHEMA_KEYS & node.keys()) and not (NOT_SCHEMA_KEYS & node.keys())


class _Bundler:
    """Walks the root document, following refs into other files (each read once)."""

    def __init__(self, root: dict[str, Any], base: Path | None, source: str) -> None:
        self.root = copy.deepcopy(root)
        self.base = base
        self.source = source
        self.files: dict[Path, object] = {}
        self.hoisted: dict[tuple[Path, str], str] = {}
        self.schemas: dict[str, Any] = {}

    def bundle(self) -> dict[str, Any]:
        walked = self._walk(self.root, self.base, "#", ())
        if not isinstance(walked, dict):
            raise ImportFailed(f"{self.source}: not an OpenAPI document (its top-level $ref is not a mapping)")
        if self.schemas:
            components = walked.setdefault("components", {})
            own = components.setdefault("schemas", {})
            own.update(self.schemas)
        return walked

    def _load(self, path: Path, where: str) -> object:
        if path not in self.files:
            if not path.is_file():
                raise ImportFailed(f"{where}: $ref file {path} not found")
            self.files[path] = parse(path.read_text(encoding="utf-8"), str(path))
        return self.files[path]

    def _walk(self, node: object, file: Path | None, where: str, stack: tuple[tuple[Path, str], ...]) -> object:
        if isinstance(node, list):
            return [self._walk(v, file, f"{where}/{i}", stack) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._ref(node, ref, file, where, stack)
        return {k: self._walk(v, file, f"{where}/{_escape(k)}", stack) for k, v in node.items()}

    def _ref(
        self, node: dict[str, Any], ref: str, file: Path | None, where: str, stack: tuple[tuple[Path, str], ...]
    ) -> object:
        file_part, _, fragment = ref.partition("#")
        if SCHEME.match(file_part) or (file_part and file is None):
            raise ImportFailed(
                f"{self.source}: remote $ref {ref!r} at {where} is refused: the importer reads no other URL;"
                " download the referenced documents beside it and import the file"
            )
        siblings = {k: self._walk(v, file, f"{where}/{k}", stack) for k, v in node.items() if k != "$ref"}
        if not file_part and file == self.base:
            return {"$ref": ref, **siblings}  # local to the root: kept as it is
        assert file is not None
        target_file = (file.parent / unquote(file_part)).resolve() if file_part else file
        key = (target_file, fragment)
        target = walk_pointer(self._load(target_file, where), fragment, f"{where} ({ref})")
        segments = [s for s in fragment.split("/") if s]
        home = segments[-2] if len(segments) >= 2 else ""
        if home in SCHEMA_HOMES or (not segments and _looks_like_schema(target)):
            return {"$ref": f"#/components/schemas/{self._hoist(key, target, segments)}", **siblings}
        if key in stack:
            raise ImportFailed(f"{self.source}: recursive $ref {ref!r} at {where} outside components/schemas")
        inlined = self._walk(copy.deepcopy(target), target_file, where, (*stack, key))
        return {**inlined, **siblings} if isinstance(inlined, dict) else inlined

    def _hoist(self, key: tuple[Path, str], target: object, segments: list[str]) -> str:
        if key in self.hoisted:
            return self.hoisted[key]
        wanted = unquote(segments[-1]) if segments else naming.pascal(re.sub(r"[^A-Za-z0-9]+", "_", key[0].stem))
        own = (self.root.get("components") or {}).get("schemas") or {}
        name, n = wanted, 1
        while name in own or name in self.schemas:
            n += 1
            name = f"{wanted}{n}"
        self.hoisted[key] = name
        self.schemas[name] = None  # reserved before the walk: a recursive schema finds its own name
        self.schemas[name] = self._walk(copy.deepcopy(target), key[0], f"{key[0].name}#{key[1]}", ())
        return name
