"""The stateful HTTP fuzz: schemathesis' state machine walking the OpenAPI links, counted and with invariants.

schemathesis builds the machine from the links the spec's `links` become (codegen/links.py): each
sequence starts at an operation with links and follows them with values from earlier responses. Run
here rather than as the CLI's stateful phase so that the run can say what it did (sequences, how many
followed a link, the longest) and check the services' invariants (handlers/<service>/invariants.py)
after each step, as the MCP stateful fuzz does; a failure is reported as its sequence of requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
from hypothesis import seed as fixed_seed
from hypothesis.stateful import run_state_machine_as_test

from codegen import specs
from codegen.fuzz.stateful import Stats, load_invariants, walk_settings
from kumitate.invariants import Invariant, Step


class HttpCaller:
    """Tool calls by name over HTTP, for the invariants."""

    def __init__(self, url: str, headers: Mapping[str, str], tree: specs.SpecTree) -> None:
        self.http = httpx.Client(base_url=url, headers=dict(headers), timeout=120)
        self.routes = {t.name: (t.http_method, t.http_path) for t in tree.all_tools()}
        self.by_route = {route: name for name, route in self.routes.items()}

    def __call__(self, tool: str, arguments: Mapping[str, Any]) -> Step:
        method, path = self.routes[tool]
        return step_of(tool, arguments, self.http.request(method, path, json=dict(arguments)))

    def close(self) -> None:
        self.http.close()


def step_of(tool: str, arguments: Mapping[str, Any], response: Any) -> Step:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code == 200 and isinstance(body, dict):
        return Step(tool, arguments, result=body)
    error = body.get("error") if isinstance(body, dict) else None
    return Step(tool, arguments, error=str((error or {}).get("code", response.status_code)))


def run(
    url: str,
    headers: Mapping[str, str],
    config: Path,
    tree: specs.SpecTree,
    sequences: int,
    steps: int,
    seed: int,
    invariants: list[Invariant] | None = None,
) -> Stats:
    import schemathesis

    if not any(t.links for t in tree.all_tools()):
        return Stats()  # no links: nothing to walk
    schema = schemathesis.openapi.from_url(f"{url}/schema/openapi.json", config=schemathesis.Config.from_path(config))
    schema.config.update(headers=dict(headers))
    # the per-call phases check auth (the CLI knows the token is the caller's); here the configured
    # header would look generated to ignored_auth, which then reports every 200 as auth ignored
    schema.config.checks.update(included_check_names=["all"], excluded_check_names=["ignored_auth"])
    checked = load_invariants([s.name for s in tree.services]) if invariants is None else invariants
    caller = HttpCaller(url, headers, tree)
    stats = Stats()
    base = schema.as_state_machine()

    class Workflows(base):  # type: ignore[valid-type,misc]
        def __init__(self) -> None:
            self.trace: list[str] = []
            self.memory: dict[str, Any] = {}
            self.followed = 0
            super().__init__()

        def step(self, input: Any) -> Any:
            case = input.case
            tool = caller.by_route.get((case.method.upper(), case.operation.path))
            arguments = case.body if isinstance(case.body, dict) else {}
            self.followed += input.transition is not None
            stats.links_followed += input.transition is not None
            for inv in checked:
                if tool is not None and tool in inv.tools and inv.before is not None:
                    inv.before(tool, arguments, caller, self.memory)
            body = json.dumps(case.body, ensure_ascii=False, default=repr)[:400]
            line = f"{case.method.upper()} {case.formatted_path} {body}"
            try:
                output = super().step(input)
            except Exception as exc:
                self.trace.append(f"{line} -> {type(exc).__name__}")
                self.report(f"{type(exc).__name__}: {str(exc)[:1500]}")
            stats.calls += 1
            self.trace.append(f"{line} -> {output.response.status_code}")
            if tool is not None:
                done = step_of(tool, arguments, output.response)
                for inv in checked:
                    if done.ok and tool in inv.tools:
                        stats.invariant_checks += 1
                        broken = inv.check(done, caller, self.memory)
                        if broken:
                            self.report(f"invariant {inv.name} broken after {tool}: {broken}")
            return output

        def report(self, problem: str) -> None:
            listed = "\n".join(f"  {i + 1}. {line}" for i, line in enumerate(self.trace))
            message = f"{problem}\nsequence ({len(self.trace)} requests):\n{listed}"
            stats.failure = stats.failure or message
            raise AssertionError(message)

        def teardown(self) -> None:
            stats.sequences += 1
            stats.multi_step += self.followed > 0
            stats.longest = max(stats.longest, len(self.trace))

    try:
        run_state_machine_as_test(fixed_seed(seed)(Workflows), settings=walk_settings(sequences, steps))
    except Exception as exc:  # the first failure, as its sequence; a replay meets another server state
        stats.failure = stats.failure or f"{type(exc).__name__}: {str(exc)[:2000]}"
    finally:
        caller.close()
    return stats
