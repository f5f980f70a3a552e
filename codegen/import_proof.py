"""Prove `kumitate import openapi` lossless over real OpenAPI documents (tests/data/openapi-corpus).

For each document, in a throwaway project: import it as a facade (`--forward` to a stub of the API),
generate and lint the project, compare the original with the regenerated OpenAPI document by an
independent differ (Optic, codegen.openapi_diff), then serve the facade in front of the stub and run
the imported examples over HTTP and MCP and schemathesis against the facade's own document.

The stub is Prism (codegen.prism): a mock server of the original document (codegen.proof_stub's copy)
that validates every request it gets against that document and answers with the document's examples.
So a passing run says the facade's requests are ones the real API accepts and its answers ones the real
API gives, both judged by the original document, not by our reading of it. The stub's copy drops
`security` (the API, not the stub, judges credentials; the facade passes the caller's on).

The regenerated document is served under /v1/<service>; that prefix is removed before the comparison,
as a change of server URL would be. `python -m codegen.import_proof [SLUG ...] [--results FILE]` runs it
and writes the per-document table (tests/data/openapi-corpus/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from codegen import openapi_diff, specs
from codegen.fuzz.http import config_toml
from codegen.prism import prism
from codegen.proof_stub import stub_document
from codegen.testing import serve

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests/data/openapi-corpus"
PROOF = CORPUS / "proof.yaml"
"""What the proof holds: the breaking changes Optic finds that are deliberate, each with the reason
(`accepted`: a regular expression over the change's text, for every document or the ones it names; any
other breaking change fails the proof), the documents Optic cannot compare (`unable`), and the documents
CI proves on every change (`proven`)."""
SCAFFOLD_ERRORS = Path(__file__).with_name("scaffold") / "errors.yaml"
FUZZ_HEADERS = ("X-Run-Id: import-proof", "Authorization: Bearer import-proof")


@dataclass
class Proof:
    """What one document's proof found: each step's verdict (`ok`, or what failed) and the differences."""

    slug: str
    service: str
    operations: int = 0
    examples: int = 0
    """Spec examples run (each over HTTP and over MCP)."""
    summary: str = ""
    """The importer's one-line account (operations, parts not carried, wire adaptations)."""
    steps: dict[str, str] = field(default_factory=dict)
    breaking: list[openapi_diff.BreakingChange] = field(default_factory=list)
    explained: dict[str, int] = field(default_factory=dict)
    """Why (proof.yaml) -> how many of `breaking` it explains."""
    unexplained: list[openapi_diff.BreakingChange] = field(default_factory=list)
    """The breaking changes no entry of proof.yaml explains (each fails the differ step)."""
    not_compared: str = ""
    """What the differ did not compare, and why (proof.yaml `unable:`): the document, or some operations."""
    uncompared: int = 0
    """How many operations the differ did not compare; 0 with `not_compared` set: the whole document."""
    report: str = ""
    """The importer's IMPORT-REPORT.md: what was not carried over, and what the wire adapts."""

    @property
    def passed(self) -> bool:
        """Every step ok."""
        return all(verdict == "ok" for verdict in self.steps.values())


@dataclass(frozen=True)
class Difference:
    """A kind of breaking change the regeneration makes on purpose (proof.yaml)."""

    match: re.Pattern[str]
    why: str
    documents: frozenset[str] = frozenset()
    """The documents it is expected in; empty: any."""

    def explains(self, slug: str, change: openapi_diff.BreakingChange) -> bool:
        """Whether this entry accounts for `change` found in document `slug`."""
        return (not self.documents or slug in self.documents) and bool(self.match.search(str(change)))


def _proof_file(path: Path) -> dict[str, object]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    return data if isinstance(data, dict) else {}


def differences(path: Path = PROOF) -> list[Difference]:
    """The accepted differences (`accepted:`), in file order (the first that matches a change explains it)."""
    entries = _proof_file(path).get("accepted")
    return [
        Difference(re.compile(str(e["match"])), " ".join(str(e["why"]).split()), frozenset(e.get("documents", ())))
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict)
    ]


def proven(path: Path = PROOF) -> list[str]:
    """The documents every CI run proves (`proven:`): each passed every step when it was listed."""
    entries = _proof_file(path).get("proven")
    return [str(e) for e in entries] if isinstance(entries, list) else []


