"""The HTTP edge: what every request meets before a route or an MCP endpoint sees it, one ASGI middleware
per concern, each with its own config, assembled in one place in the order they run (`stack`):

- `correlation`: the headers read once, the ids resolved, ids and duration on every response;
- `limits`: header count and size (431);
- `hosts`: the Host and Origin allow-lists (DNS rebinding, cross-site writes), and the base URL a
  request names (`base_url_of`), read from the same validated Host;
- `drain`: `Connection: close` while the server drains;
- `errors`: the catalogue's envelope for every answer the edge gives itself (refusals, the crash
  fallback, the MCP SDK's plain-text errors);
- `body_deadline`: the request body whole within its time (408);
- `cors`: CORS for the configured origins;
- `routing`: /mcp to the MCP apps behind their gate, the lean HTTP path, then Litestar;
- `asgi`: the types, scope keys and JSON reply they share.

uvicorn's protocol (kumitate.transports.protocol) bounds what arrives before there is a request.
"""
