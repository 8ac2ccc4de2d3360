"""Retries, against a scripted transport: 429 and 503 honour Retry-After, broken connections are retried only when safe."""

from __future__ import annotations

import asyncio
from typing import Callable

import httpx
import pytest

from meridian_client import ApiError, ConnectionFailed, RetryPolicy
from meridian_client._http import AsyncTransport, Call, Transport, parse_retry_after
from meridian_client.config import Connection

CONN = Connection("http://meridian.test", "secret")


def scripted(answers: list[Callable[[httpx.Request], httpx.Response]]) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers[min(len(seen) - 1, len(answers) - 1)](request)

    return httpx.MockTransport(handler), seen


def test_retry_after_is_seconds_or_an_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Thu, 01 Jan 1970 00:00:10 GMT", now=4.0) == pytest.approx(6.0)


def test_429_and_503_are_retried_after_their_retry_after() -> None:
    mock, seen = scripted([
        lambda r: httpx.Response(429, headers={"Retry-After": "2"}),
        lambda r: httpx.Response(503, headers={"Retry-After": "1"}),
        lambda r: httpx.Response(200, json={"ok": True}),
    ])
    slept: list[float] = []
    t = Transport(CONN, http=httpx.Client(transport=mock, base_url=CONN.url), sleep=slept.append)
    reply = t.send(Call("GET", "/x"))
    assert reply.json() == {"ok": True}
    assert slept == [2.0, 1.0]
    assert len(seen) == 3


def test_the_last_refusal_is_raised_as_the_problem() -> None:
    problem = {"type": "/problems/too-many", "title": "Too many at once", "status": 429, "detail": "slow down", "request_id": "r1"}
    mock, seen = scripted([lambda r: httpx.Response(429, headers={"Retry-After": "0"}, json=problem)])
    t = Transport(CONN, http=httpx.Client(transport=mock, base_url=CONN.url), retry=RetryPolicy(attempts=3), sleep=lambda s: None)
    with pytest.raises(ApiError) as caught:
        t.send(Call("GET", "/x"))
    assert (caught.value.status, caught.value.detail, caught.value.request_id) == (429, "slow down", "r1")
    assert len(seen) == 3


def test_a_broken_connection_is_retried_only_when_the_call_is_repeatable() -> None:
    def cut(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection", request=request)

    mock, seen = scripted([cut, lambda r: httpx.Response(200, content=b"fine")])
    t = Transport(CONN, http=httpx.Client(transport=mock, base_url=CONN.url), sleep=lambda s: None)
    assert t.send(Call("GET", "/x")).content == b"fine"
    mock, seen = scripted([cut, lambda r: httpx.Response(200)])
    t = Transport(CONN, http=httpx.Client(transport=mock, base_url=CONN.url), sleep=lambda s: None)
    with pytest.raises(ConnectionFailed):
        t.send(Call("POST", "/files", repeatable=False))
    assert len(seen) == 1


def test_400_is_not_retried_and_keeps_the_field_errors() -> None:
    problem = {"type": "/problems/validation", "title": "Invalid request", "status": 400, "detail": "bad", "errors": [{"field": "query.x", "reason": "no"}]}
    mock, seen = scripted([lambda r: httpx.Response(400, json=problem, headers={"Content-Type": "application/problem+json"})])
    t = Transport(CONN, http=httpx.Client(transport=mock, base_url=CONN.url), sleep=lambda s: None)
    with pytest.raises(ApiError) as caught:
        t.send(Call("GET", "/x"))
    assert caught.value.errors == [{"field": "query.x", "reason": "no"}]
    assert len(seen) == 1


def test_the_async_transport_retries_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_sleep(_: float) -> None:
        return None

    monkeypatch.setattr(asyncio, "sleep", no_sleep)
    seen: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(1)
        return httpx.Response(503, headers={"Retry-After": "1"}) if len(seen) < 3 else httpx.Response(200, json=[1])

    async def go() -> object:
        t = AsyncTransport(CONN, http=httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url=CONN.url))
        try:
            return (await t.send(Call("GET", "/x"))).json()
        finally:
            await t.aclose()

    assert asyncio.run(go()) == [1]
    assert len(seen) == 3
