"""Spec review in pull requests: the GitHub Actions workflow (this repository's and every new project's)
passes actionlint, the pre-commit hooks are valid and run from this repository with `pre-commit try-repo`,
and spec lint problems become GitHub annotations on their lines under GitHub Actions."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from codegen import scaffold
from codegen.__main__ import main as codegen_main
from tests.conftest import REPO
from tests.scaffold.wheels import installed_dependencies

BIN = Path(sys.executable).parent
REPOSITORY_INSTALL = "python -m pip install -e '.[codegen]'"


def tool(
    name: str, *argv: str | Path, cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / name), *map(str, argv)], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The files `kumitate init` writes (generated/ comes after, from the generator)."""
    scaffold.init_project(tmp_path / "my_tools")
    return tmp_path / "my_tools"


def test_the_repository_workflow_is_the_scaffolds_own() -> None:
    """One workflow, written twice only by the template: this repository's is rendered with its install step."""
    wanted = scaffold.review_workflow(REPOSITORY_INSTALL, "kumitate")
    assert (REPO / scaffold.WORKFLOW).read_text(encoding="utf-8") == wanted


def test_the_workflows_pass_actionlint(project: Path) -> None:
    for workflow in (REPO / scaffold.WORKFLOW, project / scaffold.WORKFLOW):
        done = tool("actionlint", workflow)
        assert done.returncode == 0, done.stdout + done.stderr
    broken = project / ".github/workflows/broken.yml"
    broken.write_text((project / scaffold.WORKFLOW).read_text().replace("runs-on:", "runs_on:"))
    assert tool("actionlint", broken).returncode == 1  # the check can fail


def test_the_workflow_reviews_against_the_base_and_publishes_the_report(project: Path) -> None:
    doc = yaml.safe_load((project / scaffold.WORKFLOW).read_text())
    steps = doc["jobs"]["review"]["steps"]
    review = next(s for s in steps if s.get("id") == "review")
    assert '.venv/bin/kumitate diff "$BASE_SHA" HEAD --output spec-review.md' in review["run"]
    assert "GITHUB_STEP_SUMMARY" in review["run"]
    assert review["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert any("gh pr comment" in s.get("run", "") for s in steps)
    assert steps[-1]["if"] == "steps.review.outputs.status != '0'" and "exit 1" in steps[-1]["run"]
    assert doc["permissions"] == {"contents": "read", "pull-requests": "write"}


def test_the_hook_files_are_valid(project: Path) -> None:
    done = tool("pre-commit", "validate-manifest", REPO / ".pre-commit-hooks.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    done = tool("pre-commit", "validate-config", project / ".pre-commit-config.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert [h["entry"] for h in hooks] == ["kumitate generate --check", "kumitate lint"]


def test_lint_problems_are_github_annotations_under_github_actions(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = project / "specs/hello/tools/greet.yaml"
    spec.write_text(spec.read_text().replace("errors: [BAD_REQUEST]", "errors: [NO_SUCH_CODE]"))
    line = spec.read_text().splitlines().index("errors: [NO_SUCH_CODE]") + 1
    argv = ["--lint", "--specs", str(project / "specs"), "--out", str(project)]
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert codegen_main(argv) == 1
    assert "::error" not in capsys.readouterr().out
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert codegen_main(argv) == 1
    out = capsys.readouterr().out
    assert re.search(
        rf"^::error file=specs/hello/tools/greet\.yaml,line={line},title=KT\d+::.*NO_SUCH_CODE", out, re.M
    ), out


@pytest.mark.slow
def test_the_hooks_run_from_this_repository_with_try_repo(tmp_path: Path) -> None:
    """`pre-commit try-repo` installs kumitate from this repository (with its codegen extra, whose
    dependencies it finds installed) and runs both hooks on a new project with one hand-edited generated
    file: the lint passes, and the drift check fails on that file alone (every other generated file is what
    the hook's generator writes). One run: a try-repo from a working tree with changes installs again."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUMITATE_", "VIRTUAL_ENV"))}
    env |= {"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PYTHONPATH": str(REPO), "PIP_NO_COMPILE": "1"}
    init = subprocess.run(
        [sys.executable, "-m", "kumitate", "init", "my_tools"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert init.returncode == 0, init.stderr
    project = tmp_path / "my_tools"
    env["PYTHONPATH"] = str(installed_dependencies(tmp_path / "dependencies"))
    models = project / "generated/hello/models.py"
    models.write_text(models.read_text() + "\n# edited by hand\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], [*git, "commit", "-q", "-m", "init"]):
        subprocess.run(command, cwd=project, check=True, env=env)
    done = tool("pre-commit", "try-repo", REPO, "--all-files", cwd=project, env=env)  # every hook, one install
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    ran = re.findall(r"^(kumitate \w+).*?\.+(Passed|Failed)$", done.stdout, re.M)
    assert ran == [("kumitate generate", "Failed"), ("kumitate lint", "Passed")], done.stdout[-3000:]
    assert "stale: generated/hello/models.py" in done.stdout, done.stdout[-3000:]
    assert "(1 stale, 0 orphan)" in done.stdout, done.stdout[-3000:]
    shutil.rmtree(tmp_path / "pre-commit-home", ignore_errors=True)
