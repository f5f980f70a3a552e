"""What a service's `create()` is given: its name, the process settings and the shared state.

The runtime opens storage once (the database, Redis) and hands every service the same
connections, so a process holds one pool per store, not one per service. Scripts, tests and
benchmarks that build one service without a runtime use `ServiceSetup.open(name, settings)`,
which opens its own and closes them in `close()`.

A service's own variables are a `ServiceSettings` subclass read with `setup.read(...)`:
validated at start-up, named in the error when a value is bad, listed in the README table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from kumitate.cache import SharedCache, make_cache
from kumitate.settings import EnvSettings, Settings, SettingsError
from kumitate.storage import Database, carry, open_database
from kumitate.storage import redis as shared_redis

S = TypeVar("S", bound=EnvSettings)


@dataclass(frozen=True, slots=True)
class Stores:
    """What a process opens once and its services share: the database, Redis when configured, and
    the cache (on Redis, else in process memory)."""

    database: Database
    redis: Any | None
    cache: SharedCache

    @classmethod
    def open(cls, settings: Settings) -> Stores:
        """The database first: one on the wrong schema stops start-up before anything else opens."""
        database = open_database(settings.data_dir, settings)
        try:
            carry.import_idempotency(database, settings.data_dir)
        except BaseException:
            database.close()
            raise
        redis = shared_redis.connect(settings.redis_url) if settings.redis_url else None
        return cls(database, redis, make_cache(redis))

    def close(self) -> None:
        self.database.close()
        if self.redis is not None:
            self.redis.close()


@dataclass(frozen=True, slots=True)
class ServiceSetup:
    name: str
    settings: Settings
    database: Database
    cache: SharedCache
    """Bytes with a TTL that every instance sees (Redis with KUMITATE_REDIS_URL, else process memory)."""
    _own: Stores | None = field(default=None, repr=False, compare=False)
    """The stores `open` opened, which `close` closes (None in a runtime: the runtime closes its own)."""

    @classmethod
    def open(cls, name: str, settings: Settings) -> ServiceSetup:
        """A setup with its own database and cache, for one service outside a runtime."""
        stores = Stores.open(settings)
        return cls(name, settings, stores.database, stores.cache, stores)

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
        if self._own is not None:
            self._own.close()
