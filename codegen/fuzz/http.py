"""`make fuzz`: schemathesis against every HTTP operation of a real server, all phases, fixed seed.

`python -m codegen.fuzz.http` in a project (this repository, or one made by `kumitate init`: its
`make fuzz`) serves the project with `kumitate serve` and fuzzes its OpenAPI document; needs
schemathesis (this repository's and a new project's dev extra). The JUnit report goes to st-report/.

The expected statuses for schema-valid input are derived from the spec: 2xx plus
the statuses of the errors each tool declares (and its policies imply). A
schema-valid request that gets any other status, a 5xx, or a body that breaks
the documented schema is a failure.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from codegen import specs
from codegen.openapi import policy_errors
from codegen.testing import serve
from kumitate.project import Project


def config_toml(tree: specs.SpecTree, max_examples: int) -> str:
    lines = ["[generation]", f"max-examples = {max_examples}", 'database = "none"', ""]
    entries = [(t.http_method, t.http_path, t.errors + policy_errors(t.policy)) for t in tree.all_tools()]
    entries += [
        ("GET", r.http_path, [*r.errors, "NOT_FOUND", *policy_errors(r.policy)])
        for s in tree.services
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.fuzz.http", description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--port", type=int, default=0, help="unused; a free port is chosen")
    parser.add_argument("--max-examples", type=int, default=25)
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
                "examples,coverage,fuzzing,stateful",
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
            if code:
                print(server.log.read_text(errors="replace")[-4000:], file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
