"""The HTTP edge: what every request meets before a route or an MCP endpoint sees it.

- `hosts`: the Host and Origin allow-lists (DNS rebinding, cross-site writes), and the base URL a
  request names (`base_url_of`), read from the same validated Host.
"""
