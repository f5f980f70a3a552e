"""Every reliance on another library's internals, one module per library (issue 44).

Where a library offers no public way to do what kumitate needs, the reach-in lives here and only
here: `fastmcp` (the MCP server and its SDK) and `uvicorn` (its HTTP connection protocol). Each
module names the upstream change that would retire it, lists what it relies on, and checks it when
the server starts, failing with one line that names the installed release; each has a canary test
(tests/compat/) that fails when an upgrade removes what it relies on. ruff's SLF001 holds the rest
of kumitate/ and codegen/ to public API (pyproject.toml), and tests/compat/test_private_access.py
catches what ruff cannot see (a private name reached through getattr, or imported).

Why one package rather than a `compat.py` beside each user: the users move (the transports are
being regrouped into packages), the question a maintainer asks before an upgrade is "what of this
library's internals do we touch?", and one folder answers it for every library at once.
(codegen's one reliance, mypy's typed tree, is the whole of codegen/raises/mypy_tree.py: see there.)
"""


class InternalsChanged(RuntimeError):
    """A library no longer has an internal kumitate relies on: one line naming the library's release
    and the compat module to update (the command line prints it without a traceback)."""
