"""`kumitate init` and `kumitate new`: a new project passes its own tests at once, and keeps passing
as services, tools and resources are added; a broken spec is reported by file, line and rule."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from codegen import scaffold
from kumitate import cli
from kumitate.policies.spec import GENERIC_CODES, HTTP_EDGE_CODES, RESOURCE_CODES, Policy, RateLimit
from tests.conftest import REPO
from tests.scaffold.conftest import fresh_copy

pytestmark = pytest.mark.slow


def kumitate(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`kumitate <argv>` run in `project`, in this process (a generator command costs a second less than in a
    process of its own, which imports kumitate and codegen first; `python -m kumitate` is test_wheel.py's).
    `kumitate call` imports the project's handlers: it runs in the project's own process (`in_project`)."""
    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.pop("KUMITATE_PROJECT", None)
    try:
        with contextlib.chdir(project), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(list(argv))
            except SystemExit as exc:  # argparse's usage errors (2); a message exits with 1, as the interpreter's
                if isinstance(exc.code, str):
                    print(exc.code, file=err)
                status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        if saved is not None:
            os.environ["KUMITATE_PROJECT"] = saved
    return subprocess.CompletedProcess(["kumitate", *argv], status, out.getvalue(), err.getvalue())


def in_project(project: Path, *argv: str, mypy_cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m <argv>` in the project, as its Makefile runs it (no KUMITATE_* from this process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUMITATE_", "MYPY_"))} | {"PYTHONPATH": str(REPO)}
    if mypy_cache is not None:
        env["MYPY_CACHE_DIR"] = str(mypy_cache)
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )


def project_tests(project: Path) -> subprocess.CompletedProcess[str]:
    return in_project(project, "pytest", "-q", "-p", "no:cacheprovider")


def type_check(project: Path, mypy_cache: Path) -> subprocess.CompletedProcess[str]:
    """The project's mypy (its pyproject's [tool.mypy]): the handlers against the generated protocols."""
    return in_project(project, "mypy", mypy_cache=mypy_cache)


def raises_check(project: Path, mypy_cache: Path) -> subprocess.CompletedProcess[str]:
    """The project's declared-raises check (its `make test` runs it after mypy, on mypy's cache)."""
    return in_project(project, "codegen.raises", mypy_cache=mypy_cache)


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for every project these tests write, as one project keeps its own across runs:
    the libraries a project imports (kumitate, pydantic, fastmcp...) are checked once, not per test.
    A module whose file differs (each project's handlers) is checked again, so no result is reused."""
    return tmp_path_factory.getbasetemp() / "mypy-cache-scaffold"


@pytest.fixture(scope="session")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `kumitate init` writes, once per session (an init takes a second or more)."""
    root = tmp_path_factory.mktemp("init")
    done = kumitate(root, "init", str(root / "my_tools"))
    assert done.returncode == 0, done.stderr
    return root / "my_tools"


@pytest.fixture
def project(tmp_path: Path, initialised: Path) -> Path:
    """A fresh copy of the initialised project, at the same name, for one test to change."""
    return fresh_copy(initialised, tmp_path)


def test_a_new_project_has_a_registry_entry_and_a_server_card(initialised: Path) -> None:
    """`kumitate init`'s codegen run writes generated/server.json, which the MCP registry's schema
    accepts, and the card; both name the new project and its service's endpoint and tools."""
    import json

    import jsonschema

    from codegen import server_json

    document = json.loads((initialised / "generated/server.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(server_json.schema(), format_checker=jsonschema.FormatChecker())
    assert [e.message for e in validator.iter_errors(document)] == []
    assert document["name"] == "local/my_tools"
    endpoints = {e["path"]: e["tools"] for e in document["_meta"][server_json.PUBLISHER_META]["endpoints"]}
    assert endpoints["/mcp/hello"] == ["greet"]
    card = json.loads((initialised / "generated/server-card.json").read_text(encoding="utf-8"))
    assert [t["name"] for t in card["tools"]] == ["greet"]


def test_init_writes_a_project_that_passes_its_own_checks(project: Path) -> None:
    """The files, the drift check and the lint. That the same project passes its own mypy, raises check and
    tests is its `make test` in tests/scaffold/test_package.py (`make test-package`: from the wheel, in the
    project's own venv);
    test_new_service_tool_and_resource_keep_the_tests_green runs them here on a grown project."""
    for path in (
        "pyproject.toml",
        "Makefile",
        "README.md",
        ".ci/run",
        "specs/errors.yaml",
        "specs/hello/tools/greet.yaml",
        "handlers/hello/__init__.py",
        "handlers/hello/settings.py",
        "handlers/hello/core/__init__.py",
        "tests/test_examples.py",
        "tests/test_hello_core.py",
        "generated/hello/models.py",
        "generated/openapi.json",
        ".redocly.yaml",  # `make lint-openapi`: the warnings allowed, with their reasons
        ".spectral.yaml",
    ):
        assert (project / path).is_file(), path
    assert os.access(project / ".ci/run", os.X_OK)
    assert kumitate(project, "generate", "--check").returncode == 0
    assert kumitate(project, "lint").returncode == 0


def test_mypy_and_the_readme_follow_the_handlers(project: Path, mypy_cache: Path) -> None:
    """A handler returning something else than the generated model fails mypy; uncommenting the
    example in settings.py declares HELLO_GREETING, which `generate` lists in the README under the
    service (and the drift check holds the README to it). One project for both: an init costs."""
    handler = project / "handlers/hello/__init__.py"
    correct = handler.read_text()
    handler.write_text(correct.replace("-> models.GreetOutput:", "-> dict[str, str]:"))
    checked = type_check(project, mypy_cache)
    assert checked.returncode == 1 and "HelloHandlers" in checked.stdout, checked.stdout[-3000:]
    handler.write_text(correct)

    settings = project / "handlers/hello/settings.py"
    settings.write_text(settings.read_text().replace("    # greeting: str = var(", "    greeting: str = var("))
    assert kumitate(project, "generate", "--check").returncode == 1  # the README's table is stale
    assert kumitate(project, "generate").returncode == 0
    readme = (project / "README.md").read_text()
    runtime, _, section = readme.partition("### `hello` (`handlers/hello/settings.py`)")
    assert "| `HELLO_GREETING` | `Hello` | the word a greeting starts with |" in section
    assert "| `KUMITATE_DATA_DIR` |" in runtime
    assert kumitate(project, "generate", "--check").returncode == 0


def test_new_service_tool_and_resource_keep_the_tests_green(project: Path, mypy_cache: Path) -> None:
    assert kumitate(project, "new", "tool", "hello", "lookup_word").returncode == 0
    assert kumitate(project, "new", "resource", "hello", "word_list").returncode == 0
    assert kumitate(project, "new", "service", "notes").returncode == 0
    tools = {p.stem for p in (project / "specs").glob("*/tools/*.yaml")}
    assert tools == {"greet", "lookup_word", "notes_status"}
    handler = (project / "handlers/hello/__init__.py").read_text()
    assert "def lookup_word(self, input: models.LookupWordInput, ctx: CallContext) -> models.LookupWordOutput:" in (
        handler
    )
    assert "def read_word_list(self, ctx: CallContext) -> models.WordListResource:" in handler
    for path in ("__init__.py", "settings.py", "core/__init__.py"):
        assert (project / "handlers/notes" / path).is_file(), path
    assert kumitate(project, "generate", "--check").returncode == 0
    checked = type_check(project, mypy_cache)
    assert checked.returncode == 0, checked.stdout[-3000:]
    raised = raises_check(project, mypy_cache)
    assert raised.returncode == 0, raised.stdout[-3000:] + raised.stderr[-3000:]
    done = project_tests(project)
    assert done.returncode == 0, done.stdout[-3000:]
    called = in_project(project, "kumitate", "call", "hello", "lookup_word", "--json", '{"name": "x"}')
    assert called.returncode == 1 and '"NOT_IMPLEMENTED"' in called.stdout
    module = project / "handlers/hello/__init__.py"
    undeclared = (
        module.read_text()
        .replace("import NotImplementedError as", "import InvalidInputError, NotImplementedError as", 1)
        .replace('raise NotImplementedToolError("lookup_word', 'raise InvalidInputError("lookup_word', 1)
    )
    assert "raise InvalidInputError(" in undeclared
    module.write_text(undeclared)
    refused = raises_check(project, mypy_cache)
    assert refused.returncode == 1, refused.stdout[-3000:] + refused.stderr[-3000:]
    assert "hello.lookup_word can raise INVALID_INPUT" in refused.stdout + refused.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["new", "tool", "nope", "x"], "no service 'nope'"),
        (["new", "tool", "hello", "Bad-Name"], "must be snake_case"),
        (["new", "tool", "hello", "greet"], "already exists"),
    ],
)
def test_new_refuses_what_it_cannot_do(project: Path, argv: list[str], message: str) -> None:
    done = kumitate(project, *argv)
    assert done.returncode == 2 and message in done.stderr


def test_a_broken_spec_is_reported_by_file_line_and_rule(project: Path) -> None:
    spec = project / "specs/hello/tools/greet.yaml"
    doc = yaml.safe_load(spec.read_text())
    del doc["mcp"]["annotations"]["readOnlyHint"]
    spec.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    done = kumitate(project, "generate")
    assert done.returncode == 1
    line = next(i for i, text in enumerate(spec.read_text().splitlines(), 1) if "annotations:" in text)
    assert f"specs/hello/tools/greet.yaml:{line}: [KT103]" in done.stderr, done.stderr


def test_init_refuses_a_directory_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(scaffold.ScaffoldError, match="not empty"):
        scaffold.init_project(tmp_path / "x")


def test_the_new_projects_catalogue_keeps_the_runtimes_codes() -> None:
    """codegen/scaffold/errors.yaml is the runtime's part of specs/errors.yaml: the two must agree."""
    ours = yaml.safe_load((REPO / "specs/errors.yaml").read_text())["codes"]
    base = yaml.safe_load(scaffold.BASE_ERRORS.read_text())["codes"]
    assert base == {code: ours[code] for code in base}
    everything = Policy(("s",), False, RateLimit(1, 1), 1, True, 1, 64, "fail", 1024)
    assert GENERIC_CODES | HTTP_EDGE_CODES | RESOURCE_CODES | everything.codes() <= set(base)


def test_make_fuzz_runs_schemathesis_and_the_mcp_fuzz(project: Path) -> None:
    """The new project's `make fuzz` runs what this repository's does, on the project's own server: per call,
    then sequences walking its spec's links (greet links to itself) on both transports."""
    makefile = (project / "Makefile").read_text()
    assert (
        "-m codegen.fuzz.http --seed $(FUZZ_SEED)" in makefile and "-m codegen.fuzz.mcp --seed $(FUZZ_SEED)" in makefile
    )
    http = in_project(project, "codegen.fuzz.http", "--seed", "1", "--max-examples", "3", "--sequences", "8")
    assert http.returncode == 0, http.stdout[-3000:] + http.stderr[-3000:]
    reports = [p.read_text() for p in (project / "st-report").glob("*.xml")]
    assert "No issues found" in http.stdout and any("POST /v1/hello/greet" in r for r in reports), http.stdout
    assert re.search(r"HTTP stateful fuzz: \d+ sequences, [1-9]\d* multi-step .* 0 failures", http.stdout), http.stdout
    mcp = in_project(project, "codegen.fuzz.mcp", "--seed", "1", "--max-examples", "3", "--sequences", "8")
    assert mcp.returncode == 0, mcp.stdout[-3000:] + mcp.stderr[-3000:]
    assert "greet: 3 valid" in mcp.stdout and ", 0 failures" in mcp.stdout
    assert re.search(r"MCP stateful fuzz: \d+ sequences, [1-9]\d* multi-step .* 0 failures", mcp.stdout), mcp.stdout
