"""Every environment variable the conformance service reads, typed and documented in one place.

`create()` builds them once with `setup.read(ConformanceSettings)` and passes typed values down;
nothing else in handlers/conformance reads the environment. A bad value stops the server with the
variable's name, and the README's settings table lists them (`make generate` writes it).
"""

from __future__ import annotations

from kumitate.settings import ServiceSettings, var  # noqa: F401


class ConformanceSettings(ServiceSettings):
    """The conformance service's own variables: one `var(NAME, default, what, **constraints)` each."""

    # greeting: str = var("CONFORMANCE_GREETING", "Hello", "the word a greeting starts with", min_length=1)
