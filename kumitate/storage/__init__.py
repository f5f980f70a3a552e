"""One storage layer for kumitate's relational state: SQLAlchemy 2 Core + Alembic, two engines.

SQLite (one file under the data dir) by default, PostgreSQL (psycopg 3) when
KUMITATE_DATABASE_URL is set. `engine.py` opens connections (pragmas in one place),
`database.py` runs transactions (commits under the call's commit gate), `bounds.py` holds each
transaction of a call to its deadline (with `watchdog.py` for a server that stops answering),
`migrate.py` applies or checks the packaged Alembic migrations, `schema.py` declares the tables.
"""

from kumitate.storage.database import Database, open_database
from kumitate.storage.migrate import SchemaMismatchError, StartupError

__all__ = ["Database", "SchemaMismatchError", "StartupError", "open_database"]
