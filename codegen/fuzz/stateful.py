"""The stateful MCP fuzz: sequences of calls that walk the spec's links, with the services' invariants.

A hypothesis rule-based state machine built from the link graph (codegen/links.py): every sequence
starts at a tool a workflow starts at (links out, none in), which may be called again later (arguments
from one of its spec examples or from its input schema), and one rule
per link that takes a result its source gave earlier in the sequence, fills the link's fields from it
(any item where the path goes through an array) and generates the rest from the target's schema.
Every call is checked as the per-call fuzz checks it (codegen.fuzz.contract.check_result); a link that
hands the next tool an argument its schema rejects is a failure too (the workflow is broken), and so is
an invariant (handlers/<service>/invariants.py) that a step breaks. A failure is reported as the
sequence of calls that led to it; the same seed replays the same sequences against a fresh server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import json
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Coroutine, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, TypeVar

import jsonschema_rs
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.reporting import with_reporter
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test
from schemathesis.generation.jsonschema.builder import build

from codegen import specs
from codegen.fuzz.contract import Case, check_result
from codegen.links import Source, target_of
from kumitate.client import mcp_result_body
from kumitate.invariants import Caller, Invariant, Step

if TYPE_CHECKING:
    import mcp_types
    from fastmcp import Client

T = TypeVar("T")
CALL_TIMEOUT_S = 120.0
EXAMPLE_SHARE = 0.5
"""How often a root call takes one of the tool's spec examples instead of generated arguments."""


