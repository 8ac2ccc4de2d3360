"""One page ahead, against a scripted transport: the next page is asked while the current body is read, never two ahead, with retries."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import AsyncIterator, Iterator

import httpx
import pyarrow as pa

from meridian_client import AsyncClient, Client, RetryPolicy
from meridian_client.download import SCHEMA

URL = "http://meridian.test"
WAIT_S = 10.0


def page_bytes(first: int, rows: int) -> bytes:
    table = pa.table(
        {
            "metric_name": pa.array(["m"] * rows).dictionary_encode().cast(SCHEMA.field("metric_name").type),
            "timestamp": pa.array(range(first, first + rows), pa.int64()).cast(SCHEMA.field("timestamp").type),
            "metric_numeric_value": pa.array([float(i) for i in range(first, first + rows)]),
            "updated_at": pa.array([0] * rows, pa.int64()).cast(SCHEMA.field("updated_at").type),
        },
        schema=SCHEMA,
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, SCHEMA) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


class Script:
    """Three pages of 100 rows; the first's body waits, halfway, for the second page to be asked; the second is refused once (503)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.lock = threading.Lock()
        self.second_asked = threading.Event()
        self.refused = False

    def note(self, event: str) -> None:
        with self.lock:
            self.events.append(event)

    def answer(self, request: httpx.Request) -> tuple[int, dict[str, str], bytes]:
        page = {None: 1, "c2": 2, "c3": 3}[json.loads(request.content).get("cursor")]
        self.note(f"ask {page}")
        if page == 2:
            self.second_asked.set()
            if not self.refused:
                self.refused = True
                return 503, {"Retry-After": "0"}, b""
        headers = {"X-Next-Cursor": f"c{page + 1}"} if page < 3 else {}
        return 200, headers, page_bytes((page - 1) * 100, 100)

    def first_body(self, body: bytes) -> Iterator[bytes]:
        yield body[: len(body) // 2]
        self.note("first body waits" if self.second_asked.wait(WAIT_S) else "first body waited in vain")
        yield body[len(body) // 2 :]
        self.note("first body read")

    async def first_body_async(self, body: bytes) -> AsyncIterator[bytes]:
        yield body[: len(body) // 2]
        for _ in range(int(WAIT_S * 100)):
            if self.second_asked.is_set():
                break
            await asyncio.sleep(0.01)
        self.note("first body waits" if self.second_asked.is_set() else "first body waited in vain")
        yield body[len(body) // 2 :]
        self.note("first body read")


def check(script: Script, rows: int) -> None:
    assert rows == 300
    # The second page was asked (and refused, and asked again) while the first body was read;
    # the third only once the first was read whole: one page ahead at most.
    assert script.events.index("first body waits") > script.events.index("ask 2")
    assert script.events.count("ask 2") == 2
    assert script.events.index("ask 3") > script.events.index("first body read")


def test_the_next_page_is_asked_while_the_current_body_is_read() -> None:
    script = Script()

    def handler(request: httpx.Request) -> httpx.Response:
        status, headers, body = script.answer(request)
        if "cursor" not in json.loads(request.content):
            return httpx.Response(status, headers=headers, content=script.first_body(body))
        return httpx.Response(status, headers=headers, content=body)

    http = httpx.Client(transport=httpx.MockTransport(handler), base_url=URL)
    with Client(URL, "secret", http=http, retry=RetryPolicy(attempts=3)) as client:
        table = client.download("m", output="arrow", wire="arrow", page_rows=100)
    check(script, table.num_rows)
    assert table.column("metric_numeric_value").to_pylist() == [float(i) for i in range(300)]


def test_the_async_client_asks_the_next_page_alike() -> None:
    script = Script()

    def handler(request: httpx.Request) -> httpx.Response:
        status, headers, body = script.answer(request)
        if "cursor" not in json.loads(request.content):
            return httpx.Response(status, headers=headers, content=script.first_body_async(body))
        return httpx.Response(status, headers=headers, content=body)

    async def main() -> int:
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url=URL)
        client = AsyncClient(URL, "secret", http=http, retry=RetryPolicy(attempts=3))
        try:
            table = await client.download("m", output="arrow", wire="arrow", page_rows=100)
        finally:
            await client.aclose()
        return int(table.num_rows)

    check(script, asyncio.run(main()))
