"""kumitate.offloop: a large body parsed in pieces gives exactly the data a whole parse gives, refuses
what is not JSON as a 400, stops when abandoned; the check pool finds the first error in another process
and survives the death of its worker."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from kumitate import offloop
from kumitate.errors import ToolError
from kumitate.intake import decode_json
from kumitate.offloop import Abandoned, CheckPool, decode_in_pieces

pytestmark = pytest.mark.anyio

DOCUMENTS: list[Any] = [
    {"rule": {"a": 1}, "selections": [{"invitee_key": f"u:{i}", "slot_id": "s1", "n": i} for i in range(3000)]},
    [[i, str(i), {"k": [i] * 5}] for i in range(2000)],
    {"big": "x" * 50_000, "items": ["日本語", "\u00e9", "😀", 1.5, -0.0, 10**30, None, True, False, [], {}] * 400},
    {f"key{i}": {"nested": [i, {"deeper": "v" * (i % 50)}]} for i in range(3000)},
    "a single long string " * 5000,
    [[[[[[list(range(100))] * 20] * 3] * 2] * 2] * 2],
]


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of 1 KiB, so documents of a few hundred KiB split on several levels."""
    monkeypatch.setattr(offloop, "PIECE_BYTES", 1024)


@pytest.mark.parametrize("index", range(len(DOCUMENTS)))
@pytest.mark.parametrize("indent", [None, 2])
def test_pieces_give_the_data_a_whole_parse_gives(small_pieces: None, index: int, indent: int | None) -> None:
    raw = json.dumps(DOCUMENTS[index], indent=indent, ensure_ascii=False).encode()
    assert len(raw) > 4 * offloop.PIECE_BYTES
    assert decode_in_pieces(raw) == decode_json(raw)
    assert decode_in_pieces(bytearray(b" \n" + raw + b"\n")) == decode_json(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": [' + b"1," * 5000 + b"]}",  # a trailing comma
        b'{"a": [' + b'"x",' * 5000 + b'"\xff"]}',  # invalid UTF-8 in the last item
        b'{"a": [' + b"1," * 5000 + b"1]} trailing",
        b'{"a": [' + b"1," * 5000 + b"1]",  # never closed
        b'{"a": [' + b'"\\ud800",' * 5000 + b"1]}",  # lone surrogates
    ],
)
def test_what_is_not_json_is_a_400(small_pieces: None, raw: bytes) -> None:
    with pytest.raises(ToolError) as caught:
        decode_in_pieces(raw)
    assert caught.value.code == "BAD_REQUEST"
    with pytest.raises(ToolError):  # and the whole parse agrees
        decode_json(raw)


def test_an_abandoned_parse_stops(small_pieces: None) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(Abandoned):
        decode_in_pieces(json.dumps(DOCUMENTS[0]).encode(), stop)


SCHEMA = {
    "type": "object",
    "properties": {"keys": {"type": "array", "items": {"type": "string", "pattern": "^u:[0-9]+$"}}},
    "required": ["keys"],
}


async def test_the_pool_finds_the_first_error_in_a_worker() -> None:
    pool = CheckPool()
    try:
        valid = json.dumps({"keys": [f"u:{i}" for i in range(1000)]}).encode()
        assert await pool.first_error(SCHEMA, valid) is None
        invalid = json.dumps({"keys": ["u:1", "BAD", *(["BAD"] * 100_000)]}).encode()
        where, message = await pool.first_error(SCHEMA, invalid) or ("", "")
        assert (where, message) == ("/keys/1", '"BAD" does not match "^u:[0-9]+$"')
        assert await pool.first_error(SCHEMA, b"{not json") is None  # the server's parser words that
    finally:
        pool.close()


async def test_a_dead_worker_leaves_the_call_unchecked_and_is_replaced() -> None:
    pool = CheckPool()
    try:
        assert await pool.first_error(SCHEMA, b'{"keys": []}') is None
        executor = pool._executor()
        for pid in list(executor._processes):  # the test kills what the pool started
            os.kill(pid, signal.SIGKILL)
        assert await pool.first_error(SCHEMA, b'{"keys": ["BAD"]}') is offloop.UNCHECKED
        assert await pool.first_error(SCHEMA, b'{"keys": ["BAD"]}') == ("/keys/0", '"BAD" does not match "^u:[0-9]+$"')
    finally:
        pool.close()


async def test_a_worker_that_cannot_start_leaves_the_call_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spawned process imports the main module; a program without the __main__ guard cannot start one.
    The call is then checked on its thread (UNCHECKED), never answered 500."""
    pool = CheckPool()

    class Refusing:
        def submit(self, *args: Any) -> Any:
            raise RuntimeError("An attempt has been made to start a new process before ... bootstrapping phase")

        def shutdown(self, **kwargs: Any) -> None:
            pass

    monkeypatch.setattr(pool, "_executor", lambda: Refusing())
    assert await pool.first_error(SCHEMA, b'{"keys": ["BAD"]}') is offloop.UNCHECKED


async def test_the_worker_hands_back_what_a_large_check_took() -> None:
    """After checking 15.6 MB of JSON the worker returns its heap (glibc's malloc_trim): it idles near its
    start-up size, not at the ~240 MiB the parse needed."""
    pool = CheckPool()
    try:
        assert await pool.first_error(SCHEMA, b'{"keys": []}') is None
        (pid,) = list(pool._executor()._processes)  # the test reads what the pool started
        body = json.dumps({"keys": ["BAD KEY!"] * 1_300_000}).encode()
        assert (await pool.first_error(SCHEMA, body) or ("", ""))[0] == "/keys/0"
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        rss_kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
        assert rss_kib < 120 * 1024, rss_kib
    finally:
        pool.close()


def test_the_check_worker_asserts_formats_when_asked() -> None:
    """A large body of a tool with `policy.assert_formats` is held to its formats off the loop too."""
    schema = '{"type": "object", "properties": {"day": {"type": "string", "format": "date"}}}'
    assert offloop._check(schema, b'{"day": "someday"}') is None
    found = offloop._check(schema, b'{"day": "someday"}', True)
    assert found is not None and found[0] == "/day"
