"""The stateful HTTP fuzz: schemathesis' state machine walking the OpenAPI links, counted and with invariants.

schemathesis builds the machine from the links the spec's `links` become (codegen/links.py): each
sequence starts at an operation with links and follows them with values from earlier responses. Run
here rather than as the CLI's stateful phase so that the run can say what it did (sequences, how many
followed a link, the longest) and check the services' invariants (handlers/<service>/invariants.py)
after each step, as the MCP stateful fuzz does; a failure is reported as its sequence of requests.

Three things make the sequences workflows (issue 33: 98 of 398 followed a link before): a sequence
may also start with a spec example of a tool that starts a workflow (`example_roots`), a root call is
taken only while no link is ready (`no_link_ready`), and the walk generates positive data only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import httpx
from hypothesis.stateful import RULE_MARKER
from schemathesis.generation.stateful.state_machine import APIStateMachine, StepInput, StepOutput

from codegen import specs
from codegen.fuzz.stateful import Sequence, Stats, Walk, run_machine
from kumitate.invariants import Invariant, Step

if TYPE_CHECKING:
    from schemathesis.schemas import APIOperation
    from schemathesis.specs.openapi.schemas import OpenApiSchema
    from schemathesis.specs.openapi.stateful import OpenAPIStateMachine


class Answer(Protocol):
    """An HTTP response as `step_of` reads it: httpx's (the invariants' calls) or schemathesis' (the walk's)."""

    @property
    def status_code(self) -> int:
        """The HTTP status."""
        ...

    def json(self) -> object:
        """The body parsed as JSON (ValueError when it is not JSON)."""
        ...


class HttpCaller:
    """Tool calls by name over HTTP, for the invariants."""

    def __init__(self, url: str, headers: Mapping[str, str], tree: specs.SpecTree) -> None:
        self.http = httpx.Client(base_url=url, headers=dict(headers), timeout=120)
        self.routes = {t.name: (t.http_method, t.http_path) for t in tree.all_tools()}
        self.by_route = {route: name for name, route in self.routes.items()}

    def __call__(self, tool: str, arguments: Mapping[str, Any]) -> Step:
        """Call `tool` over its HTTP route, as the stateful machine calls a tool over MCP."""
        method, path = self.routes[tool]
        return step_of(tool, arguments, self.http.request(method, path, json=dict(arguments)))

    def close(self) -> None:
        """Close the HTTP client (its pooled connections to the server under test)."""
        self.http.close()


def step_of(tool: str, arguments: Mapping[str, Any], response: Answer) -> Step:
    """The HTTP answer as the transport-neutral Step the invariants read: a 200 with a JSON object is
    a result, anything else the catalogue code of its error (or the HTTP status when it has none)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code == 200 and isinstance(body, dict):
        return Step(tool, arguments, result=body)
    error = body.get("error") if isinstance(body, dict) else None
    return Step(tool, arguments, error=str((error or {}).get("code", response.status_code)))


def no_link_ready(machine: OpenAPIStateMachine) -> bool:
    """A root call may start (another) workflow only while no link can be followed: schemathesis
    picks among all enabled rules alike, so with a dozen roots always enabled a sequence took the one
    or two links its first result opened about once in twenty steps, and mostly ended where it began."""
    transitions = machine.control.transitions  # the transition graph its controller was built with
    fed = {
        label
        for name, values in machine.bundles.items()
        if values
        for label in transitions.producer_labels_for_bundle(name)
    }
    return not any(
        link.source.label in fed and machine.control.allow_transition(link.source.label, link.target.label)
        for operation in transitions.operations.values()
        for link in operation.outgoing
    )


def example_roots(
    schema: OpenApiSchema, tree: specs.SpecTree, headers: Mapping[str, str]
) -> dict[str, Callable[..., StepOutput | None]]:
    """A rule per tool that starts a workflow (it has links) and has successful spec examples: the
    call with one of them, as the MCP walk's roots do half the time (codegen.fuzz.stateful).

    schemathesis' own roots generate their bodies from the schema alone, and few such bodies are
    valid for the domain (a rule in words, a household month that has rows, a view over a real
    table): those calls end in a 4xx, which feeds no link, so most sequences stopped at one step."""
    from hypothesis import strategies as st
    from hypothesis.stateful import Bundle
    from schemathesis.specs.openapi.stateful import transition

    rules: dict[str, Callable[..., StepOutput | None]] = {}
    for tool in tree.all_tools():
        bodies = [ex.input for ex in tool.examples if ex.error is None and isinstance(ex.input, dict)]
        if not (tool.links and bodies) or "{" in tool.http_path:
            continue
        operation = schema[tool.http_path][tool.http_method]

        def case(body: dict[str, Any], operation: APIOperation = operation) -> StepInput:
            made = operation.Case(
                body=json.loads(json.dumps(body)), headers=dict(headers), media_type="application/json"
            )
            return StepInput.initial(made)

        name = f"EXAMPLE_{tool.name}"
        rules[name] = transition(
            name=name,
            target=Bundle("catch_all"),
            input=st.sampled_from(bodies).map(case),
            precondition=no_link_ready,
        )
    return rules


