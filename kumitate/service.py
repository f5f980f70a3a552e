"""What a service's `create()` is given: its name, the process settings and the shared state.

The runtime opens storage once (the database, Redis) and hands every service the same
connections, so a process holds one pool per store, not one per service. Scripts, tests and
benchmarks that build one service without a runtime use `ServiceSetup.open(name, settings)`,
which opens its own and closes them in `close()`.

A service's own variables are a `ServiceSettings` subclass read with `setup.read(...)`:
validated at start-up, named in the error when a value is bad, listed in the README table.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import ValidationError

from kumitate.cache import SharedCache, make_cache
from kumitate.settings import EnvSettings, Settings, SettingsError
from kumitate.storage import redis as shared_redis

if TYPE_CHECKING:
    import redis

    from kumitate.storage import Database

__all__ = ["ServiceSetup", "Stores"]

S = TypeVar("S", bound=EnvSettings)


class Stores:
    """What a process opens once and its services share: the database, Redis when configured, and
    the cache (on Redis, else in process memory).

    The database opens on first use (the first service that asks for it, or the idempotency store):
    a process whose services keep no relational state (stays) never imports SQLAlchemy nor opens a
    file. Since every service asks before it loads anything, a database on the wrong schema still
    stops start-up before any service loads its data."""

    def __init__(self, settings: Settings, database: Database | None = None, cache: SharedCache | None = None) -> None:
        self.settings = settings
        self._database = database
        self._lock = threading.Lock()
        self.redis: redis.Redis | None = shared_redis.connect(settings.redis_url) if settings.redis_url else None
        self.cache = cache if cache is not None else make_cache(self.redis)

    @classmethod
    def open(cls, settings: Settings) -> Stores:
        """The shared state of `settings` (database and Redis opened on first use)."""
        return cls(settings)

    @property
    def database(self) -> Database:
        """The database, opened (and its schema checked) on first use."""
        if self._database is None:
            with self._lock:
                if self._database is None:
                    from kumitate.storage import carry, open_database

                    database = open_database(self.settings.data_dir, self.settings)
                    try:  # an older release's idempotency keys, once (kumitate/storage/carry.py)
                        carry.import_idempotency(database, self.settings.data_dir)
                    except BaseException:
                        database.close()
                        raise
                    self._database = database
        return self._database

    @property
    def opened_database(self) -> Database | None:
        """The database if something has opened it, else None (readiness checks only an open one)."""
        return self._database

    def close(self) -> None:
        """Close the database and Redis connections if they were opened."""
        if self._database is not None:
            self._database.close()
        if self.redis is not None:
            self.redis.close()


@dataclass(frozen=True, slots=True)
class ServiceSetup:
    """What a service's `create()` is given: its name, the process settings and the shared stores."""

    name: str
    settings: Settings
    stores: Stores
    """The process's shared state; `database` and `cache` below are its."""
    own: bool = False
    """Whether `close` closes `stores` (`open` opened them); a runtime closes its own."""

    @classmethod
    def open(cls, name: str, settings: Settings) -> ServiceSetup:
        """A setup with its own database and cache, for one service outside a runtime."""
        return cls(name, settings, Stores.open(settings), own=True)

    @property
    def database(self) -> Database:
        """The relational database (opened on first use: a service that never asks costs nothing)."""
        return self.stores.database

    @property
    def cache(self) -> SharedCache:
        """Bytes with a TTL that every instance sees (Redis with KUMITATE_REDIS_URL, else process memory)."""
        return self.stores.cache

    @property
    def data_dir(self) -> Path:
        """This service's own directory under the data dir (created on first use)."""
        return self.settings.service_dir(self.name)

    @property
    def sample_dir(self) -> Path:
        """This service's bundled sample data."""
        return self.settings.sample_dir / self.name

    def read(self, model: type[S]) -> S:
        """The service's own settings, from the variables the runtime's settings came from; a value
        its declaration refuses is a SettingsError naming the service and the variable (the
        command line prints it as one line and exits, no traceback)."""
        try:
            return model.from_env(self.settings.env)
        except ValidationError as error:
            raise SettingsError(self.name, error) from None

    def close(self) -> None:
        """Close what `open` opened (nothing for a runtime's setup: the runtime closes its own)."""
        if self.own:
            self.stores.close()
