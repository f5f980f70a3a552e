"""Where a kumitate project keeps its specs, generated code and handlers.

A project is a directory with a `pyproject.toml` whose `[tool.kumitate]` table names the three
paths, or simply one holding `specs/`. Every default is today's layout:

    [tool.kumitate]
    specs = "specs"            # the source of truth
    generated = "generated"    # what `kumitate generate` writes (a package named `generated`)
    handlers = "handlers"      # the hand-written domain logic (a package named `handlers`)

The generated and handlers directories are Python packages imported by those names, so their
last path component is fixed; their parent directories are put on `sys.path` by `activate()`.
The runtime finds the project from `KUMITATE_PROJECT`, else by walking up from the working
directory, else it serves the services bundled with this source checkout.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PACKAGE_NAMES", "SOURCE_CHECKOUT", "Project", "ProjectError", "load_generated", "load_toolsets"]

SOURCE_CHECKOUT = Path(__file__).resolve().parent.parent
"""The repository this package runs from when installed in editable mode (bundled services)."""
PACKAGE_NAMES = {"generated": "generated", "handlers": "handlers"}


class ProjectError(ValueError):
    """A project's configuration cannot be used; the message says which file and key."""


@dataclass(frozen=True, slots=True)
class Project:
    """A project's three directories: specs (the source of truth), generated code, and handlers."""

    root: Path
    specs: Path
    generated: Path
    handlers: Path

    @property
    def out(self) -> Path:
        """The directory codegen writes into: it holds generated/ (and docs/reference/)."""
        return self.generated.parent

    @property
    def openapi(self) -> Path:
        """The generated OpenAPI document of the project."""
        return self.generated / "openapi.json"

    @classmethod
    def at(cls, root: Path) -> Project:
        """The project rooted at `root`, configured by its pyproject.toml if it has one."""
        root = root.resolve()
        config: Mapping[str, Any] = {}
        pyproject = root / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise ProjectError(f"{pyproject}: not valid TOML ({exc})") from None
            config = data.get("tool", {}).get("kumitate", {})
            if not isinstance(config, dict):
                raise ProjectError(f"{pyproject}: [tool.kumitate] must be a table")
        paths = {key: root / str(config.get(key, key)) for key in ("specs", "generated", "handlers")}
        for key, package in PACKAGE_NAMES.items():
            if paths[key].name != package:
                raise ProjectError(
                    f"{pyproject}: [tool.kumitate] {key} = {config.get(key)!r} must end in /{package}"
                    f" (it is imported as the package `{package}`)"
                )
        return cls(root, paths["specs"], paths["generated"], paths["handlers"])

    @classmethod
    def discover(cls, start: Path | None = None, env: Mapping[str, str] | None = None) -> Project:
        """KUMITATE_PROJECT, else the nearest directory above `start` (the working directory) that
        configures [tool.kumitate] or holds specs/, else this source checkout."""
        env = os.environ if env is None else env
        if env.get("KUMITATE_PROJECT"):
            return cls.at(Path(env["KUMITATE_PROJECT"]))
        here = (start or Path.cwd()).resolve()
        for directory in (here, *here.parents):
            if (directory / "specs").is_dir() or _configures_kumitate(directory / "pyproject.toml"):
                return cls.at(directory)
        return cls.at(SOURCE_CHECKOUT)

    def activate(self) -> Project:
        """Make `generated` and `handlers` importable from this project: their parent directories first
        on sys.path (generated's, then handlers'); returns the project.

        Why sys.path: both are imported as top-level packages by those fixed names (generated code and
        handlers import each other so, and a scaffolded project runs with no install step), and the
        project decides which directories those names mean. Call it once, where the project is loaded and
        before anything imports either package (`Runtime` does it first thing, the developer commands
        right after `Project.discover`): a module already imported stays the one it was. A second call
        for the same project changes nothing."""
        entries = list(dict.fromkeys(str(d) for d in (self.generated.parent, self.handlers.parent)))
        if sys.path[: len(entries)] != entries:
            for entry in reversed(entries):
                if entry in sys.path:
                    sys.path.remove(entry)
                sys.path.insert(0, entry)
        return self


def _configures_kumitate(pyproject: Path) -> bool:
    if not pyproject.is_file():
        return False
    try:
        return "kumitate" in tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
    except (tomllib.TOMLDecodeError, OSError):
        return False


def load_generated() -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The active project's error catalogue and service registry (`generated.errors`, `generated.registry`).

    Imported here, by name, so that nothing in the runtime imports the generated package
    statically: the project decides which one it is (see `Project.activate`)."""
    import importlib

    try:
        errors = importlib.import_module("generated.errors")
        registry = importlib.import_module("generated.registry")
    except ModuleNotFoundError as exc:
        if exc.name in ("generated", "generated.errors", "generated.registry"):
            raise ProjectError(
                "no generated code here: run `kumitate generate` in a project that holds specs/"
                " (or set KUMITATE_PROJECT)"
            ) from None
        raise
    return errors.CATALOGUE, registry.SERVICES


def load_toolsets() -> Mapping[str, tuple[str, ...]]:
    """The active project's named toolsets: name -> `service.tool` keys (`generated.registry.TOOLSETS`;
    none in code generated before toolsets existed)."""
    import importlib

    return dict(getattr(importlib.import_module("generated.registry"), "TOOLSETS", {}))
