"""The version directories a database is migrated with, one Alembic branch each, and Alembic's
configuration of them.

The runtime's own tables (`idempotency`, `tasks`) are migrated by kumitate/storage/migrations/versions
(branch `kumitate`). Every service that keeps tables owns a version directory next to its code,
`<handlers>/<service>/migrations/`, whose first revision carries the branch label `<service>`: Alembic
reads all of them as one script directory (`version_locations`) and `upgrade heads` applies every
branch. The services are those of the project (kumitate.project): its `handlers/` directory, not the
subset an instance serves, so every instance of a deployment expects the same set of revisions and the
database holds the runtime's tables and the project's services' only.

Databases of the releases before the split (one linear chain that also created the bundled services'
tables) are carried over: a service's first script names the revision of that chain it takes over
(`replaces`), a database at it is read as at the runtime's `SPLIT_FROM`, and the service's first
revision adopts a table that an earlier release already created instead of creating it, so every row
stays where it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kumitate.storage.migrate.scripts import expected_heads, replaced_revisions

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from sqlalchemy import Connection

    from kumitate.project import Project
    from kumitate.settings.storage import DeploySettings

HEAD = "0007_task_input"
"""The newest revision of the runtime's own branch (a test holds it equal to Alembic's head of it)."""
RUNTIME_BRANCH = "kumitate"
"""The branch label of the runtime's chain (0001 -> 0006_tasks -> 0007_task_input)."""
SCRIPT_LOCATION = "kumitate.storage:migrations"
RUNTIME_VERSIONS = Path(__file__).parent.with_name("migrations") / "versions"
SERVICE_MIGRATIONS = "migrations"
"""A service's version directory, inside its handlers package: `<handlers>/<service>/migrations/`."""
SPLIT_FROM = "0001"
"""Where the runtime's chain stood before the revisions that created services' tables, when it was one
chain: a database at a revision a service's script `replaces` is read as at this one (its service's
branch then adopts the tables that revision created)."""


@dataclass(frozen=True, slots=True)
class Migrations:
    """The version directories a database is migrated with: the runtime's, then each service's by name."""

    services: Mapping[str, Path] = field(default_factory=dict)
    """Service name (its branch label) -> its version directory."""

    @classmethod
    def of(cls, project: Project) -> Migrations:
        """The runtime's migrations and those of every service of `project` that has a
        `handlers/<service>/migrations/` directory."""
        handlers = project.handlers
        found = sorted(p for p in handlers.glob(f"*/{SERVICE_MIGRATIONS}") if p.is_dir()) if handlers.is_dir() else []
        return cls({p.parent.name: p for p in found})

    @classmethod
    def discover(cls, settings: DeploySettings | None = None) -> Migrations:
        """The migrations of the project `settings` names (KUMITATE_PROJECT), else of the project around
        the working directory, else of this source checkout (as the runtime finds its project)."""
        from kumitate.project import Project

        load = getattr(settings, "load_project", None)
        return cls.of(load() if callable(load) else Project.discover())

    @property
    def locations(self) -> list[Path]:
        """Every version directory, the runtime's first."""
        return [RUNTIME_VERSIONS, *self.services.values()]

    def expected(self) -> frozenset[str] | None:
        """The heads, read from the scripts without Alembic (None when a script is not in the plain form
        `revision = "…"` / `down_revision = …`: then only Alembic can tell)."""
        return expected_heads(self.locations)

    def replaced(self) -> frozenset[str]:
        """Revisions of the runtime's one chain before the split that a service's first script took over
        (its module-level `replaces = "…"`): known, and read as `SPLIT_FROM`."""
        return replaced_revisions(self.services.values())

    def known(self) -> frozenset[str]:
        """Every revision a database may be at for these migrations to take it: their scripts' and those
        the services' scripts replace."""
        return frozenset(s.revision for s in self.scripts().walk_revisions()) | self.replaced()

    def config(self, connection: Connection | None = None) -> Config:
        """The Alembic configuration of these version directories, on `connection` when given."""
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", SCRIPT_LOCATION)
        cfg.set_main_option("path_separator", "os")
        locations = os.pathsep.join(str(p) for p in self.locations)
        cfg.set_main_option("version_locations", locations.replace("%", "%%"))
        cfg.attributes["connection"] = connection
        return cfg

    def scripts(self) -> ScriptDirectory:
        """Alembic's view of every version directory."""
        from alembic.script import ScriptDirectory

        return ScriptDirectory.from_config(self.config())

    def heads(self) -> frozenset[str]:
        """The newest revision of every branch, as Alembic reads them: what the code expects."""
        return frozenset(self.scripts().get_heads())


def shown(revisions: frozenset[str] | set[str] | None) -> str | None:
    """Revisions as one sorted, comma-separated string (the runtime's first: digits sort before letters)."""
    return ", ".join(sorted(revisions)) if revisions else None


def head(migrations: Migrations | None = None) -> str:
    """Every branch's newest revision, as one string: what the code expects."""
    revisions = shown((migrations or Migrations.discover()).heads())
    assert revisions is not None, "kumitate/storage/migrations has no revision"
    return revisions
