"""Readable names: tools from operationIds (or from the method and path), properties from wire names.

A tool's name is what an LLM reads first (fastmcp #420: `listPetsV2_0_GET_pets__petId_` helps no one), so
it is snake_case words: the operationId's, or a verb for the method and the path's nouns (`GET
/pets/{petId}` -> `get_pet`, `GET /pets` -> `list_pets`), at most 64 characters, unique in the project.
"""

from __future__ import annotations

import keyword
import re

from codegen import naming

IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
PARAM = re.compile(r"^\{[^}]+\}$")
RESERVED = frozenset({"settings", "store", "create"}) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)
"""Names a handler method cannot take: Python keywords and the adapter's own attributes."""
VERBS = {"GET": "get", "POST": "create", "PUT": "replace", "PATCH": "update", "DELETE": "delete"}


def snake(text: str) -> str:
    """`getPetById` -> `get_pet_by_id`, `X-Request-ID` -> `x_request_id`, `page[size]` -> `page_size`."""
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text.encode("ascii", "ignore").decode())
    return re.sub(r"_+", "_", text).strip("_").lower()


def pascal(text: str) -> str:
    """`pet_status` / `pet-status` / `petStatus` -> `PetStatus`."""
    return naming.pascal(snake(text)) or "Value"


def singular(word: str) -> str:
    """A plural noun's singular, by the common English endings (`pets` -> `pet`, `categories` -> `category`)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def common_prefix(paths: list[str]) -> list[str]:
    """The static leading segments every path shares (`/api/v2`), which say nothing about an operation."""
    split = [[s for s in p.split("/") if s] for p in paths]
    prefix: list[str] = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1 or PARAM.match(parts[0]):
            break
        prefix.append(parts[0])
    while prefix and any(not [s for s in parts[len(prefix) :] if not PARAM.match(s)] for parts in split):
        prefix.pop()  # every path keeps a noun of its own to be named by
    return prefix


def from_route(method: str, path: str, prefix: list[str]) -> str:
    """A tool name from the method and the path's nouns: `GET /pets/{petId}/toys` -> `list_pet_toys`."""
    segments = [s for s in path.split("/") if s][len(prefix) :]
    words: list[str] = []
    for i, segment in enumerate(segments):
        if PARAM.match(segment):
            continue
        word = snake(segment)
        if word and i + 1 < len(segments) and PARAM.match(segments[i + 1]):
            word = singular(word)
        if word:
            words.append(word)
    last_is_param = bool(segments) and bool(PARAM.match(segments[-1]))
    verb = VERBS.get(method, method.lower())
    if method == "GET" and not last_is_param and words and words[-1].endswith("s") and not words[-1].endswith("ss"):
        verb = "list"
    elif method == "POST" and words and not last_is_param:
        words[-1] = singular(words[-1])
    return "_".join([verb, *words]) if words else f"{verb}_root"


def tool_name(operation_id: str | None, method: str, path: str, prefix: list[str], taken: set[str]) -> str:
    """The tool's name: snake_case of the operationId, else from the route; short, unique in `taken`."""
    base = snake(operation_id or "")
    if not base or not base[0].isalpha():
        base = from_route(method, path, prefix)
    if base in RESERVED:
        base = f"{base}_operation"
    base = _shorten(base, naming.MAX_TOOL_NAME)
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{_shorten(base, naming.MAX_TOOL_NAME - len(str(n)) - 1)}_{n}"
    taken.add(name)
    return name


def _shorten(name: str, limit: int) -> str:
    if len(name) <= limit:
        return name
    cut = name[:limit]
    return cut.rsplit("_", 1)[0] if "_" in cut[1:] else cut


def property_name(wire: str, where: str, taken: set[str]) -> str:
    """The input property for a parameter called `wire` on the wire, travelling in `where` (path, query,
    header): the name itself when it is a snake_case identifier no other property has; else its snake_case;
    if that is taken too, prefixed with where it travels (`query_id`, `header_x_request_id`); then numbered."""
    if IDENTIFIER.match(wire) and wire not in taken:
        chosen = wire
    else:
        base = snake(wire) or "value"
        if base[0].isdigit():
            base = f"{where}_{base}"
        chosen = base if base not in taken else f"{where}_{base}"
        n = 1
        while chosen in taken:
            n += 1
            chosen = f"{where}_{base}_{n}"
    taken.add(chosen)
    return chosen
