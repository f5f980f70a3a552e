"""Large request bodies off the event loop: parsed in pieces on a thread, checked in another process.

The event loop only routes. A body above `Policies.off_loop_bytes` (KUMITATE_OFF_LOOP_BYTES, 1 MiB) is
neither parsed nor checked on it:

* **Parsing, on a thread, in pieces.** The C parsers hold the GIL for a whole document (13 MB: 60-120 ms,
  during which no other call is served, whatever thread it runs on). `decode_in_pieces` splits the body
  with msgspec's raw scanner (members and items as `Raw` slices, ~1 ms a MB) and parses the slices in
  batches of about `PIECE_BYTES` with the same strict parser as `kumitate.intake.decode_json`, so the
  GIL changes hands between batches and the loop waits at most one batch (well under a millisecond).
* **Checking, in a process.** A JSON Schema check of 200k items is one C call of ~60 ms holding the GIL.
  `CheckPool` runs it in a worker process of its own on the raw bytes (that process parses them again:
  the work is on another core, the loop only waits on a future), and gives back the first error, if any.
  It stops at the first error, as `kumitate.intake.first_error` does. A worker that dies (a memory limit)
  is replaced for the next call; the call it was checking gets its check on the thread instead.

The two run side by side; a failed check stops the parse at its next piece. A dense body (more than
DENSE_COMMAS commas: perhaps that many items at one level, which the splitter would make one object each in a
single call) is parsed only once its check passed, whole: a hostile one (1.3 million keys that fail a pattern,
15.6 MB) is refused without any parse in the serving process. Over MCP the lean path (2026-07-28 requests)
hands the arguments over as raw bytes the same way; a request the SDK answers itself is parsed by the SDK.

Smaller bodies stay on the loop: below a megabyte the hops cost more than the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any, NoReturn

import jsonschema_rs
import msgspec
import pydantic_core

from kumitate.bindings import ToolBinding
from kumitate.errors import ToolError
from kumitate.intake import Intake, JsonBody, decode_json, first_error, pointer, shorten
from kumitate.serving import heap

__all__ = ["OFF_LOOP_BYTES", "PIECE_BYTES", "Abandoned", "CheckPool", "OffLoopIntake", "decode_in_pieces"]

OFF_LOOP_BYTES = 1 << 20
"""Default of KUMITATE_OFF_LOOP_BYTES: a body larger than this is parsed and checked off the loop."""
PIECE_BYTES = 1 << 16
"""About how much JSON one parser call takes in `decode_in_pieces` (a fraction of a millisecond)."""
DENSE_COMMAS = 1_000_000
"""A body with more commas than this may hold that many items at one level, and splitting it creates one
object per item in a single call (~55 ns each, the GIL held): such a body is parsed whole, and only once
its check passed, so a hostile one (1.3 million invalid keys) is refused without being parsed here at all."""
MAX_SPLIT_LEVELS = 4
"""How many levels of containers are split; deeper, a piece is parsed whole (so nesting stays bounded:
the parser's own limit applies below the split levels)."""

_log = logging.getLogger(__name__)
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
_WHITESPACE = b" \t\r\n"


class Abandoned(Exception):
    """Raised inside `decode_in_pieces` once its `stop` event is set: nobody wants the data any more."""


def decode_in_pieces(raw: bytes | bytearray | memoryview, stop: threading.Event | None = None) -> object:
    """`kumitate.intake.decode_json(raw)`, in pieces of about PIECE_BYTES (for a thread: the GIL is let go
    between pieces). The same data; the same BAD_REQUEST for what is not JSON."""
    view = memoryview(raw)
    try:
        return _decode(view, 0, stop)
    except msgspec.DecodeError as exc:
        return _refuse(exc)


def _refuse(exc: msgspec.DecodeError) -> NoReturn:
    """BAD_REQUEST in the scanner's words (it stops at the first byte that is not JSON)."""
    message = str(exc)
    if "depth" in message.lower() or "recursion" in message.lower():
        message = "the JSON body nests too deep"
    raise ToolError(f"malformed JSON body: {message}", code="BAD_REQUEST") from None


def _decode(view: memoryview, level: int, stop: threading.Event | None) -> object:
    if len(view) <= PIECE_BYTES or level >= MAX_SPLIT_LEVELS:
        return decode_json(view.tobytes())
    first = _first_byte(view)
    if first == ord("{"):
        members = _MEMBERS.decode(view)
        values = _decode_all(list(members.values()), level, stop)
        return dict(zip(members.keys(), values, strict=True))
    if first == ord("["):
        return _decode_all(_ITEMS.decode(view), level, stop)
    return decode_json(view.tobytes())  # one large string or number: one call, however large


def _first_byte(view: memoryview) -> int:
    for byte in view[:1024]:
        if byte not in _WHITESPACE:
            return int(byte)
    return -1


def _decode_all(pieces: list[msgspec.Raw], level: int, stop: threading.Event | None) -> list[object]:
    """Each piece's data, in order: small ones parsed together, a batch at a time, large ones split again."""
    out: list[object] = []
    batch: list[msgspec.Raw] = []
    size = 0
    for piece in pieces:
        length = len(memoryview(piece))
        if length > PIECE_BYTES:
            _flush(batch, out, stop)
            batch, size = [], 0
            out.append(_decode(memoryview(piece), level + 1, stop))
            continue
        batch.append(piece)
        size += length
        if size >= PIECE_BYTES:
            _flush(batch, out, stop)
            batch, size = [], 0
    _flush(batch, out, stop)
    return out


def _flush(batch: list[msgspec.Raw], out: list[object], stop: threading.Event | None) -> None:
    if not batch:
        return
    if stop is not None and stop.is_set():
        raise Abandoned
    items = decode_json(b"[" + b",".join(batch) + b"]")
    assert isinstance(items, list)  # the batch was written as one JSON array just above
    out.extend(items)


# -- the check in a worker process ------------------------------------------------------------
_VALIDATORS: dict[tuple[str, bool], jsonschema_rs.Draft202012Validator] = {}


def _check(schema_json: str, raw: bytes, formats: bool = False) -> tuple[str, str] | None:
    """In the worker: the first error of the JSON `raw` against the schema (pointer, message; `format` asserted
    when `formats`), or None when it matches or is not JSON at all (the server's parser words that)."""
    validator = _VALIDATORS.get((schema_json, formats))
    if validator is None:
        schema = msgspec.json.decode(schema_json)
        validator = _VALIDATORS[schema_json, formats] = jsonschema_rs.Draft202012Validator(
            schema, validate_formats=formats
        )
    try:
        data = pydantic_core.from_json(raw)
    except ValueError:
        return None
    err = first_error(validator, data)
    found = None if err is None else (pointer(err.instance_path), shorten(err.message))
    del data, err  # the error holds the instance it is about: both go before the heap is trimmed
    heap.give_back_freed_memory()  # an idle worker holds about its start-up size, not its largest body's
    return found


UNCHECKED = ("", "")
"""What `CheckPool.first_error` gives when its worker died before it answered: check on a thread instead."""


class CheckPool:
    """Worker processes that check large bodies against their schemas; started on first use."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._schemas: dict[int, tuple[dict[str, Any], str]] = {}

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # spawn: the server has threads running, which a forked child must not inherit mid-lock
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(self.workers, mp_context=context)
            return self._pool

    def _schema_json(self, schema: dict[str, Any]) -> str:
        found = self._schemas.get(id(schema))
        if found is None or found[0] is not schema:
            found = self._schemas[id(schema)] = (schema, msgspec.json.encode(schema).decode())
        return found[1]

    async def first_error(
        self, schema: dict[str, Any], raw: bytes | bytearray, formats: bool = False
    ) -> tuple[str, str] | None:
        """(pointer, message) of the first problem of `raw` against `schema`, None when it matches (or is
        not JSON: the parser words that), or UNCHECKED when the worker died (it is replaced next time) or
        cannot start (a program embedding kumitate whose main module lacks the `if __name__ == "__main__":`
        guard, which a spawned process imports: docs/deployment.md)."""
        pool = self._executor()
        try:
            return await asyncio.wrap_future(pool.submit(_check, self._schema_json(schema), bytes(raw), formats))
        except (BrokenProcessPool, RuntimeError, OSError) as exc:
            _log.warning("schema-check worker unavailable (%s): this call is checked on its thread", type(exc).__name__)
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            return UNCHECKED

    def close(self) -> None:
        """Stop the workers (at shutdown); a later call starts new ones."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


InThread = Callable[[Callable[[], object]], Awaitable[object]]
"""Runs a function on one of the calling service's threads (its bulkhead)."""


class OffLoopIntake:
    """`Intake.prepare` for a large JSON body, with the loop only waiting: the parse on the service's
    thread and the schema check in a worker process, side by side."""

    def __init__(self, intake: Intake, checks: CheckPool, threshold: int = OFF_LOOP_BYTES) -> None:
        self.intake = intake
        self.checks = checks
        self.threshold = threshold

    def wants(self, arguments: object) -> bool:
        """Whether these arguments are a body large enough to leave the loop for."""
        return isinstance(arguments, JsonBody) and len(arguments.raw) > self.threshold

    async def prepare(self, binding: ToolBinding, body: JsonBody, in_thread: InThread) -> object:
        """What the handler of `binding` takes for `body`, or BAD_REQUEST (the first problem only)."""
        stop, checked = threading.Event(), threading.Event()
        parsing = asyncio.ensure_future(in_thread(partial(_parse, body.raw, stop, checked)))
        try:
            formats = binding.policy.assert_formats
            found = await self.checks.first_error(binding.input_schema, body.raw, formats)
            if found is not None and found is not UNCHECKED:
                stop.set()  # the parse stops at its next piece; its thread is free again soon after
                checked.set()
                with contextlib.suppress(Exception):
                    await parsing
                where, message = found
                raise ToolError(f"input does not match the schema: {where}: {shorten(message)}", code="BAD_REQUEST")
            checked.set()
            data = await parsing
        except BaseException:
            stop.set()
            checked.set()
            raise
        body.data = data
        if found is UNCHECKED:
            await in_thread(partial(self.intake.check, binding.input_schema, data, binding.policy.assert_formats))
        if binding.handler_input == "data":
            return data
        return await in_thread(partial(self.intake.model_of, binding, data))


def _parse(raw: bytes | bytearray, stop: threading.Event, checked: threading.Event) -> object:
    """On the service's thread: the body in pieces, or, when it is dense (DENSE_COMMAS), whole once checked."""
    if raw.count(b",") > DENSE_COMMAS:
        checked.wait()
        if stop.is_set():
            raise Abandoned
        return decode_json(raw)
    return decode_in_pieces(raw, stop)
