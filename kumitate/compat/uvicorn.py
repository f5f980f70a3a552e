"""The one place kumitate relies on uvicorn internals: the HTTP/1.1 protocol it subclasses, and the server
class it extends.

Upstream need (uvicorn): its httptools protocol has no header-size limit, no deadline for a request's
headers, and answers a request it cannot parse in plain text (kumitate/transports/protocol.py says why
each matters). uvicorn takes any asyncio protocol class as `http=` (public), but adding these means
subclassing `HttpToolsProtocol` from `uvicorn.protocols.http.httptools_impl`, outside uvicorn's
documented API: `EdgeProtocol` overrides the hooks in `PROTOCOL_HOOKS` and reads the per-connection
state in `PROTOCOL_STATE` (and the cycle's `response_complete`, through `response_pending`). A
`limit_max_header_bytes` and `timeout_headers` in uvicorn's Config (h11's protocol has the first)
would retire it. Likewise `uvicorn.Server` has no public way to serve from a listener of one's own
(kumitate/transports/listener.py) or to delay its shutdown on SIGTERM (kumitate/serving/drain.py): both
override the methods in `SERVER_HOOKS` and use the state in `SERVER_STATE`.

`check()` runs when `kumitate serve` builds its protocol (`transports.protocol.protocol_for`) and
stops the start with one line naming the uvicorn release when any of it is gone;
tests/compat/test_uvicorn.py is the canary of an upgrade.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from kumitate.compat import InternalsChanged

TESTED_WITH = "0.54.0"
"""The uvicorn release this module was checked against (pyproject.toml pins it)."""
PROTOCOL_ARGUMENTS = ("config", "server_state", "app_state", "_loop")
"""`HttpToolsProtocol.__init__`'s arguments, in order (EdgeProtocol passes them on)."""
PROTOCOL_HOOKS = (
    "connection_made",
    "data_received",
    "connection_lost",
    "on_message_begin",
    "on_headers_complete",
    "send_400_response",
)
PROTOCOL_STATE = ("loop", "transport", "scope", "cycle")
"""Set by `HttpToolsProtocol.__init__`: the event loop, the connection, the request's scope and cycle."""
SERVER_HOOKS = ("startup", "handle_exit")
SERVER_STATE = ("servers", "server_state", "should_exit", "started", "lifespan")
"""Set by `Server.__init__` or `Server.startup`."""
CONFIG_HOOKS = ("bind_socket",)
CONFIG_STATE = ("backlog", "timeout_graceful_shutdown", "http_protocol_class")
"""Set by `Config.__init__` or `Config.load`."""


def check(**classes: type[Any]) -> None:
    """Stop the start, in one line naming the installed uvicorn, when what kumitate relies on is gone
    (`classes`: those of `missing_internals` to look at instead of uvicorn's own)."""
    missing = missing_internals(**classes)
    if missing:
        raise InternalsChanged(
            f"uvicorn {uvicorn.__version__} no longer has {', '.join(missing)}, which kumitate's HTTP edge "
            f"relies on (kumitate/compat/uvicorn.py, written against uvicorn {TESTED_WITH})"
        )


def missing_internals(
    protocol: type[Any] = HttpToolsProtocol,
    cycle: type[Any] = RequestResponseCycle,
    server: type[Any] = uvicorn.Server,
    config: type[Any] = Config,
) -> list[str]:
    """What of the internals above the given classes lack (none on the installed uvicorn)."""
    found = []
    arguments = tuple(inspect.signature(protocol.__init__).parameters)[1:]
    if arguments[: len(PROTOCOL_ARGUMENTS)] != PROTOCOL_ARGUMENTS:
        found.append(f"{protocol.__name__}({', '.join(PROTOCOL_ARGUMENTS)})")
    found += _lacking(protocol, PROTOCOL_HOOKS, (), protocol.__init__)
    found += _lacking(protocol, (), PROTOCOL_STATE, protocol.__init__)
    found += _lacking(cycle, (), ("response_complete",), cycle.__init__)
    found += _lacking(server, SERVER_HOOKS, SERVER_STATE, server.__init__, server.startup)
    found += _lacking(config, CONFIG_HOOKS, CONFIG_STATE, config.__init__, config.load)
    return found


def _lacking(
    owner: type[Any], methods: tuple[str, ...], fields: tuple[str, ...], *setters: Callable[..., Any]
) -> list[str]:
    """`methods` the class does not define, and `fields` none of `setters` assigns (instance attributes
    exist only once an object is built; the names a method stores are in its code)."""
    stored = {name for setter in setters for name in getattr(getattr(setter, "__code__", None), "co_names", ())}
    gone = [f"{owner.__name__}.{name}()" for name in methods if not callable(getattr(owner, name, None))]
    return gone + [f"{owner.__name__}.{name}" for name in fields if name not in stored]


def response_pending(protocol: HttpToolsProtocol) -> bool:
    """Whether a response is under way on the connection (uvicorn's current request-response cycle,
    if any, has not completed)."""
    cycle = protocol.cycle
    return cycle is not None and not cycle.response_complete
