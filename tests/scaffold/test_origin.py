"""The kumitate requirement a new project records: the one that made it (PEP 610's direct_url.json)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from codegen import scaffold
from codegen.scaffold import origin
from tests.conftest import REPO


def test_an_index_install_is_pinned_to_its_version() -> None:
    assert origin.from_direct_url("0.3.1", None) == "kumitate==0.3.1"


def test_a_wheel_a_directory_and_a_commit_are_direct_references() -> None:
    wheel = {"url": "file:///opt/dist/kumitate-0.1.0-py3-none-any.whl", "archive_info": {"hash": "sha256=ab"}}
    assert origin.from_direct_url("0.1.0", json.dumps(wheel)) == f"kumitate @ {wheel['url']}"
    directory = {"url": "file:///src/kumitate", "dir_info": {"editable": True}}
    assert origin.from_direct_url("0.1.0", json.dumps(directory)) == "kumitate @ file:///src/kumitate"
    vcs = {"url": "https://example.org/kumitate.git", "vcs_info": {"vcs": "git", "commit_id": "9f1c"}}
    assert origin.from_direct_url("0.1.0", json.dumps(vcs)) == "kumitate @ git+https://example.org/kumitate.git@9f1c"


def test_the_dev_requirement_adds_the_codegen_extra() -> None:
    assert origin.with_extra("kumitate==0.1.0", "codegen") == "kumitate[codegen]==0.1.0"
    assert origin.with_extra("kumitate @ file:///w.whl", "codegen") == "kumitate[codegen] @ file:///w.whl"


def test_a_source_checkout_is_its_directory() -> None:
    assert origin.running() == f"kumitate @ {REPO.as_uri()}"


def test_given_paths_and_requirements(tmp_path: Path) -> None:
    wheel = tmp_path / "kumitate-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert origin.given(f"{wheel}[codegen]") == f"kumitate @ {wheel.as_uri()}"
    assert origin.given("kumitate[codegen]>=0.1") == "kumitate>=0.1"
    with pytest.raises(ValueError, match="not a path that exists"):
        origin.given("other-package")


def test_init_records_the_requirement_runtime_and_dev_apart(tmp_path: Path) -> None:
    scaffold.init_project(tmp_path / "p", kumitate="kumitate==0.1.0")
    project = tomllib.loads((tmp_path / "p/pyproject.toml").read_text())["project"]
    assert project["dependencies"] == ["kumitate==0.1.0"]
    assert project["optional-dependencies"]["dev"][0] == "kumitate[codegen,fuzz]==0.1.0"
    with pytest.raises(scaffold.ScaffoldError, match="--kumitate"):
        scaffold.init_project(tmp_path / "q", kumitate="not kumitate")


def test_what_a_runner_can_install_is_recorded(tmp_path: Path) -> None:
    assert origin.portable("kumitate==0.3.1") == origin.Portable("kumitate==0.3.1")
    vcs = "kumitate @ git+https://example.org/kumitate.git@9f1c"
    assert origin.portable(vcs) == origin.Portable(vcs)
    wheel = tmp_path / "kumitate-0.2.0-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    assert origin.portable(f"kumitate @ {wheel.as_uri()}") == origin.Portable("kumitate==0.2.0", wheel=wheel)
    directory = origin.portable(f"kumitate @ {tmp_path.as_uri()}")
    assert directory.requirement == f"kumitate @ {tmp_path.as_uri()}" and directory.wheel is None
    assert "no CI runner has" in directory.warning and "pip wheel --no-deps" in directory.warning


def test_init_from_a_local_wheel_vendors_it(tmp_path: Path) -> None:
    wheel = tmp_path / "kumitate-0.2.0-py3-none-any.whl"
    wheel.write_bytes(b"PK")
    written = scaffold.init_project(tmp_path / "p", kumitate=str(wheel))
    project = tmp_path / "p"
    assert (project / "vendor" / wheel.name).read_bytes() == b"PK"
    assert any(w.path == project / "vendor" / wheel.name and "commit it" in w.note for w in written)
    assert tomllib.loads((project / "pyproject.toml").read_text())["project"]["dependencies"] == ["kumitate==0.2.0"]
    assert "export PIP_FIND_LINKS := $(CURDIR)/vendor" in (project / "Makefile").read_text()
    assert "file:" not in (project / ".pre-commit-config.yaml").read_text()
    assert "entry: .venv/bin/kumitate generate --check" in (project / ".pre-commit-config.yaml").read_text()


def test_init_from_a_directory_warns(tmp_path: Path) -> None:
    written = scaffold.init_project(tmp_path / "p")  # this checkout: a directory
    assert any(w.note.startswith("WARNING: kumitate is installed from the local directory") for w in written)
    assert "PIP_FIND_LINKS" not in (tmp_path / "p" / "Makefile").read_text()
