"""The load generator's ceiling: a bare ASGI app under the same uvicorn as the others, which reads
each request's body and answers kumitate's own answer bytes, with nothing in between.

Where kumitate outruns the bare Litestar route, the baseline cannot show that wrk is not the limit;
this app can: wrk driving it faster than kumitate, on the same machine in the same round, means the
rate measured for kumitate is the server's, not the client's."""

import os
from pathlib import Path
from typing import Any

ANSWER = Path(os.environ["CEILING_ANSWER"]).read_bytes()
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(ANSWER)).encode())]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": ANSWER})
