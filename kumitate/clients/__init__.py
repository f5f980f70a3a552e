"""Typed clients for kumitate services (one module per service)."""
