"""`make fuzz` for a kumitate project: `python -m codegen.fuzz.http` (schemathesis on every HTTP operation)
and `python -m codegen.fuzz.mcp` (every tool over MCP streamable HTTP), each against a real server of the
discovered project. They need kumitate's `fuzz` extra (schemathesis, hypothesis); nothing else imports them.
"""
