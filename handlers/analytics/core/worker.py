"""One analytics worker process: the sandboxed DuckDB under an OS memory limit, one statement at a time.

The server never imports this module; it runs it by path (`python -I worker.py READ_FD WRITE_FD CONFIG`,
see connection.Worker), so a worker loads only the standard library and duckdb: about 70 MB and a
quarter of a second to start, none of the server's packages.

Why a process, and why RLIMIT_DATA: DuckDB's `memory_limit` bounds its buffer manager, not every
allocation (the list built by `range(300000000)` or `unnest(range(1e9))` is not counted), and an
interrupt cannot stop a query that is inside one allocation, so one query could grow the server past
9 GiB. Here the kernel refuses the allocation instead: RLIMIT_DATA (Linux >= 4.7) caps the process's
private writable memory (heap and anonymous mmaps, where DuckDB's allocations go), DuckDB turns the
refused allocation into OutOfMemoryException and the worker stays usable. RLIMIT_AS was measured too:
it counts reserved address space (every thread's stack and malloc arena reservations, ~780 MB before a
query runs with 2 threads), so the memory a query may really use would depend on the thread count.
A cgroup bounds the same thing but needs root and a writable hierarchy; an rlimit needs neither.
The file-backed parts (shared libraries, the database file DuckDB reads with pread) are not counted.

Protocol: multiprocessing.connection framing on two inherited pipes. The server sends
("run", id, op, args) and ("interrupt", id); the worker answers each run with ("ok", id, rows) or
("error", id, exception class name, message) and says ("ready", pid) once the sandbox is open. A
listener thread reads the pipe while the main thread runs DuckDB, so an interrupt reaches the running
statement; when the pipe closes (the server went away) the worker exits at once, even mid-query.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def open_sandbox(config: dict[str, Any]) -> Any:
    """The database instance: in-memory views catalog, the data file attached READ_ONLY, access to one
    directory, configuration locked (LIBRARY-NOTES §5), then the data file first on the search path."""
    import duckdb

    options: dict[str, Any] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "memory_limit": config["memory_limit"],
        "temp_directory": config["temp_directory"],  # where it spills; the server removes it with the worker
    }
    if config.get("threads"):
        options["threads"] = config["threads"]
    con = duckdb.connect(":memory:", config=options)
    con.execute("SET enable_progress_bar = false")  # a connection option (it would print to stderr)
    catalog = config["catalog"]
    con.execute(f"ATTACH {_literal(config['database'])} AS {_ident(catalog)} (READ_ONLY)")
    con.execute(f"SET allowed_directories = [{_literal(config['allowed_directory'])}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    con.execute(f"USE {_ident(catalog)}")  # USE resets search_path, so it comes first
    con.execute(f"SET search_path = {_literal(catalog + '.main,memory.main')}")
    return con


class Worker:
    def __init__(self, con: Any, inbox: Connection, outbox: Connection) -> None:
        self.con = con
        self.inbox = inbox
        self.outbox = outbox
        self.jobs: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.current: int | None = None

    def listen(self) -> None:
        """Read the pipe: runs go to the main thread, an interrupt for the running statement goes to DuckDB."""
        try:
            while True:
                message = self.inbox.recv()
                if message[0] == "interrupt":
                    with self.lock:
                        if self.current == message[1]:
                            self.con.interrupt()
                else:
                    self.jobs.put(message)
        except (EOFError, OSError):
            pass
        os._exit(0)  # the server closed the pipe or went away: nobody waits for an answer

    def serve(self) -> None:
        import duckdb

        while True:
            _, ident, op, args = self.jobs.get()
            with self.lock:
                self.current = ident
            try:
                reply: tuple[Any, ...] = ("ok", ident, self.run(op, args))
            except duckdb.Error as exc:
                reply = ("error", ident, type(exc).__name__, str(exc))
            except MemoryError:
                reply = ("error", ident, "OutOfMemoryException", "Out of Memory Error: the worker's memory is used up")
            finally:
                with self.lock:
                    self.current = None
            try:
                self.outbox.send(reply)
            except MemoryError:
                self.outbox.send(("error", ident, "OutOfMemoryException", "Out of Memory Error: result too large"))

    def run(self, op: str, args: tuple[Any, ...]) -> Any:
        if op == "execute":
            sql, parameters = args
            result = self.con.execute(sql) if parameters is None else self.con.execute(sql, parameters)
            return result.fetchall()
        if op == "execute_all":
            return [self.con.execute(sql).fetchall() for sql in args[0]]
        if op == "statements":
            return self.statements(args[0])
        raise ValueError(f"unknown op {op!r}")

    def statements(self, sql: str) -> tuple[list[tuple[str, str]], tuple[str, str] | None]:
        """The statements (type, text), and for a sole SELECT its text without trailing semicolons and that
        text's json_serialize_sql tree: the SQL guard's next question, answered in the same round trip."""
        import duckdb

        found = self.con.extract_statements(sql)
        listed = [(s.type.name, s.query) for s in found]
        if len(found) != 1 or found[0].type != duckdb.StatementType.SELECT:
            return listed, None
        text = found[0].query.rstrip()
        while text.endswith(";"):
            text = text[:-1].rstrip()
        try:
            tree = self.con.execute("SELECT json_serialize_sql(?::VARCHAR)", [text]).fetchall()[0][0]
        except duckdb.Error:
            return listed, None  # the guard asks again and reports it
        return listed, (text, tree)


def main(argv: list[str]) -> None:
    read_fd, write_fd, config = int(argv[1]), int(argv[2]), json.loads(argv[3])
    limit = int(config["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    os.dup2(2, 1)  # nothing may print into the protocol: stdout goes to stderr
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        con = open_sandbox(config)
    except Exception as exc:
        outbox.send(("failed", type(exc).__name__, str(exc)))
        raise SystemExit(1) from exc
    worker = Worker(con, inbox, outbox)
    threading.Thread(target=worker.listen, name="analytics-worker-listener", daemon=True).start()
    outbox.send(("ready", os.getpid()))
    worker.serve()


if __name__ == "__main__":
    main(sys.argv)
