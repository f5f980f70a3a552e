"""The canary of uvicorn's internals (kumitate/compat/uvicorn.py): the protocol kumitate subclasses and
the server it extends still have what it relies on.

An upgrade that renames one of them fails here, and `kumitate serve` refuses to start with one line
naming the release, instead of serving without the header limit and deadline. What the protocol does
with them is proved on a real socket by tests/runtime/test_edge_protocol_units.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from uvicorn.config import Config
from uvicorn.server import ServerState

from kumitate.compat import InternalsChanged
from kumitate.compat import uvicorn as compat
from kumitate.transports.protocol import EdgeLimits, EdgeProtocol, protocol_for


def test_the_installed_uvicorn_has_what_kumitate_relies_on() -> None:
    assert compat.missing_internals() == []
    compat.check()


def test_the_protocol_state_is_there_on_a_built_protocol() -> None:
    """The names the check reads from uvicorn's code are the attributes a real protocol has, and a new
    connection has no response under way."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        pass

    config = Config(app, lifespan="off", log_config=None)
    config.load()
    loop = asyncio.new_event_loop()
    try:
        made = protocol_for(EdgeLimits(max_header_bytes=1024, header_timeout_s=1.0))(config, ServerState(), {}, loop)
        assert isinstance(made, EdgeProtocol)
        assert all(hasattr(made, name) for name in compat.PROTOCOL_STATE)
        assert compat.response_pending(made) is False
    finally:
        loop.close()


class Renamed(compat.HttpToolsProtocol):
    """A protocol of a future uvicorn: a hook renamed, no cycle kept."""

    on_headers_complete = None  # type: ignore[assignment]

    def __init__(self, config: Any, server_state: Any, app_state: Any, loop: Any = None) -> None:
        self.transport = self.scope = self.loop = None  # type: ignore[assignment]


def test_a_change_is_named_and_stops_the_start_in_one_line() -> None:
    assert compat.missing_internals(protocol=Renamed) == [
        "Renamed(config, server_state, app_state, _loop)",
        "Renamed.on_headers_complete()",
        "Renamed.cycle",
    ]
    with pytest.raises(InternalsChanged) as err:
        compat.check(protocol=Renamed)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"uvicorn {uvicorn.__version__} no longer has Renamed(")
    assert "kumitate/compat/uvicorn.py" in message


def test_the_server_and_config_checks_see_a_missing_name() -> None:
    class Server(uvicorn.Server):
        handle_exit = None  # type: ignore[assignment]

    assert compat.missing_internals(server=Server) == ["Server.handle_exit()"]
