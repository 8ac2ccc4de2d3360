"""
HTTP with retries, shared by the sync and the async client.

Each operation is written once, as a *flow*: a generator that yields the requests it needs
(``Call``) and receives their answers (``Reply``), or the error raised in their place. A
transport sends one Call, retrying 429, 502, 503 and 504 (honouring ``Retry-After``) and, for
calls safe to repeat, broken connections; ``run`` and ``arun`` drive a flow over the sync
and async transports. So paging, waiting for tasks and resuming downloads exist once.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, BinaryIO, Callable, Generator, Mapping, Optional, Tuple, TypeVar, Union

import httpx

from . import __version__
from .config import Connection
from .errors import ApiError, ConnectionFailed, MeridianError

T = TypeVar("T")

RETRY_STATUSES = frozenset({429, 502, 503, 504})
USER_AGENT = f"meridian-metrics-client/{__version__}"
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=300.0)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class RetryPolicy:
    """
    How often and how long to retry a call the service refused for now (429, 502, 503, 504)
    or, when the call is safe to repeat, whose connection failed.

    ``attempts`` counts the first try. Without ``Retry-After`` the delay doubles from
    ``backoff`` up to ``max_delay`` (with jitter); a ``Retry-After`` is honoured up to ``max_delay``.
    """

    attempts: int = 10
    backoff: float = 0.5
    max_delay: float = 60.0

    def delay(self, attempt: int, retry_after: Optional[str]) -> float:
        """Seconds before try ``attempt + 1`` (``attempt`` counts from 0)."""
        asked = parse_retry_after(retry_after)
        if asked is not None:
            return min(asked, self.max_delay)
        return float(min(self.backoff * (2**attempt), self.max_delay) * random.uniform(0.75, 1.0))


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After as seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass
class Call:
    """
    One request of a flow.

    ``body_file``: a raw body streamed from a file; ``form`` and ``form_file`` (field name,
    path, file name, content type): a multipart body. ``sink``: a 2xx body is written there
    (from the sink's position at the call; a retry starts it over) instead of being kept.
    ``repeatable``: a broken connection may be retried (the call changes nothing twice).
    """

    method: str
    path: str
    params: Optional[Mapping[str, str]] = None
    json: Any = None
    body_file: Optional[Path] = None
    form: Optional[Mapping[str, str]] = None
    form_file: Optional[tuple[str, Path, str, str]] = None
    headers: Mapping[str, str] = field(default_factory=dict)
    sink: Optional[BinaryIO] = None
    read_timeout: Optional[float] = None
    repeatable: bool = True


@dataclass(frozen=True)
class Reply:
    """A successful answer: status, headers and body (empty when it went to the call's sink)."""

    status: int
    headers: httpx.Headers
    content: bytes
    #: The call a Chained step started in the background from this reply's headers (see _ahead.py).
    ahead: Any = None

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass(frozen=True)
class Chained:
    """
    A step that sends ``call`` (a Call, or the handle of one a Chained step already started) and,
    as soon as that call's 2xx headers arrive, starts ``follow(headers)`` (when it gives a Call)
    in the background: the Reply's ``ahead``, to be given back as the ``call`` of a later Chained
    step. So at most one call runs ahead of the one being read. A driver without a background
    (``run``) sends ``call`` alone and ``ahead`` stays None.
    """

    call: Any
    follow: Callable[[httpx.Headers], Optional[Call]]


Flow = Generator[Union[Call, Chained], Reply, T]


def problem_error(status: int, headers: httpx.Headers, content: bytes, call: Call) -> ApiError:
    """The ApiError of an error answer, from its problem+json body when it has one."""
    body: Any = None
    try:
        body = json.loads(content) if content else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        return ApiError(
            status,
            str(body.get("detail") or body.get("title") or ""),
            type=str(body.get("type") or "about:blank"),
            title=str(body.get("title") or ""),
            errors=[e for e in body.get("errors") or [] if isinstance(e, dict)],
            request_id=body.get("request_id"),
            method=call.method,
            path=call.path,
        )
    text = content[:500].decode("utf-8", "replace")
    return ApiError(status, text, title=httpx.codes.get_reason_phrase(status), method=call.method, path=call.path)


def _client_kwargs(conn: Connection, timeout: httpx.Timeout) -> dict[str, Any]:
    return {
        "base_url": conn.url,
        "headers": {"Authorization": f"Bearer {conn.api_key}", "User-Agent": USER_AGENT},
        "timeout": timeout,
        "follow_redirects": False,
    }


def _timeout(call: Call, base: httpx.Timeout) -> httpx.Timeout:
    if call.read_timeout is None:
        return base
    return httpx.Timeout(connect=base.connect, read=max(call.read_timeout, base.read or 0), write=base.write, pool=base.pool)


def _sink_start(call: Call) -> Optional[int]:
    return call.sink.tell() if call.sink is not None else None


def _sink_reset(call: Call, start: Optional[int]) -> None:
    if call.sink is not None and start is not None:
        call.sink.seek(start)
        call.sink.truncate()


class Transport:
    """Sends Calls over one httpx.Client, with the retry policy."""

    def __init__(self, conn: Connection, *, timeout: httpx.Timeout = DEFAULT_TIMEOUT, retry: RetryPolicy = RetryPolicy(), http: Optional[httpx.Client] = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.conn = conn
        self.timeout = timeout
        self.retry = retry
        self.sleep = sleep
        self.http = http or httpx.Client(**_client_kwargs(conn, timeout))

    def close(self) -> None:
        self.http.close()

    def _request(self, call: Call) -> tuple[httpx.Request, list[BinaryIO]]:
        opened: list[BinaryIO] = []
        kwargs: dict[str, Any] = {"params": call.params, "headers": dict(call.headers), "timeout": _timeout(call, self.timeout)}
        if call.json is not None:
            kwargs["json"] = call.json
        if call.body_file is not None:
            f = open(call.body_file, "rb")
            opened.append(f)
            kwargs["content"] = f
            kwargs["headers"]["Content-Length"] = str(call.body_file.stat().st_size)
        if call.form_file is not None:
            name, path, filename, content_type = call.form_file
            f = open(path, "rb")
            opened.append(f)
            kwargs["files"] = {name: (filename, f, content_type)}
            kwargs["data"] = dict(call.form or {})
        return self.http.build_request(call.method, call.path, **kwargs), opened

    def send(self, call: Call, on_headers: Optional[Callable[[httpx.Headers], None]] = None) -> Reply:
        """Sends the call, retrying as the policy says; an error answer raises ApiError. ``on_headers`` sees a 2xx answer's headers before its body is read."""
        start = _sink_start(call)
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            request, opened = self._request(call)
            try:
                response = self.http.send(request, stream=True)
                try:
                    if on_headers is not None and 200 <= response.status_code < 300:
                        on_headers(response.headers)
                    if response.status_code in RETRY_STATUSES and not last:
                        response.read()
                        delay = self.retry.delay(attempt, response.headers.get("Retry-After"))
                    elif 200 <= response.status_code < 300 and call.sink is not None:
                        _sink_reset(call, start)
                        for chunk in response.iter_bytes(_CHUNK):
                            call.sink.write(chunk)
                        return Reply(response.status_code, response.headers, b"")
                    else:
                        content = response.read()
                        if response.status_code >= 400:
                            raise problem_error(response.status_code, response.headers, content, call)
                        return Reply(response.status_code, response.headers, content)
                finally:
                    response.close()
            except httpx.TransportError as e:
                if last or not call.repeatable:
                    raise ConnectionFailed(f"{call.method} {call.path}: {type(e).__name__}: {e}") from e
                delay = self.retry.delay(attempt, None)
            finally:
                for f in opened:
                    f.close()
            self.sleep(delay)
        raise MeridianError("unreachable")  # the last attempt returns or raises

    def run(self, flow: Flow[T]) -> T:
        """Drives a flow: each Call it yields is sent; its reply, or the error, goes back in. A Chained step may start one call in a thread beside it."""
        from ._ahead import ThreadedAhead

        with ThreadedAhead(self.send) as ahead:
            return run(flow, ahead.send)


class AsyncTransport:
    """Sends Calls over one httpx.AsyncClient, with the retry policy."""

    def __init__(self, conn: Connection, *, timeout: httpx.Timeout = DEFAULT_TIMEOUT, retry: RetryPolicy = RetryPolicy(), http: Optional[httpx.AsyncClient] = None) -> None:
        self.conn = conn
        self.timeout = timeout
        self.retry = retry
        self.http = http or httpx.AsyncClient(**_client_kwargs(conn, timeout))

    async def aclose(self) -> None:
        await self.http.aclose()

    def _request(self, call: Call) -> tuple[httpx.Request, list[BinaryIO]]:
        opened: list[BinaryIO] = []
        kwargs: dict[str, Any] = {"params": call.params, "headers": dict(call.headers), "timeout": _timeout(call, self.timeout)}
        if call.json is not None:
            kwargs["json"] = call.json
        if call.body_file is not None:
            f = open(call.body_file, "rb")
            opened.append(f)
            kwargs["content"] = _chunks(f)
            kwargs["headers"]["Content-Length"] = str(call.body_file.stat().st_size)
        if call.form_file is not None:
            name, path, filename, content_type = call.form_file
            f = open(path, "rb")
            opened.append(f)
            # httpx's multipart body reads its file parts in either mode.
            kwargs["files"] = {name: (filename, f, content_type)}
            kwargs["data"] = dict(call.form or {})
        return self.http.build_request(call.method, call.path, **kwargs), opened

    async def send(self, call: Call, on_headers: Optional[Callable[[httpx.Headers], None]] = None) -> Reply:
        """Sends the call, retrying as the policy says; an error answer raises ApiError. ``on_headers`` sees a 2xx answer's headers before its body is read."""
        start = _sink_start(call)
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            request, opened = self._request(call)
            try:
                response = await self.http.send(request, stream=True)
                try:
                    if on_headers is not None and 200 <= response.status_code < 300:
                        on_headers(response.headers)
                    if response.status_code in RETRY_STATUSES and not last:
                        await response.aread()
                        delay = self.retry.delay(attempt, response.headers.get("Retry-After"))
                    elif 200 <= response.status_code < 300 and call.sink is not None:
                        _sink_reset(call, start)
                        async for chunk in response.aiter_bytes(_CHUNK):
                            call.sink.write(chunk)
                        return Reply(response.status_code, response.headers, b"")
                    else:
                        content = await response.aread()
                        if response.status_code >= 400:
                            raise problem_error(response.status_code, response.headers, content, call)
                        return Reply(response.status_code, response.headers, content)
                finally:
                    await response.aclose()
            except httpx.TransportError as e:
                if last or not call.repeatable:
                    raise ConnectionFailed(f"{call.method} {call.path}: {type(e).__name__}: {e}") from e
                delay = self.retry.delay(attempt, None)
            finally:
                for f in opened:
                    f.close()
            await asyncio.sleep(delay)
        raise MeridianError("unreachable")

    async def run(self, flow: Flow[T]) -> T:
        """Drives a flow as Transport.run does, awaiting each call (a Chained step's background call is a task)."""
        from ._ahead import TaskAhead

        async with TaskAhead(self.send) as ahead:
            done, step = advance(flow, None)
            while not done:
                try:
                    outcome: Union[Reply, MeridianError] = await ahead.send(step)
                except MeridianError as error:
                    outcome = error
                done, step = advance(flow, outcome)
            return step  # type: ignore[no-any-return]


async def _chunks(f: BinaryIO) -> AsyncIterator[bytes]:
    while True:
        chunk = f.read(_CHUNK)
        if not chunk:
            return
        yield chunk


def run(flow: Flow[T], send: Callable[[Any], Reply]) -> T:
    """Drives a flow with a sync ``send``: replies go back in with ``send``, errors with ``throw``. A plain Call ``send`` gets a Chained step's call alone."""
    done, step = advance(flow, None)
    while not done:
        try:
            outcome: Union[Reply, MeridianError] = send(step)
        except MeridianError as error:
            outcome = error
        done, step = advance(flow, outcome)
    return step  # type: ignore[no-any-return]


def advance(flow: Flow[T], outcome: Union[Reply, MeridianError, None]) -> Tuple[bool, Any]:
    """Hands a flow its call's outcome (None to start it): (True, its result) when it ends, else (False, its next call)."""
    try:
        if isinstance(outcome, MeridianError):
            return False, flow.throw(outcome)
        return False, flow.send(outcome)  # type: ignore[arg-type]
    except StopIteration as done:
        return True, done.value


def single(call: Call) -> Flow[Reply]:
    """The flow of one call: its reply."""
    reply = yield call
    return reply