class Loop:
    """An event loop on a thread of its own: the state machine's rules are synchronous, the client is not."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="stateful-fuzz", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT_S) -> T:
        """Run `coro` on the loop's thread and wait for it (at most `timeout` seconds), so the synchronous
        hypothesis rules can drive the asynchronous MCP client."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    @contextmanager
    def hold(self, connect: Callable[[], AbstractAsyncContextManager[Any]]) -> Iterator[Any]:
        """The client `connect()` gives, entered and left in one task on the loop (its context variables
        must be reset in the context that set them)."""
        ready: concurrent.futures.Future[tuple[Any, asyncio.Event]] = concurrent.futures.Future()

        async def session() -> None:
            try:
                async with connect() as client:
                    done = asyncio.Event()
                    ready.set_result((client, done))
                    await done.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        held = asyncio.run_coroutine_threadsafe(session(), self.loop)
        client, done = ready.result(CALL_TIMEOUT_S)
        try:
            yield client
        finally:
            self.loop.call_soon_threadsafe(done.set)
            held.result(30)

    def close(self) -> None:
        """Stop the loop and its thread, once the machine has run every sequence."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@dataclass
class Stats:
    """What the stateful run did, for its summary line: how far the sequences went along the links,
    the calls and invariant checks made, the first failure, and the time spent per tool."""

    sequences: int = 0
    multi_step: int = 0
    """Sequences that followed at least one link."""
    longest: int = 0
    links_followed: int = 0
    calls: int = 0
    invariant_checks: int = 0
    failure: str | None = None
    restarts: int = 0
    """Runs of the machine begun again with the next seed after hypothesis met a known prefix drawing
    otherwise (the server's state outlives a sequence; `run_machine`)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Time spent per tool (calls the invariants make included)."""
    invariants: int = 0
    """How many invariants the services declare (0: the walk checks answers against their schemas only)."""

    @property
    def invariant_words(self) -> str:
        """What the summary line says of invariants: their checks, or that none are declared, and where to."""
        if not self.invariants:
            return "no invariants declared (handlers/<service>/invariants.py; docs/writing-a-service.md)"
        return f"{self.invariant_checks} checks of {self.invariants} invariants"


@dataclass(frozen=True)
class Node:
    """A tool or resource of the graph."""

    name: str
    kind: str
    input_schema: dict[str, Any] = field(default_factory=dict)
    uri: str = ""
    examples: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Edge:
    """A link of the spec as the machine walks it: from the tool `source` to `target`, with the target's
    `fields` filled from the source's result."""

    source: str
    target: Node
    fields: tuple[tuple[str, Source], ...]

    @property
    def label(self) -> str:
        """How a failure report names the link (`source -> target`)."""
        return f"{self.source} -> {self.target.name}"


def node_of(tool: specs.ToolSpec) -> Node:
    """The tool as a node of the link graph, with the inputs of its successful spec examples as
    arguments known to work."""
    examples = tuple(ex.input for ex in tool.examples if ex.error is None and isinstance(ex.input, dict))
    return Node(tool.name, "tool", tool.wire_input, examples=examples)


def graph(tree: specs.SpecTree) -> tuple[dict[str, Node], list[Edge]]:
    """The tools a workflow starts at (links out, none in; all with links where they form a cycle) and every
    link between tools and resources."""
    incoming = {link.target for t in tree.all_tools() for link in t.links if link.kind == "tool"}
    roots: dict[str, Node] = {}
    edges: list[Edge] = []
    for tool in tree.all_tools():
        if not tool.links:
            continue
        if tool.name not in incoming:
            roots[tool.name] = node_of(tool)
        for link in tool.links:
            target = target_of(tree, tool.service, link)
            if isinstance(target, specs.ToolSpec):
                node = node_of(target)
            elif target is not None:
                node = Node(target.name, "resource", uri=target.uri)
            else:
                continue
            edges.append(Edge(tool.name, node, tuple((n, Source.parse(t)) for n, t in link.fields)))
    if not roots:
        roots = {t.name: node_of(t) for t in tree.all_tools() if t.links}
    return roots, edges


@dataclass(frozen=True)
class Walk:
    """What a link walk covers, on either transport (this module over MCP, codegen.fuzz.http_stateful over
    HTTP): `sequences` sequences of up to `steps` calls over `tree`'s links from `seed`, checked against
    `invariants` (None: the ones the services declare)."""

    tree: specs.SpecTree
    sequences: int
    steps: int
    seed: int
    invariants: list[Invariant] | None = None

    def checked(self) -> list[Invariant]:
        """The invariants the walk checks."""
        if self.invariants is not None:
            return self.invariants
        return load_invariants([s.name for s in self.tree.services])


def load_invariants(services: list[str]) -> list[Invariant]:
    """`INVARIANTS` of handlers/<service>/invariants.py, for the services that declare any."""
    found: list[Invariant] = []
    for name in services:
        try:
            module = importlib.import_module(f"handlers.{name}.invariants")
        except ModuleNotFoundError as exc:
            if exc.name not in (f"handlers.{name}.invariants", f"handlers.{name}", "handlers"):
                raise
            continue
        found += list(getattr(module, "INVARIANTS", ()))
    return found


class Wire:
    """The calls the machine makes, over one MCP client: checked tool calls and resource reads."""

    def __init__(
        self,
        loop: Loop,
        client: Client[Any],
        tools: Mapping[str, mcp_types.Tool],
        declared: Mapping[str, set[str]],
        stats: Stats,
    ) -> None:
        from generated.errors import CATALOGUE

        self.loop, self.client, self.tools, self.declared, self.catalogue = loop, client, tools, declared, CATALOGUE
        self.stats = stats

    def call(self, tool: str, arguments: Mapping[str, Any]) -> tuple[Step, mcp_types.CallToolResult]:
        """Call `tool` over MCP: the transport-neutral Step the invariants read, and the raw result the
        contract check reads; the time it took counts towards the tool's share in Stats."""
        started = time.monotonic()
        result = self.loop.run(self.client.call_tool_mcp(tool, dict(arguments)))
        self.stats.seconds[tool] = self.stats.seconds.get(tool, 0.0) + time.monotonic() - started
        body = mcp_result_body(result)  # an error's catalogue body is in its text content, not structuredContent
        if result.is_error:
            error = (body or {}).get("error") or {}
            return Step(tool, arguments, error=str(error.get("code", "?"))), result
        return Step(tool, arguments, result=body), result

    def caller(self, tool: str, arguments: Mapping[str, Any]) -> Step:
        """`call` as the invariants' Caller (kumitate.invariants), which needs only the Step."""
        return self.call(tool, arguments)[0]

    def check(self, tool: str, arguments: Mapping[str, Any], result: mcp_types.CallToolResult) -> str | None:
        """Why the result of calling `tool` breaks its contract (codegen.fuzz.contract.check_result), or None."""
        case = Case(tool, dict(arguments), True)
        return check_result(case, result, self.tools[tool].output_schema, self.declared[tool], self.catalogue)

    def read(self, uri: str) -> str | None:
        """Why reading the resource breaks the contract (a catalogued error is fine), or None."""
        from mcp.shared.exceptions import MCPError

        try:
            self.loop.run(self.client.read_resource_mcp(uri))
        except MCPError as exc:
            if "INTERNAL" in str(exc):
                return f"reading {uri}: {str(exc)[:200]}"
        return None


class Strategies:
    """The arguments a machine generates for each tool, built once per tool: from its input schema, and from
    its spec examples half the time (EXAMPLE_SHARE) where it has any."""

    def __init__(self) -> None:
        self.built: dict[str, st.SearchStrategy[Any]] = {}

    def arguments(self, node: Node) -> st.SearchStrategy[Any]:
        """The strategy of `node`'s arguments."""
        if node.name not in self.built:
            generated = build(dict(node.input_schema), draft=jsonschema_rs.Draft202012, formats={})
            if node.examples:
                examples = st.sampled_from(node.examples)
                generated = st.one_of(examples, generated) if EXAMPLE_SHARE < 1 else examples
            self.built[node.name] = generated
        return self.built[node.name]


class Sequence:
    """One sequence of a walk, on either transport: its calls so far (a failure is reported as them), the
    invariants' memory, and the links it followed; what it does is counted in the walk's Stats."""

    def __init__(self, invariants: list[Invariant], caller: Caller, stats: Stats, unit: str) -> None:
        self.invariants, self.caller, self.stats, self.unit = invariants, caller, stats, unit
        self.trace: list[str] = []
        self.memory: dict[str, Any] = {}
        self.followed = 0

    def before(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """Let the invariants that watch `tool` note what they need before it is called."""
        for inv in self.invariants:
            if tool in inv.tools and inv.before is not None:
                inv.before(tool, arguments, self.caller, self.memory)

    def after(self, step: Step) -> None:
        """Check the invariants that watch the step's tool, after a success."""
        for inv in self.invariants:
            if step.ok and step.tool in inv.tools:
                self.stats.invariant_checks += 1
                broken = inv.check(step, self.caller, self.memory)
                if broken:
                    self.fail(f"invariant {inv.name} broken after {step.tool}: {broken}")

    def follow(self) -> None:
        """Count a link followed."""
        self.followed += 1
        self.stats.links_followed += 1

    def fail(self, problem: str) -> NoReturn:
        """Fail the sequence with `problem` and the calls that led to it (the walk's first failure)."""
        steps = "\n".join(f"  {i + 1}. {line}" for i, line in enumerate(self.trace))
        message = f"{problem}\nsequence ({len(self.trace)} {self.unit}):\n{steps}"
        self.stats.failure = self.stats.failure or message  # the first one: a replay meets another server state
        raise AssertionError(message)

    def end(self) -> None:
        """Count the sequence once it ends."""
        self.stats.sequences += 1
        self.stats.multi_step += self.followed > 0
        self.stats.longest = max(self.stats.longest, len(self.trace))


@dataclass(frozen=True)
class Harness:
    """What the rules of one machine share: the wire to the server, the invariants, the validators of the
    tools' inputs, and the counts."""

    wire: Wire
    invariants: list[Invariant]
    stats: Stats
    validators: dict[str, jsonschema_rs.Draft202012Validator]


class Workflows(RuleBasedStateMachine):
    """The state machine of the walk: one sequence of calls per instance, its results kept for the links to
    follow. `machine` makes a subclass with one graph's rules and its `harness`."""

    harness: ClassVar[Harness]

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
        harness = self.harness
        self.sequence = Sequence(harness.invariants, harness.wire.caller, harness.stats, "calls")

    def run(self, tool: str, arguments: dict[str, Any]) -> None:
        """Call `tool`, check its answer and, after a success, the invariants that watch it."""
        self.sequence.before(tool, arguments)
        step, raw = self.harness.wire.call(tool, arguments)
        self.harness.stats.calls += 1
        outcome = "ok" if step.ok else step.error
        self.sequence.trace.append(f"{tool}({json.dumps(arguments, ensure_ascii=False)[:400]}) -> {outcome}")
        problem = self.harness.wire.check(tool, arguments, raw)
        if problem:
            self.sequence.fail(f"{tool}: {problem}")
        if not step.ok or step.result is None:
            return
        self.results.setdefault(tool, []).append((arguments, step.result))
        self.sequence.after(step)

    def follow(self, edge: Edge, pick: random.Random, generated: dict[str, Any]) -> None:
        """Follow `edge` from a result its source gave earlier: its fields filled from that result, the rest
        of the target's input `generated`; a resource is read."""
        # what the results hold depends on the server: picked with `pick`, so that the draws hypothesis
        # records stay the same whatever the server answered
        arguments, result = pick.choice(self.results[edge.source])
        filled: dict[str, Any] = {}
        for name, source in edge.fields:
            choices = source.choices(result, arguments)
            if not all(choices):
                return  # the result has nothing to pass (an empty list, a null chart): not a step
            filled[name] = source.fill([pick.choice(c) for c in choices])
        self.sequence.follow()
        if edge.target.kind == "resource":
            self.read(edge.target.uri, filled)
            return
        call = {**generated, **filled}
        rejected = [e.message for e in self.harness.validators[edge.target.name].iter_errors(call)]
        if rejected:
            self.sequence.trace.append(f"{edge.target.name}({json.dumps(call, ensure_ascii=False)[:400]}) not sent")
            self.sequence.fail(
                f"link {edge.label} gives {edge.target.name} an input its schema rejects: {rejected[0][:200]}"
            )
        self.run(edge.target.name, call)

    def read(self, template: str, filled: Mapping[str, object]) -> None:
        """Read the resource at the URI `template` with its parameters `filled`."""
        uri = template
        for name, value in filled.items():
            uri = uri.replace("{" + name + "}", urllib.parse.quote(str(value), safe=""))
        self.sequence.trace.append(f"read {uri}")
        problem = self.harness.wire.read(uri)
        if problem:
            self.sequence.fail(problem)

    def teardown(self) -> None:
        """Count the sequence once it ends."""
        self.sequence.end()


def root_rule(node: Node, arguments: st.SearchStrategy[Any]) -> Callable[..., None]:
    """The rule that calls the root `node` again, with `arguments`."""

    @rule(arguments=arguments)
    def start(self: Workflows, arguments: dict[str, Any]) -> None:
        self.run(node.name, arguments)

    start.__name__ = f"call_{node.name}"
    return start


def link_rule(edge: Edge, rest: st.SearchStrategy[Any]) -> Callable[..., None]:
    """The rule that follows `edge` once its source has given a result, the target's other fields from `rest`."""

    def ready(self: Workflows) -> bool:
        return bool(self.results.get(edge.source))

    @precondition(ready)
    @rule(pick=st.randoms(use_true_random=True), generated=rest)
    def follow(self: Workflows, pick: random.Random, generated: dict[str, Any]) -> None:
        self.follow(edge, pick, generated)

    follow.__name__ = f"follow_{edge.source}_to_{edge.target.name}".replace("-", "_")
    return follow


def first_step(starts: st.SearchStrategy[tuple[str, dict[str, Any]]]) -> Callable[..., None]:
    """The first call of every sequence: a (root, arguments) pair from `starts`."""

    @initialize(start=starts)
    def begin(self: Workflows, start: tuple[str, dict[str, Any]]) -> None:
        self.run(*start)

    return begin


def machine(
    roots: dict[str, Node], edges: list[Edge], wire: Wire, invariants: list[Invariant], stats: Stats
) -> type[RuleBasedStateMachine]:
    """The state machine class for one graph and one connection."""
    strategies = Strategies()
    # from a spec example where there is one: a realistic start that gives the links something to pass
    starts = st.one_of(
        *(
            st.tuples(st.just(n.name), st.sampled_from(n.examples) if n.examples else strategies.arguments(n))
            for n in roots.values()
        )
    )
    validators = {
        n.name: jsonschema_rs.Draft202012Validator(n.input_schema)
        for n in [*roots.values(), *(e.target for e in edges)]
        if n.kind == "tool"
    }
    namespace: dict[str, Any] = {
        "harness": Harness(wire, invariants, stats, validators),
        "begin": first_step(starts),
    }
    for node in roots.values():
        namespace[f"call_{node.name}"] = root_rule(node, strategies.arguments(node))
    for i, edge in enumerate(edges):
        rest = strategies.arguments(edge.target) if edge.target.kind == "tool" else st.just({})
        namespace[f"follow_{i}_{edge.source}_to_{edge.target.name}"] = link_rule(edge, rest)
    return type("Workflows", (Workflows,), namespace)


def run(connect: Callable[[], AbstractAsyncContextManager[Any]], walk: Walk) -> Stats:
    """Walk the link graph as `walk` says; `connect()` gives the MCP client (entered on the fuzz's own event
    loop). Returns the counts, and the first failure as a sequence."""
    from generated.registry import SERVICES

    roots, edges = graph(walk.tree)
    if not roots:
        return Stats()  # no links: nothing to walk
    invariants = walk.checked()
    bindings = {t.name: t for svc in SERVICES.values() for t in svc.tools}
    declared = {n: {*b.errors, *b.policy.codes(), "RATE_LIMITED"} for n, b in bindings.items()}
    stats = Stats()
    loop = Loop()
    try:
        with loop.hold(connect) as client:
            return _walk(loop, client, roots, edges, invariants, declared, stats, walk)
    finally:
        loop.close()


def _walk(
    loop: Loop,
    client: Client[Any],
    roots: dict[str, Node],
    edges: list[Edge],
    invariants: list[Invariant],
    declared: dict[str, set[str]],
    stats: Stats,
    walk: Walk,
) -> Stats:
    tools = {t.name: t for t in loop.run(client.list_tools())}
    workflows = machine(roots, edges, Wire(loop, client, tools, declared, stats), invariants, stats)
    run_machine(workflows, walk, stats)
    return stats


MAX_SUITES = 20
"""At most this many runs of the machine (a new seed each) to reach the sequences asked for."""


def run_machine(workflows: type[RuleBasedStateMachine], walk: Walk, stats: Stats) -> None:
    """Run the machine (either transport's) until `walk.sequences` sequences have run or one failed; the
    first failure ends up in `stats.failure` (a rule's own report, else the exception that ended the run),
    with what hypothesis reported on the way; on a pass nothing it reported is printed.

    The server's state outlives each sequence, and a rule's precondition reads what the server answered,
    so hypothesis may see a prefix it knows draw otherwise (FlakyStrategyDefinition). That is not the
    server's fault: like schemathesis' own engine, go on with the next seed for the sequences left
    (`stats.restarts`). Met while replaying a failure, it is the failure's replay meeting another server
    state: the failure stands. A failure that does not happen again (FlakyFailure) is one, not a restart."""
    stats.invariants = len(walk.checked())
    reports: list[str] = []
    with with_reporter(lambda report: reports.append(str(report))):  # a restart's reports: noise on a pass
        for attempt in range(MAX_SUITES):
            remaining = walk.sequences - stats.sequences
            if remaining <= 0 or stats.failure:
                break
            try:
                run_state_machine_as_test(
                    fixed_seed(walk.seed + attempt)(workflows), settings=walk_settings(remaining, walk.steps)
                )
            except FlakyStrategyDefinition:
                if stats.failure is None:
                    stats.restarts += 1
            except Exception as exc:
                stats.failure = stats.failure or f"{type(exc).__name__}: {str(exc)[:2000]}"
    if stats.failure and reports:  # the steps hypothesis reported belong with the failure
        stats.failure += "\n" + "\n".join(reports)[-4000:]


def walk_settings(sequences: int, steps: int) -> settings:
    """Hypothesis' budget for a walk (both transports): `sequences` sequences of at most `steps` calls,
    no example database (CI repeats the fixed seed instead), no per-example deadline (a call has its own)."""
    return settings(
        max_examples=sequences,
        stateful_step_count=steps,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )
