"""Hand-written domain logic, one package per service. Never imports litestar or fastmcp."""
