"""The analytics worker's sandbox and request loop, in this process against a real DuckDB file.

The server runs worker.py as a subprocess (connection.Worker), where coverage does not see it; the
end-to-end tests prove the round trip. Here: what the sandbox refuses, each op, the error replies
(a DuckDB error becomes ("error", id, class name, message) and the worker goes on), and the
statements op's answers for the SQL guard. The listener thread (which exits the process when its
pipe closes) and main() (which sets an rlimit on its process) stay in the subprocess tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

import duckdb
import pytest

from handlers.analytics.core.connection import Sandbox
from handlers.analytics.core.worker import Worker, open_sandbox


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    root = tmp_path_factory.mktemp("worker")
    database = root / "it's.duckdb"  # a quote in the name: the ATTACH literal must escape it
    with duckdb.connect(str(database)) as con:
        con.execute("CREATE TABLE readings (id INTEGER, value DOUBLE)")
        con.execute("INSERT INTO readings SELECT i, i * 0.5 FROM range(100) t(i)")
    (root / "exports").mkdir()
    (root / "tmp").mkdir()
    return Sandbox(database=database, exports_dir=root / "exports", temp_dir=root / "tmp", threads=1)


@pytest.fixture(scope="module")
def con(sandbox: Sandbox) -> Iterator[Any]:
    config = json.loads(sandbox.config(sandbox.temp_dir))
    connection = open_sandbox(config)
    yield connection
    connection.close()


class StoppableWorker(Worker):
    """The worker with two test ops: "stop" ends its serve loop (the real one ends with its process),
    "exhaust" raises MemoryError as a refused allocation does under the worker's RLIMIT_DATA."""

    def run(self, op: str, args: tuple[Any, ...]) -> Any:
        if op == "stop":
            raise SystemExit
        if op == "exhaust":
            raise MemoryError
        return super().run(op, args)


@pytest.fixture
def served(con: Any) -> tuple[Worker, Connection]:
    """A worker and the test's end of its outbox pipe."""
    outbox_reader, outbox = Pipe(duplex=False)
    inbox, _ = Pipe(duplex=False)
    return StoppableWorker(con, inbox, outbox), outbox_reader


def serve(served: tuple[Worker, Connection], *jobs: tuple[str, tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Queue the jobs (numbered from 1) and a stop, run the serve loop until the stop, return the replies."""
    worker, replies = served
    for ident, (op, args) in enumerate(jobs, start=1):
        worker.jobs.put(("run", ident, op, args))
    worker.jobs.put(("run", 0, "stop", ()))
    with pytest.raises(SystemExit):
        worker.serve()
    assert worker.current is None  # no statement is left marked running
    answers = []
    while replies.poll(0):
        answers.append(replies.recv())
    return answers


def test_the_data_file_is_first_on_the_search_path_and_read_only(con: Any) -> None:
    assert con.execute("SELECT count(*), max(value) FROM readings").fetchall() == [(100, 49.5)]
    with pytest.raises(duckdb.Error, match=r"read-only|read only"):
        con.execute("INSERT INTO readings VALUES (1, 1.0)")


def test_the_sandbox_refuses_files_outside_its_directory_and_locks_its_configuration(
    con: Any, sandbox: Sandbox
) -> None:
    with pytest.raises(duckdb.Error):
        con.execute(f"SELECT * FROM read_csv('{sandbox.database.parent / 'elsewhere.csv'}')")
    with pytest.raises(duckdb.Error, match="lock"):
        con.execute("SET enable_external_access = true")
    with pytest.raises(duckdb.Error):
        con.execute("INSTALL httpfs")


def test_serve_answers_each_op(served: tuple[Worker, Connection]) -> None:
    assert serve(
        served,
        ("execute", ("SELECT count(*) FROM readings", None)),
        ("execute", ("SELECT value FROM readings WHERE id = ?", [4])),
        ("execute_all", (["SELECT 1", "SELECT 2, 3"],)),
    ) == [("ok", 1, [(100,)]), ("ok", 2, [(2.0,)]), ("ok", 3, [[(1,)], [(2, 3)]])]


def test_a_duckdb_error_is_a_reply_naming_its_class_and_the_worker_goes_on(served: tuple[Worker, Connection]) -> None:
    missing, unparsed, after = serve(
        served,
        ("execute", ("SELECT * FROM no_such_table", None)),
        ("execute", ("SELECT 1/", None)),
        ("execute", ("SELECT 42", None)),
    )
    assert missing[:3] == ("error", 1, "CatalogException") and "no_such_table" in missing[3]
    assert unparsed[:3] == ("error", 2, "ParserException")
    assert after == ("ok", 3, [(42,)])


def test_a_refused_allocation_is_an_out_of_memory_reply(served: tuple[Worker, Connection]) -> None:
    refused, after = serve(served, ("exhaust", ()), ("execute", ("SELECT 'still here'", None)))
    assert refused[:3] == ("error", 1, "OutOfMemoryException")
    assert after == ("ok", 2, [("still here",)])


def test_an_unknown_op_is_refused(con: Any) -> None:
    inbox, outbox = Pipe(duplex=False)
    with pytest.raises(ValueError, match="unknown op 'drop'"):
        Worker(con, inbox, outbox).run("drop", ())


def test_statements_of_a_sole_select_come_with_its_tree(served: tuple[Worker, Connection]) -> None:
    [(status, _, (listed, tree))] = serve(served, ("statements", ("SELECT id FROM readings ;; ",)))
    assert status == "ok"
    assert listed == [("SELECT", "SELECT id FROM readings ;; ")]
    text, serialized = tree
    assert text == "SELECT id FROM readings"
    assert json.loads(serialized)["error"] is False


def test_statements_other_than_one_select_have_no_tree(served: tuple[Worker, Connection]) -> None:
    two, pragma = serve(served, ("statements", ("SELECT 1; DROP TABLE readings",)), ("statements", ("PRAGMA version",)))
    assert [kind for kind, _ in two[2][0]] == ["SELECT", "DROP"] and two[2][1] is None
    assert len(pragma[2][0]) == 1 and pragma[2][1] is None


def test_a_statement_that_does_not_parse_is_an_error_reply(served: tuple[Worker, Connection]) -> None:
    [reply] = serve(served, ("statements", ("SELEC nothing",)))
    assert reply[:3] == ("error", 1, "ParserException")
