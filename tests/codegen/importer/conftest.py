"""A bare project for the importer (specs/errors.yaml as `kumitate init` writes it, an empty handlers/)."""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.importer import Imported, Options, import_openapi
from codegen.scaffold import BASE_ERRORS

DATA = Path(__file__).with_name("data")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """specs/errors.yaml and handlers/, all an import needs."""
    (tmp_path / "specs").mkdir()
    (tmp_path / "handlers").mkdir()
    shutil.copyfile(BASE_ERRORS, tmp_path / "specs/errors.yaml")
    return tmp_path


def run(project: Path, document: str, service: str, **options: Any) -> Imported:
    """Import tests/codegen/importer/data/<document> as `service` into `project`."""
    source = document if document.startswith("http") else str(DATA / document)
    return import_openapi(Options(source, service, **options), project / "specs", project / "handlers")


def tools(project: Path, service: str) -> dict[str, dict[str, Any]]:
    """The tool specs written, by name."""
    return {
        path.stem: yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted((project / "specs" / service / "tools").glob("*.yaml"))
    }


@contextlib.contextmanager
def http_server(handler: Callable[..., BaseHTTPRequestHandler], path: str = "") -> Iterator[str]:
    """`handler` served on a free loopback port, on a thread, until the block ends; its base URL + `path`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()
