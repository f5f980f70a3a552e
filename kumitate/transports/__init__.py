"""Transport adapters: they translate wire formats and decide nothing about a tool."""
