"""Why the database cannot be used at start-up, in one line that names it (password hidden) and says
what to do: the errors the CLI prints without a traceback (kumitate.cli catches StartupError)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, exc


class StartupError(RuntimeError):
    """The database cannot be used at start-up; the message is one line that says what to do."""


class SchemaMismatchError(StartupError):
    """The database's schema revisions are not the ones this release expects."""


class DatabaseUnreachableError(StartupError):
    """The configured database does not answer."""


@contextmanager
def reachable(engine: Engine) -> Iterator[None]:
    """Turn "connection refused" and friends into one line naming the database (password hidden)."""
    try:
        yield
    except exc.OperationalError as error:
        reason = str(error.orig or error).strip().splitlines()[0]
        raise DatabaseUnreachableError(
            f"cannot open the database {where(engine)}: {reason} (check KUMITATE_DATABASE_URL and that it is running)"
        ) from error


def where(engine: Engine) -> str:
    """The database's URL for a message, its password hidden."""
    return engine.url.render_as_string(hide_password=True)
