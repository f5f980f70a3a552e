"""`make lint-openapi`: Redocly CLI and Spectral, pinned, on the OpenAPI document; 0 errors or it fails.

Generators and linters nobody here wrote read generated/openapi.json (and what /schema/openapi.json
serves): an example that does not validate, a reference into a property or scopes on an `http`
scheme break them (issue 46). Two linters with their recommended rulesets check the document, each
with the project's config when it has one:

- Redocly CLI, `recommended-strict` (every recommended warning an error) from `.redocly.yaml`;
- Spectral, `spectral:oas` from `.spectral.yaml`, run with `--fail-severity=warn`.

So a new finding fails; what stays a warning is listed in those files, each with its reason (a project
without them is linted with what `kumitate init` writes into a new one, codegen/scaffold/templates). Both
run on the generated document and on the document a running server serves with an identity provider and
a public URL configured (kumitate.policies.discovery.served_openapi adds an openIdConnect scheme and its
scopes, and the server); then the same for a new project, scaffolded by `kumitate init` from this
kumitate, so what the generator gives every team is held to it too. They are installed with npm (pinned,
with Node 22 from npm as codegen.conformance does: Redocly 2 needs Node 20.19 or later, Debian has 18)
under var/openapi-lint/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from codegen import npm

REDOCLY = "@redocly/cli@2.77.0"
SPECTRAL = "@stoplight/spectral-cli@6.16.3"
REDOCLY_CONFIG = ".redocly.yaml"
SPECTRAL_CONFIG = ".spectral.yaml"
DEFAULT_CONFIGS = {
    REDOCLY_CONFIG: Path(__file__).parent / "scaffold" / "templates" / "redocly.yaml.jinja",
    SPECTRAL_CONFIG: Path(__file__).parent / "scaffold" / "templates" / "spectral.yaml.jinja",
}
"""What a project without its own config is linted with: what `kumitate init` writes into a new one."""
SERVED_ENV = {
    "KUMITATE_OAUTH_ISSUER": "https://login.example.org/realms/kumitate",
    "KUMITATE_OAUTH_AUDIENCE": "kumitate",
    "KUMITATE_PUBLIC_URL": "https://tools.example.org",
}
"""The configuration under which the served document differs most from the generated one."""
RUN_TIMEOUT_S = 300


def install(cache: Path) -> Path:
    """The directory of the linters' executables under `cache`, installed with npm when missing."""
    return npm.install(cache, [REDOCLY, SPECTRAL], ["redocly", "spectral"], "lint-openapi")


def commands(bin_dir: Path, document: Path, configs: dict[str, Path]) -> dict[str, list[str]]:
    """The two linters' command lines on `document`: each fails (exits non-zero) on an error only."""
    return {
        "redocly": [
            str(bin_dir / "redocly"),
            "lint",
            str(document),
            "--config",
            str(configs[REDOCLY_CONFIG]),
            "--format=stylish",
            "--max-problems=200",
        ],
        "spectral": [
            str(bin_dir / "spectral"),
            "lint",
            str(document),
            "--ruleset",
            str(configs[SPECTRAL_CONFIG]),
            "--fail-severity=warn",
            "--format=text",
        ],
    }


def lint(bin_dir: Path, document: Path, configs: dict[str, Path], label: str) -> bool:
    """Both linters on `document`, their output printed; whether both passed."""
    env = npm.node_env(bin_dir)
    env["REDOCLY_TELEMETRY"] = "off"  # no calls home from CI
    env["REDOCLY_SUPPRESS_UPDATE_NOTICE"] = "true"
    ok = True
    for name, command in commands(bin_dir, document, configs).items():
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        lines = [ln for ln in (done.stdout + done.stderr).splitlines() if not _banner(ln)]
        verdict = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
        print(f"== {name} on {label}: {verdict}")
        print("\n".join(lines).strip())
        ok = ok and done.returncode == 0
    return ok


def _banner(line: str) -> bool:
    """Redocly's boxed notices (Node.js end of life, updates): not findings."""
    return line.strip()[:1] in {"╔", "║", "╚"}


def configs_of(root: Path) -> dict[str, Path]:
    """The project's linter configs, or a new project's where it has none."""
    return {name: root / name if (root / name).exists() else default for name, default in DEFAULT_CONFIGS.items()}


def lint_project(bin_dir: Path, root: Path, scratch: Path, served: bool, label: str) -> bool:
    """Both linters on the project at `root`: its generated/openapi.json and, with `served`, the document
    a server of it serves with an identity provider and a public URL configured."""
    from codegen.testing import serve
    from kumitate.project import Project

    project = Project.at(root)
    configs = configs_of(project.root)
    ok = lint(bin_dir, project.openapi, configs, f"{label} {project.openapi.relative_to(project.root)}")
    if served:
        with serve(project.root, scratch / "var", **SERVED_ENV) as server:
            answer = httpx.get(f"{server.url}/schema/openapi.json", timeout=30)
            answer.raise_for_status()
        document = scratch / "served-openapi.json"
        document.write_bytes(answer.content)
        ok = lint(bin_dir, document, configs, f"{label} served document (issuer and public URL configured)") and ok
    return ok


def main(argv: list[str] | None = None) -> int:
    """`python -m codegen.openapi_lint`: lint the generated document and the served one, this project's and
    a new project's (`kumitate init`, from this kumitate); exit 1 on an error or an unlisted warning."""
    parser = argparse.ArgumentParser(prog="python -m codegen.openapi_lint", description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("var/openapi-lint"), help="where npm installs the linters")
    parser.add_argument("--no-served", action="store_true", help="lint only generated/openapi.json (no server)")
    parser.add_argument("--no-new-project", action="store_true", help="do not lint a new project's document too")
    args = parser.parse_args(argv)
    from kumitate.project import Project

    root = Project.discover().root
    bin_dir = install(args.cache.resolve())
    with tempfile.TemporaryDirectory(prefix="kumitate-openapi-lint-") as tmp:
        (Path(tmp) / "this").mkdir()
        ok = lint_project(bin_dir, root, Path(tmp) / "this", not args.no_served, "this project's")
        if not args.no_new_project:
            new = Path(tmp) / "new_project"
            init = [sys.executable, "-m", "kumitate.cli", "init", str(new / "project")]
            done = subprocess.run(init, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
            if done.returncode != 0:
                raise SystemExit(f"lint-openapi: kumitate init failed:\n{done.stdout}{done.stderr}")
            ok = lint_project(bin_dir, new / "project", new, not args.no_served, "a new project's") and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