def not_comparable(path: Path = PROOF) -> dict[str, str]:
    """Documents the differ cannot compare (`unable:`), with why: the proof says so instead of running it."""
    entries = _proof_file(path).get("unable") or {}
    return {str(k): " ".join(str(v).split()) for k, v in entries.items()} if isinstance(entries, dict) else {}


def by_operation(path: Path = PROOF) -> dict[str, str]:
    """Documents the differ compares one operation at a time (`by_operation:`), with why: Optic does not
    finish them whole (codegen.openapi_diff.breaking_changes_by_operation)."""
    entries = _proof_file(path).get("by_operation") or {}
    return {str(k): " ".join(str(v).split()) for k, v in entries.items()} if isinstance(entries, dict) else {}


def corpus() -> list[tuple[str, Path]]:
    """(slug, entry document) of every corpus document, from its index."""
    index = yaml.safe_load((CORPUS / "index.yaml").read_text(encoding="utf-8"))
    entries = index["documents"] if isinstance(index, dict) else index
    return [(str(e["slug"]), CORPUS / str(e["slug"]) / str(e["entry"])) for e in entries]


def service_name(slug: str) -> str:
    """A service name for a corpus slug (snake_case, at most 32 characters)."""
    name = re.sub(r"[^a-z0-9]+", "_", slug.lower()).strip("_")
    return (name if name[:1].isalpha() else f"api_{name}")[:32].rstrip("_")


