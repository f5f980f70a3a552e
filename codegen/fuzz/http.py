"""`make fuzz`: schemathesis against every HTTP operation of a real server, then its links walked; fixed seed.

`python -m codegen.fuzz.http` in a project (this repository, or one made by `kumitate init`: its
`make fuzz`) serves the project with `kumitate serve` and fuzzes its OpenAPI document; needs
schemathesis (this repository's and a new project's dev extra). The JUnit report goes to st-report/.

The expected statuses for schema-valid input are derived from the spec: 2xx plus
the statuses of the errors each tool declares (and its policies imply). A
schema-valid request that gets any other status, a 5xx, or a body that breaks
the documented schema is a failure. The stateful phase (sequences following the
spec's links, with the services' invariants) runs in codegen.fuzz.http_stateful.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from codegen import specs
from codegen.testing import serve
from kumitate.project import Project


def config_toml(tree: specs.SpecTree, max_examples: int) -> str:
    """schemathesis's config: its hooks (codegen.fuzz.forms: form fields in their documented style), its
    generation settings, and per operation the error codes the spec declares, so a declared error is an
    answer and not a failure."""
    lines = [
        'hooks = "codegen.fuzz.forms"',
        "",
        "[generation]",
        f"max-examples = {max_examples}",
        'database = "none"',
        "",
    ]
    entries = [(t.http_method, t.http_path, [*t.errors, *sorted(t.rules.codes())]) for t in tree.default_tools()]
    entries += [
        ("GET", r.http_path, [*r.errors, "NOT_FOUND", *sorted(r.rules.codes())])
        for s in tree.services
        if not s.opt_in
        for r in s.resources
    ]
    for method, path, codes in entries:
        statuses = sorted({str(tree.errors[c].status) for c in codes if c in tree.errors} | {"2xx"})
        lines += [
            "[[operations]]",
            f'include-name = "{method} {path}"',
            f"checks.positive_data_acceptance.expected-statuses = {statuses!r}".replace("'", '"'),
            "",
        ]
    return "\n".join(lines)


def walk(url: str, config: Path, tree: specs.SpecTree, args: argparse.Namespace) -> int:
    """The stateful phase, run by codegen.fuzz.http_stateful so that it reports what it walked."""
    from codegen.fuzz import http_stateful
    from codegen.fuzz.stateful import Walk

    headers = {"X-Run-Id": "fuzz", "Authorization": "Bearer fuzz-token"}
    walked = http_stateful.run(url, headers, config, Walk(tree, args.sequences, args.steps, args.seed))
    if walked.failure:
        print("FAIL (stateful)", walked.failure)
    print(
        f"HTTP stateful fuzz: {walked.sequences} sequences, {walked.multi_step} multi-step (longest"
        f" {walked.longest} requests), {walked.links_followed} links followed, {walked.calls} requests,"
        f" {walked.invariant_words}, {int(bool(walked.failure))} failures (seed {args.seed},"
        f" {walked.restarts} restarts)"
    )
    return 1 if walked.failure else 0


def main(argv: list[str] | None = None) -> int:
    """`make fuzz` (HTTP side) from the command line: serve the project, run schemathesis against it
    (and the stateful walk of the links); the exit status says whether the contract held."""
    parser = argparse.ArgumentParser(prog="python -m codegen.fuzz.http", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--port", type=int, default=0, help="unused; a free port is chosen")
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("--sequences", type=int, default=250, help="stateful: sequences walking the links (0: none)")
    parser.add_argument("--steps", type=int, default=6, help="stateful: at most this many requests per sequence")
    args = parser.parse_args(argv)
    project = Project.discover()
    tree = specs.load(project.specs)
    with tempfile.TemporaryDirectory(prefix="kumitate-fuzz-") as tmp:
        root = Path(tmp)
        config = root / "schemathesis.toml"
        config.write_text(config_toml(tree, args.max_examples), encoding="utf-8")
        tokens = '{"fuzz-token": {"principal": "fuzz", "scopes": ["*"]}}'
        # schemathesis sends wrong tokens on purpose (ST401): the failed-auth limiter, which would then
        # refuse the right token too, is opened wide here; it has its own tests (tests/runtime/test_authguard.py)
        with serve(
            project.root, root / "var", KUMITATE_TOKENS=tokens, KUMITATE_AUTH_FAILURES="100000/100000"
        ) as server:
            cmd = [
                sys.executable,
                "-m",
                "schemathesis.cli",
                "--config-file",
                str(config),
                "run",
                f"{server.url}/schema/openapi.json",
                "--checks",
                "all",
                "--phases",
                "examples,coverage,fuzzing",
                "--seed",
                str(args.seed),
                "-H",
                "X-Run-Id: fuzz",
                "-H",
                "Authorization: Bearer fuzz-token",
                "--report",
                "junit",
                "--report-dir",
                str(project.root / "st-report"),
            ]
            code = subprocess.run(cmd, cwd=root, check=False).returncode
            if args.sequences:
                code = walk(server.url, config, tree, args) or code
            if code:
                print(server.log.read_text(errors="replace")[-4000:], file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