@dataclass
class Shared:
    """What every sequence of one HTTP walk shares: the tools' caller, the invariants checked and the counts."""

    caller: HttpCaller
    checked: list[Invariant]
    stats: Stats


class WorkflowSteps(APIStateMachine):
    """The walk's part of the HTTP state machine, put in front of the machine schemathesis builds for the
    schema (`run`): each step runs the invariants of its tool around it and is counted in the sequence's
    `Sequence` (codegen.fuzz.stateful, as the MCP walk does); `shared` is set by `run`."""

    shared: ClassVar[Shared]

    def __init__(self) -> None:
        self.sequence = Sequence(self.shared.checked, self.shared.caller, self.shared.stats, "requests")
        super().__init__()

    def step(self, input: StepInput) -> StepOutput:
        """schemathesis' step, with the walk's invariants and counts around it."""
        case = input.case
        # no generated Idempotency-Key: one repeated from an earlier call makes this call a replay that
        # runs nothing, and an invariant would then judge a change that never happened (the per-call
        # phases exercise the header)
        for name in [h for h in (case.headers or {}) if h.lower() == "idempotency-key"]:
            del case.headers[name]
        tool = self.shared.caller.by_route.get((case.method.upper(), case.operation.path))
        arguments = case.body if isinstance(case.body, dict) else {}
        if input.transition is not None:
            self.sequence.follow()
        if tool is not None:
            self.sequence.before(tool, arguments)
        body = json.dumps(case.body, ensure_ascii=False, default=repr)[:400]
        line = f"{case.method.upper()} {case.formatted_path} {body}"
        try:
            output = super().step(input)
        except Exception as exc:
            self.sequence.trace.append(f"{line} -> {type(exc).__name__}")
            self.sequence.fail(f"{type(exc).__name__}: {str(exc)[:1500]}")
        self.shared.stats.calls += 1
        self.sequence.trace.append(f"{line} -> {output.response.status_code}")
        if tool is not None:
            self.sequence.after(step_of(tool, arguments, output.response))
        return output

    def teardown(self) -> None:
        """Count the sequence (schemathesis' own teardown is not run, as before the walk had this class)."""
        self.sequence.end()


def run(url: str, headers: Mapping[str, str], config: Path, walk: Walk) -> Stats:
    """Walk the link graph of the server at `url` as `walk` says, through schemathesis' state machine with
    `config`, sending `headers`. Returns the counts, and the first failure as a sequence."""
    import schemathesis
    from schemathesis.generation.modes import GenerationMode

    tree = walk.tree
    if not any(t.links for t in tree.all_tools()):
        return Stats()  # no links: nothing to walk
    schema = schemathesis.openapi.from_url(f"{url}/schema/openapi.json", config=schemathesis.Config.from_path(config))
    schema.config.update(headers=dict(headers))
    # positive data only: a negative body (or one without the token) ends the sequence at its first
    # step with a 4xx that feeds no link; the per-call phases (codegen.fuzz.http) cover negative data
    schema.config.generation.update(modes=[GenerationMode.POSITIVE])
    # the per-call phases check auth (the CLI knows the token is the caller's); here the configured
    # header would look generated to ignored_auth, which then reports every 200 as auth ignored
    schema.config.checks.update(included_check_names=["all"], excluded_check_names=["ignored_auth"])
    caller = HttpCaller(url, headers, tree)
    stats = Stats()
    base = schema.as_state_machine()

    class Workflows(WorkflowSteps, base):  # type: ignore[valid-type,misc]
        shared = Shared(caller, walk.checked(), stats)

    for name, rule in example_roots(schema, tree, headers).items():
        setattr(Workflows, name, rule)
    for name in base.root_rules:
        getattr(getattr(Workflows, name), RULE_MARKER).preconditions += (no_link_ready,)
    try:
        run_machine(Workflows, walk, stats)
    finally:
        caller.close()
    return stats
