"""Prism (`@stoplight/prism-cli`, Apache-2.0, pinned), the import proof's stand-in for an API: a mock server
of a document that validates every request it gets against it and answers with the document's examples
(or, `dynamic`, answers generated from its schemas), installed with npm (codegen.npm)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from codegen import npm
from codegen.testing import free_port, stop

PRISM = "@stoplight/prism-cli@5.16.0"
CACHE = Path.home() / ".cache/kumitate/prism"


def _last_lines(text: str, count: int = 12) -> str:
    return "\n".join(text.splitlines()[-count:])


PRISM_HEADER_GUARD = """// kumitate's import proof (codegen/prism.py, PRISM_HEADER_GUARD): keep Prism alive
const http = require('http');
const setHeader = http.ServerResponse.prototype.setHeader;
http.ServerResponse.prototype.setHeader = function (name, value) {
  if (String(name).toLowerCase() === 'sl-violations' && typeof value === 'string') {
    value = value.replace(/[^\\u0000-\\u00ff]/g, (c) => '\\\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  }
  return setHeader.call(this, name, value);
};
const deserializers = require(require.resolve('@stoplight/prism-http/dist/validator/deserializers',
  { paths: [process.env.KUMITATE_PRISM_HOME] }));
const simple = deserializers.header.simple;
deserializers.header.simple = function (name, parameters, schema, explode) {
  return parameters[name] === undefined ? undefined : simple(name, parameters, schema, explode);
};
function refusing(readers, style) {
  const read = readers[style];
  readers[style] = function (name, parameters, ...rest) {
    if (readers !== deserializers.path && parameters[name] === undefined) return undefined;
    try {
      return read.call(this, name, parameters, ...rest);
    } catch (error) {
      return Symbol(String(error && error.message));
    }
  };
}
for (const style of ['label', 'matrix']) refusing(deserializers.path, style);
for (const style of ['spaceDelimited', 'pipeDelimited', 'commaDelimited']) refusing(deserializers.query, style);
"""
"""Loaded into Prism's Node (`--require`): two fixes that keep the stub's process alive. First, Prism 5.16
writes the violations it finds in its own answer (the document's example, or one it generated, that
breaks the document's schema: an `oneOf`'s message quotes the schema's enum values) into an `sl-violations` response header, and Node refuses a header value
with a character outside Latin-1 (Lob's country `KOREA (DEMOCRATIC PEOPLE’S REPUBLIC OF)`): the uncaught
TypeError ends the stub's process, and every later request fails (502) for the stub's sake. This writes
such a character as its `\\uXXXX` JSON escape in that header only. The proof stays as meaningful: the
header is Prism's remark on its own answer (the facade does not read it), and Prism validates each
request before it answers, unchanged. Second, Prism's reader of a `simple` header splits the header's
text for an array or object schema without asking whether the request has the header: an optional one
left out (ReadMe's `array` header) throws a TypeError that ends the process. A header the request does
not have reads as absent, as any other parameter does (a `required` one is still refused as missing).
Third, its `label` and `matrix` path readers throw on a segment not in their style (`x` where `.x` is
due), and its `spaceDelimited` / `pipeDelimited` query readers on any parameter that is no array (ReadMe's
`object`, which OpenAPI allows), sent or not: each ends the process too. A query parameter not sent reads
as absent; a value such a reader cannot read reads as a value no schema type accepts, so the request is
refused (logged as any other refusal) and the stub lives on to judge the next."""


@contextmanager
def prism(document: Path, log: Path, *, dynamic: bool = False, seed: int = 0) -> Iterator[str]:
    """Prism mocking `document` on a free loopback port: static answers (the document's examples), or with
    `dynamic` answers generated from the response schemas (a document's examples may break its own schema,
    which a fuzzer then blames on the facade), by json-schema-faker from `seed`, so that a run repeats (with
    schemathesis' own seed, the same requests get the same answers)."""
    bin_dir = npm.install(CACHE, [PRISM], ["prism"], "import proof")
    port = free_port()
    command = [
        str(bin_dir / "prism"),
        "mock",
        "--cors=false",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        *(["-d", "--seed", str(seed)] if dynamic else []),
    ]
    guard = log.with_name("prism-header-guard.js")
    guard.write_text(PRISM_HEADER_GUARD, encoding="utf-8")
    env = npm.node_env(bin_dir)
    env["NODE_OPTIONS"] = f"{env.get('NODE_OPTIONS', '')} --require {guard}".strip()
    env["KUMITATE_PRISM_HOME"] = str(bin_dir.parent.parent)  # where the guard finds Prism's own modules
    with log.open("wb") as out:
        process = subprocess.Popen([*command, str(document)], stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while "Prism is listening" not in log.read_text(errors="replace"):  # no probe request: it would be logged
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prism did not start: {_last_lines(log.read_text(errors='replace'))}")
            time.sleep(0.3)
        yield url
    finally:
        stop(process)
