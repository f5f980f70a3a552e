"""`kumitate new service` gives the service a store with one table and its first migration (issue 43): the
migration is a branch of its own that `db upgrade` applies next to the runtime's, the store works on the
database it makes, and the declared table and the migration agree (autogenerate finds nothing to add)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from sqlalchemy import inspect

from codegen import scaffold
from kumitate.project import Project
from kumitate.serving.deploy import DeploySettings
from kumitate.storage import migrate, open_database
from tests.conftest import REPO, server_env


def test_new_service_scaffolds_a_store_and_its_first_migration(tmp_path: Path) -> None:
    root = tmp_path / "library"
    (root / "handlers").mkdir(parents=True)
    (root / "handlers" / "__init__.py").write_text("", encoding="utf-8")
    written = {
        w.path.relative_to(root).as_posix() for w in scaffold.new_service(root / "specs", root / "handlers", "loans")
    }
    assert {
        "handlers/loans/store.py",
        "handlers/loans/migrations/__init__.py",
        "handlers/loans/migrations/loans_0001_loans_items.py",
    } <= written
    lint = subprocess.run(
        [
            REPO / ".venv/bin/ruff",
            "check",
            "--quiet",
            root / "handlers/loans/store.py",
            root / "handlers/loans/migrations",
        ],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout

    migrations = migrate.Migrations.of(Project.at(root))
    assert migrations.services == {"loans": root / "handlers/loans/migrations"}
    assert migrations.expected() == migrations.heads() == {migrate.HEAD, "loans_0001"}
    db = open_database(tmp_path / "var", DeploySettings(), migrations)
    try:
        assert set(inspect(db.engine).get_table_names()) == {"alembic_version", "idempotency", "tasks", "loans_items"}
        spec = importlib.util.spec_from_file_location("scaffolded_loans_store", root / "handlers/loans/store.py")
        assert spec is not None and spec.loader is not None
        store_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(store_module)
        store = store_module.LoansStore(db)
        assert store.add("Snow Country") == 1 and store.count() == 1
    finally:
        db.close()

    # the adapter imports generated code, which `kumitate new` generates in a real project: not needed here
    (root / "handlers/loans/__init__.py").write_text("", encoding="utf-8")
    agree = subprocess.run(
        [sys.executable, "-m", "kumitate", "db", "revision", "--service", "loans", "-m", "nothing yet"],
        cwd=root,
        env=server_env(tmp_path / "var2", KUMITATE_PROJECT=str(root)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert agree.returncode == 0, agree.stderr
    assert "op." not in (root / "handlers/loans/migrations/loans_0002_nothing_yet.py").read_text(encoding="utf-8")