def _project(root: Path) -> None:
    """The least a project needs: its table in pyproject.toml, the catalogue, a handlers package."""
    (root / "specs").mkdir(parents=True)
    (root / "handlers").mkdir()
    (root / "handlers/__init__.py").write_text("", encoding="utf-8")
    (root / "specs/errors.yaml").write_text(SCAFFOLD_ERRORS.read_text(encoding="utf-8"), encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "import-proof"\nversion = "0.1.0"\n\n[tool.kumitate]\nspecs = "specs"\n', encoding="utf-8"
    )


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> tuple[bool, str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    return done.returncode == 0, (done.stdout + done.stderr).strip()


def _last_lines(text: str, count: int = 12) -> str:
    return "\n".join(text.splitlines()[-count:])


def _regenerated(project: Path, prefix: str, target: Path) -> None:
    """The project's generated document with the service's prefix taken off every path."""
    document = json.loads((project / "generated/openapi.json").read_text(encoding="utf-8"))
    document["paths"] = {
        (path.removeprefix(prefix) or "/"): item for path, item in document["paths"].items() if path.startswith(prefix)
    }
    target.write_text(json.dumps(document), encoding="utf-8")


UPSTREAM_FAILURES = """
[checks.not_a_server_error]
expected-statuses = ["2xx", "3xx", "4xx", "502", "504"]
"""
"""A facade's 502 (UPSTREAM_ERROR) and 504 (UPSTREAM_TIMEOUT) say that the API failed, not the facade: the
stub answered 5xx, or an answer its own document does not allow (Prism's generator cannot satisfy every
schema, and its example answers may break it: Prism flags them itself). The proof fuzzes the facade, so
those are no server error of its; a 500 is. What the facade sends is judged by the stub, whatever it answers
(`_stub_refusals`), and every imported example must succeed through it."""


def _schemathesis(url: str, tree: specs.SpecTree, work: Path, max_examples: int, seed: int) -> tuple[bool, str]:
    config = work / "schemathesis.toml"
    config.write_text(config_toml(tree, max_examples) + UPSTREAM_FAILURES, encoding="utf-8")
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run"]
    command += [f"{url}/schema/openapi.json", "--checks", "all", "--phases", "examples,fuzzing", "--seed", str(seed)]
    for header in FUZZ_HEADERS:
        command += ["-H", header]
    return _run(command, work, timeout=1800)


EXAMPLES_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from fastmcp import Client
from codegen import specs
from codegen.examples import all_examples
from codegen.testing import examples_over_http, examples_over_mcp
from kumitate.project import Project

project = Project.at(Path.cwd())
project.activate()
tree = specs.load(project.specs)
# the stub answers an operation's first example to every request: only each tool's first success example,
# and every error example, can be reproduced through it
for tool in tree.all_tools():
    successes = [ex for ex in tool.examples if ex.error is None]
    tool.examples = [ex for ex in tool.examples if ex.error is not None or ex is successes[0]]
url = sys.argv[1]
headers = {"Authorization": "Bearer import-proof"}
over_http = asyncio.run(examples_over_http(tree, url, headers))
over_mcp = asyncio.run(examples_over_mcp(tree, Client(url + "/mcp", auth="import-proof")))
print(json.dumps({"count": len(all_examples(tree)), "http": over_http, "mcp": over_mcp}))
"""
"""Run in the project (its generated package, not this repository's, says which services it serves)."""


def _examples(url: str, project: Path) -> tuple[int, list[str], list[str]]:
    """How many spec examples ran, and the failures over HTTP and over MCP (streamable HTTP)."""
    ok, said = _run([sys.executable, "-c", EXAMPLES_SCRIPT, url], project)
    line = next((line for line in reversed(said.splitlines()) if line.startswith('{"count"')), None)
    if not ok or line is None:
        return 0, [_last_lines(said)], [_last_lines(said)]
    result = json.loads(line)
    return int(result["count"]), list(result["http"]), list(result["mcp"])


def _failures(said: str) -> str:
    """The first failures schemathesis reports (what failed, where, and the curl that reproduces it),
    then its summary's failure counts."""
    lines = said.splitlines()
    start = next((i for i, line in enumerate(lines) if "FAILURES" in line), 0)
    counts = [line.strip() for line in lines if line.strip().startswith("❌ ST")]
    return "\n".join([*lines[start : start + 40], *counts])


def _stub_refusals(log: Path) -> list[str]:
    """The forwarded requests the stub refused as not matching the original document (no such path, or
    a request its validator rejects): a facade that is lossless sends none."""
    refused = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if "Violation: response." in line:  # Prism judging its own answer (the document's example), not ours
            continue
        if "NO_PATH_MATCHED_ERROR" in line or "UNPROCESSABLE_ENTITY" in line or "[VALIDATOR] ✖" in line:
            refused.append(line.split("›", 1)[-1].strip())
    return refused


def _serve_and_call(
    proof: Proof, project: Path, tree: specs.SpecTree, work: Path, stub: Path, max_examples: int, seed: int
) -> None:
    """The facade served in front of the stub: the examples over HTTP and MCP, schemathesis, and whether the
    stub refused any request the facade forwarded.

    The fuzz runs against the stub answering the document's examples; where that fails, once more against
    the stub making its answers up from the response schemas, and it passes if either run does. Each stub
    fails in its own way on real documents (examples that break their own schema, Xero's amounts as
    strings; a generator that cannot satisfy a `oneOf`, or answers 500 and opens the facade's breaker),
    while a fault of the facade fails both; whatever either stub refuses fails the document regardless."""
    upstream_url = f"KUMITATE_{proof.service.upper()}_UPSTREAM_URL"
    # kumitate's own tokens, as `make fuzz` sets them: the facade of a secured API asks for one (ST401)
    env = {"KUMITATE_TOKENS": '{"import-proof": {"principal": "proof", "scopes": ["*"]}}'}
    env["KUMITATE_AUTH_FAILURES"] = "100000/100000"
    logs = [work / "prism.log"]
    with (
        prism(stub, logs[0]) as upstream,
        serve(project, work / "var", **env, **{upstream_url: upstream}) as facade,
    ):
        proof.examples, over_http, over_mcp = _examples(facade.url, project)
        proof.steps["examples over HTTP"] = "ok" if not over_http else "; ".join(over_http[:3])
        proof.steps["examples over MCP"] = "ok" if not over_mcp else "; ".join(over_mcp[:3])
        ok, said = _schemathesis(facade.url, tree, work, max_examples, seed)
    if not ok:
        logs.append(work / "prism-dynamic.log")
        with (
            prism(work / "stub-dynamic.json", logs[1], dynamic=True, seed=seed) as upstream,
            serve(project, work / "var-fuzz", **env, **{upstream_url: upstream}) as facade,
        ):
            ok, again = _schemathesis(facade.url, tree, work, max_examples, seed)
        said = f"{said}\n--- against the generating stub ---\n{again}"
    (work / "schemathesis.log").write_text(said, encoding="utf-8")
    proof.steps["schemathesis"] = "ok" if ok else _failures(said.rpartition("--- against the generating stub ---")[2])
    refused = [line for log in logs for line in _stub_refusals(log)]
    proof.steps["stub accepted every request"] = "ok" if not refused else f"{len(refused)}: {refused[0]}"


def prove(slug: str, entry: Path, work: Path, *, max_examples: int = 3, seed: int = 20261207) -> Proof:
    """One document's proof in `work` (a fresh directory); stops at the first step that cannot go on."""
    service = service_name(slug)
    proof = Proof(slug, service)
    project = work / "project"
    _project(project)
    prefix = f"/v1/{service}"
    stub = work / "stub.json"
    stub_document(entry, stub)
    stub_document(entry, work / "stub-dynamic.json", dynamic=True)
    port_hint = "http://127.0.0.1:9"  # replaced by the stub's address when it serves (the env var below)
    command = [sys.executable, "-m", "kumitate", "import", "openapi", str(entry), "--service", service]
    ok, said = _run([*command, "--forward", port_hint, "--base-path", prefix], project)
    proof.summary = next((line for line in said.splitlines() if line.startswith("imported ")), said[-300:])
    match = re.search(r"imported (\d+) operation", proof.summary)
    proof.operations = int(match.group(1)) if match else 0
    proof.steps["import"] = "ok" if ok else _last_lines(said)
    if not ok:
        return proof
    report = project / "specs" / service / "IMPORT-REPORT.md"
    proof.report = report.read_text(encoding="utf-8") if report.is_file() else ""
    for step, argv in (("generate", ["--check"]), ("lint", ["--lint"])):
        ok, said = _run([sys.executable, "-m", "codegen", *argv], project)
        proof.steps[step] = "ok" if ok else _last_lines(said)
    regenerated = work / "regenerated.json"
    _regenerated(project, prefix, regenerated)
    proof.steps["differ"] = _differ(proof, entry, regenerated)
    tree = specs.load(project / "specs")
    try:
        _serve_and_call(proof, project, tree, work, stub, max_examples, seed)
    except RuntimeError as exc:  # the stub or the facade did not start: a step that failed, not a crash
        proof.steps["serve"] = _last_lines(str(exc))
    return proof


def _differ(proof: Proof, entry: Path, regenerated: Path) -> str:
    """The differ step's verdict: Optic's breaking changes between the original and the regenerated
    document, whole or one operation at a time (proof.yaml `by_operation:`), each explained by proof.yaml or a failure; a
    document or a path it cannot compare is a failure too (proof.yaml `unable:` says why, if it is known)."""
    unable = not_comparable().get(proof.slug)
    if unable is not None:
        proof.not_compared = unable
        return f"not compared: {unable}"
    missed: dict[str, str] = {}
    try:
        if proof.slug in by_operation():
            split = openapi_diff.breaking_changes_by_operation(entry, regenerated)
            proof.breaking, missed = split.changes, split.not_compared
        else:
            proof.breaking = openapi_diff.breaking_changes(entry, regenerated)
    except openapi_diff.DiffFailed as exc:
        return str(exc)
    unexplained = proof.unexplained = _explain(proof, differences())
    problems = [f"{len(unexplained)} unexplained, e.g. {unexplained[0]}"] if unexplained else []
    known = {op: not_comparable().get(f"{proof.slug} {op}") for op in missed}
    if any(known.values()):
        proof.not_compared = "; ".join(f"{op}: {why}" for op, why in known.items() if why)
        proof.uncompared = sum(1 for why in known.values() if why)
    unknown = {op: why for op, why in missed.items() if not known[op]}
    if unknown:
        listed = "; ".join(f"{op}: {why}" for op, why in unknown.items())
        problems.append(f"{len(unknown)} operation(s) not compared: {listed}")
    return "; ".join(problems) or "ok"


def _explain(proof: Proof, accepted: list[Difference]) -> list[openapi_diff.BreakingChange]:
    """Count each breaking change under the first difference that explains it; the ones none does."""
    unexplained = []
    for change in proof.breaking:
        why = next((d.why for d in accepted if d.explains(proof.slug, change)), None)
        if why is None:
            unexplained.append(change)
        else:
            proof.explained[why] = proof.explained.get(why, 0) + 1
    return unexplained


def results_table(proofs: list[Proof]) -> str:
    """The per-document table of RESULTS: each step's verdict, and Optic's breaking changes (explained by
    proof.yaml / not)."""
    steps = ["import", "generate", "lint", "examples over HTTP", "examples over MCP", "schemathesis"]
    steps.append("stub accepted every request")
    lines = [
        "| document | ops | verdict | import | generate | lint | breaking: explained / not | examples HTTP, MCP"
        " | schemathesis | stub accepted all |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in proofs:
        verdict = {step: ("ok" if p.steps.get(step) == "ok" else "FAIL" if step in p.steps else "-") for step in steps}
        explained = sum(p.explained.values())
        breaking = f"{explained} / {len(p.breaking) - explained}" if "differ" in p.steps else "-"
        if p.not_compared:
            breaking += f" ({p.uncompared or 'document'} not compared)"
        lines.append(
            f"| {p.slug} | {p.operations} | **{'PASS' if p.passed else 'FAIL'}** | {verdict['import']}"
            f" | {verdict['generate']} | {verdict['lint']} | {breaking}"
            f" | {verdict['examples over HTTP']}, {verdict['examples over MCP']} | {verdict['schemathesis']}"
            f" | {verdict['stub accepted every request']} |"
        )
    passed = sum(p.passed for p in proofs)
    return "\n".join(lines) + f"\n\n{passed} of {len(proofs)} documents pass every step.\n"


RESULTS_INTRO = """# Importing real APIs: the corpus

`make import-proof` (codegen/import_proof.py) imports each document of tests/data/openapi-corpus
(24 public OpenAPI 3.0/3.1 documents, with their licences) as a facade, and for each one: generates and
lints the project; compares the original with the regenerated document by Optic's breaking-change rules
(codegen/openapi_diff.py), every change found either explained in tests/data/openapi-corpus/proof.yaml
or a failure; serves the facade in front of Prism mocking the original (which validates every forwarded
request against the original document) and runs the imported examples over HTTP and MCP and schemathesis
against the facade. This page is its output (`python -m codegen.import_proof --results docs/import-corpus.md`).
"""


def results(proofs: list[Proof]) -> str:
    """RESULTS: the table, then per document what was carried over and what was not."""
    parts = [RESULTS_INTRO, results_table(proofs)]
    for p in proofs:
        parts.append(f"## {p.slug}\n\n{p.summary}\n")
        failed = {step: verdict for step, verdict in p.steps.items() if verdict != "ok"}
        for step, verdict in failed.items():
            parts.append(f"- **{step} failed**: {' '.join(verdict.split())[:500]}")
        if p.not_compared:
            parts.append(f"- not compared by Optic: {p.not_compared}")
        for why, count in p.explained.items():
            parts.append(f"- {count} breaking change(s) by design: {why}")
        report = p.report.split("\n", 1)[1] if p.report.startswith("#") else p.report
        if report.strip():
            parts.append("\n" + re.sub(r"^#", "###", report.strip(), flags=re.M) + "\n")
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Prove the named corpus documents (default: all); print each verdict; exit 1 if any failed."""
    parser = argparse.ArgumentParser(prog="python -m codegen.import_proof", description=__doc__.splitlines()[0])
    parser.add_argument("slugs", nargs="*")
    parser.add_argument("--proven", action="store_true", help="only the documents proof.yaml lists as proven (CI)")
    parser.add_argument("--max-examples", type=int, default=3)
    parser.add_argument("--results", type=Path, help="write the per-document table (markdown) here")
    args = parser.parse_args(argv)
    wanted = set(args.slugs) | set(proven()) if args.proven else set(args.slugs)
    chosen = [(slug, entry) for slug, entry in corpus() if slug in wanted or not (wanted or args.proven)]
    proofs = []
    for slug, entry in chosen:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"import-proof-{slug}-") as tmp:
            proof = prove(slug, entry, Path(tmp), max_examples=args.max_examples)
        proofs.append(proof)
        took = time.monotonic() - started
        print(f"{'PASS' if proof.passed else 'FAIL'} {slug} ({took:.0f} s): {proof.summary}", flush=True)
        for step, verdict in proof.steps.items():
            if verdict != "ok":
                print(f"  {step}: {verdict}")
        for change in proof.unexplained:
            print(f"  breaking, unexplained: {change}")
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(results(proofs), encoding="utf-8")
    return 0 if all(p.passed for p in proofs) else 1


if __name__ == "__main__":
    sys.exit(main())
