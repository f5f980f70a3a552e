"""One storage layer for kumitate's relational state: SQLAlchemy 2 Core + Alembic, two engines.

SQLite (one file under the data dir) by default, PostgreSQL (psycopg 3) when
KUMITATE_DATABASE_URL is set. `engine.py` opens connections (pragmas in one place),
`database.py` runs transactions (commits under the call's commit gate), `bounds.py` holds each
transaction of a call to its deadline (with `watchdog.py` for a server that stops answering),
`migrate/` applies or checks the packaged Alembic migrations, `schema.py` declares the tables, `backup/`
backs a data dir up and restores it (`kumitate db backup` / `restore`).

The names below load on first use (PEP 562): importing `kumitate.storage.redis` or this package
does not import SQLAlchemy, so a process whose services keep no relational state never pays for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kumitate.storage.database import Database, open_database
    from kumitate.storage.migrate import SchemaMismatchError, StartupError

__all__ = ["Database", "SchemaMismatchError", "StartupError", "open_database"]
_HOME = {
    "Database": "kumitate.storage.database",
    "open_database": "kumitate.storage.database",
    "SchemaMismatchError": "kumitate.storage.migrate",
    "StartupError": "kumitate.storage.migrate",
}


def __getattr__(name: str) -> object:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
