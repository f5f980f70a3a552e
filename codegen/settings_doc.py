"""The README's table of every setting: the runtime's `Settings`, then one section per service.

A service's variables are the `ServiceSettings` subclass in its `handlers/<svc>/settings.py`
(round 4's layout); a service without that module reads no variable and has no section. The
module is loaded from its file alone, so a settings module imports only `kumitate.settings` (and
the standard library): its package's `__init__` (the adapter, which imports generated/) is not
run, and a stale or half-written generated/ cannot stop `make generate`.

`python -m codegen` rewrites the block between the two markers of the project's README.md (where
`kumitate init` puts it) or docs/settings.md (where this repository keeps it), whichever has them,
and `python -m codegen --check` reports the block stale (CI's drift check).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from kumitate.settings import EnvSettings, ServiceSettings, Settings

BEGIN = "<!-- settings table: written by `make generate` from kumitate/settings.py and handlers/*/settings.py -->\n"
END = "<!-- end of settings table -->\n"


def service_settings(handlers: Path) -> dict[str, list[type[ServiceSettings]]]:
    """Service name -> the ServiceSettings subclasses its settings.py defines, services sorted."""
    found: dict[str, list[type[ServiceSettings]]] = {}
    for path in sorted(handlers.glob("*/settings.py")):
        module = _load(path, f"_kumitate_settings_doc_{path.parent.name}")
        classes = [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, ServiceSettings)
            and value is not ServiceSettings
            and value.__module__ == module.__name__
        ]
        if classes:
            found[path.parent.name] = classes
    return found


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves the class's annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def _table(classes: list[type[EnvSettings]]) -> list[str]:
    lines = ["| variable | default | what |", "|---|---|---|"]
    for cls in classes:
        lines += [f"| `{name}` | {shown} | {doc} |" for name, shown, doc in cls.variables()]
    return lines


def markdown(handlers: Path) -> str:
    """The whole generated block: the runtime's table, then a section per service that has settings."""
    lines = _table([Settings])
    for service, classes in service_settings(handlers).items():
        lines += ["", f"### `{service}` (`handlers/{service}/settings.py`)", "", *_table(list(classes))]
    return "\n".join(lines) + "\n"


def rewrite(readme: str, handlers: Path) -> str | None:
    """`readme` with its settings block regenerated; None when it has no block to keep."""
    head, begin, rest = readme.partition(BEGIN)
    if not begin or END not in rest:
        return None
    tail = rest.split(END, 1)[1]
    return head + BEGIN + markdown(handlers) + END + tail
