"""Alembic, driven from code: the runtime's migrations and each service's, one branch each.

The runtime's tables are migrated by kumitate/storage/migrations/versions (branch `kumitate`), every
service's by the version directory next to its code (branch `<service>`); `upgrade heads` applies every
branch, and `ensure` checks (or, with auto-migration, brings) the database to the heads at start-up.

One module per job: `branches.py` finds the version directories and configures Alembic with them (and
says why there is one branch per service, and how databases of releases before the split are carried
over); `scripts.py` is the start-up fast path, the heads read from the scripts without importing Alembic;
`lock.py` lets one migrator at a time in; `commands.py` holds `current`, `upgrade` and `ensure`;
`revision.py` writes a service's next migration; `errors.py` the one-line start-up errors.
"""

from __future__ import annotations

from kumitate.storage.migrate.branches import HEAD, RUNTIME_BRANCH, SPLIT_FROM, Migrations, head
from kumitate.storage.migrate.branches import RUNTIME_VERSIONS as RUNTIME_VERSIONS
from kumitate.storage.migrate.branches import SCRIPT_LOCATION as SCRIPT_LOCATION
from kumitate.storage.migrate.branches import SERVICE_MIGRATIONS as SERVICE_MIGRATIONS
from kumitate.storage.migrate.branches import shown as shown
from kumitate.storage.migrate.commands import current, ensure, upgrade
from kumitate.storage.migrate.errors import DatabaseUnreachableError, SchemaMismatchError, StartupError
from kumitate.storage.migrate.errors import reachable as reachable
from kumitate.storage.migrate.lock import ADVISORY_LOCK_ID as ADVISORY_LOCK_ID
from kumitate.storage.migrate.revision import RevisionError, new_revision

__all__ = [
    "HEAD",
    "RUNTIME_BRANCH",
    "SPLIT_FROM",
    "DatabaseUnreachableError",
    "Migrations",
    "RevisionError",
    "SchemaMismatchError",
    "StartupError",
    "current",
    "ensure",
    "head",
    "new_revision",
    "upgrade",
]
