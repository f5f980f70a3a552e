"""Spec resources as fastmcp resources (a URI with parameters is a template), read through the pipeline."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import TypedDict

from fastmcp.resources import Resource, ResourceResult, ResourceTemplate

from kumitate.bindings import ResourceBinding
from kumitate.runtime import Runtime
from kumitate.transports.mcp.cache import hinted
from kumitate.transports.mcp.request import current_request
from kumitate.transports.mcp.results import CatalogueError


def _resource_reader(
    runtime: Runtime, binding: ResourceBinding
) -> Callable[..., Awaitable[str | bytes | ResourceResult]]:
    async def read(**params: str) -> str | bytes | ResourceResult:
        outcome = await runtime.pipeline.read_resource(binding, params, current_request())
        if not outcome.ok:
            uri = binding.uri
            for name, value in params.items():
                uri = uri.replace(f"{{{name}}}", value)
            raise CatalogueError(outcome, uri=uri)
        if isinstance(outcome.body, bytes):
            text = binding.mime_type.startswith("text/")
            return hinted(outcome.body.decode("utf-8") if text else outcome.body, binding)
        return hinted(json.dumps(outcome.body, ensure_ascii=False), binding)

    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, annotation=str) for p in binding.params]
    )
    read.__annotations__ = {**{p: str for p in binding.params}, "return": str | bytes | ResourceResult}
    read.__name__ = binding.name
    return read


class _Listing(TypedDict):
    name: str
    description: str
    mime_type: str


def _listing(binding: ResourceBinding) -> _Listing:
    """What resources/list and resources/templates/list say of a resource besides its URI."""
    return {"name": binding.name, "description": binding.description, "mime_type": binding.mime_type}


def resource_template_component(runtime: Runtime, binding: ResourceBinding) -> ResourceTemplate:
    """A resource whose URI has parameters (chart://{chart_id})."""
    reader = _resource_reader(runtime, binding)
    return ResourceTemplate.from_function(reader, uri_template=binding.uri, **_listing(binding))


def resource_component(runtime: Runtime, binding: ResourceBinding) -> Resource:
    """A resource at a fixed URI."""
    return Resource.from_function(_resource_reader(runtime, binding), uri=binding.uri, **_listing(binding))


def versions_resource(runtime: Runtime, services: list[str]) -> Resource:
    """`kumitate://versions`: the server and policy version of each service served."""

    def versions() -> str:
        return json.dumps(runtime.versions(services), ensure_ascii=False)

    return Resource.from_function(
        versions,
        uri="kumitate://versions",
        name="versions",
        description="Server and policy version of each service.",
        mime_type="application/json",
    )
