"""handlers/<service>/ for an imported service: stubs, or a facade that forwards every call upstream.

Without `--forward` the package is what `kumitate new service` writes (codegen/scaffold's templates): one
stub method per tool that answers NOT_IMPLEMENTED until it is written. With `--forward BASE_URL` every
method hands the call's JSON data to the service's `kumitate.forward.Upstream` (`upstream.call(ctx, tool,
data)`), and settings.py declares `KUMITATE_<SVC>_UPSTREAM_URL` with BASE_URL as its default.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2

from codegen import naming, scaffold

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)


def upstream_variable(service: str) -> str:
    """The environment variable that holds a facade's upstream URL: `KUMITATE_<SVC>_UPSTREAM_URL`."""
    return f"KUMITATE_{service.upper()}_UPSTREAM_URL"


def files(
    service: str, tools: list[dict[str, Any]], forward: str | None, api_title: str, prefix: str = ""
) -> dict[str, str]:
    """handlers/<service>/ relative path -> text; `tools` are {name, operation} in spec order; `prefix`: the
    route prefix the service is served under (`--base-path`), which the facade's Upstream takes off again."""
    names = {
        "service": service,
        "settings_class": f"{naming.pascal(service)}Settings",
        "bundle": naming.bundle_name(service),
    }
    if forward is None:
        methods = "".join(
            scaffold.TEMPLATES.get_template("stub_method.py.jinja").render(
                service=service,
                method=tool["name"],
                summary=f"{tool['operation']} (imported; write it).",
                resource=False,
                input_model=naming.input_model(tool["name"]),
                output_model=naming.output_model(tool["name"]),
            )
            for tool in tools
        )
        render = scaffold.TEMPLATES.get_template
        return {
            "__init__.py": render("handlers.py.jinja").render(**names, store_class="", methods=methods),
            "settings.py": render("settings.py.jinja").render(**names),
            "core/__init__.py": render("core.py.jinja").render(service=service, greet=False),
        }
    values = {
        **names,
        "tools": tools,
        "env": upstream_variable(service),
        "base_url": json.dumps(forward),
        "prefix": json.dumps(prefix),
        "api_title": " ".join(api_title.replace("\\", "/").replace('"', "'").split()),
    }
    return {
        "__init__.py": TEMPLATES.get_template("forward_handlers.py.jinja").render(**values),
        "settings.py": TEMPLATES.get_template("forward_settings.py.jinja").render(**values),
    }
