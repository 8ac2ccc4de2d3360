"""
One call ahead: the drivers of Chained steps (see _http.Chained), in a thread for the sync
client and a task for the async one.

A download's next page is asked as soon as the current page's headers name its cursor, so the
service plans and sorts it while the current body is read and decoded. Each Chained step starts
at most one call and takes back the one started before it, so one call runs ahead at most: the
memory held is one page more. The call ahead is sent by the same Transport.send, with the same
retries (429/503 with Retry-After, broken connections).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Awaitable, Callable, Optional, Type

import httpx

from ._http import Call, Chained, Reply

OnHeaders = Callable[[httpx.Headers], None]


class _Follow:
    """Starts a Chained step's follow-up once, from the first 2xx headers of its call (a retried call's second headers change nothing)."""

    def __init__(self, step: Chained, start: Callable[[Call], Any]) -> None:
        self.step = step
        self.start = start
        self.started: Any = None
        self.asked = False

    def __call__(self, headers: httpx.Headers) -> None:
        if self.asked:
            return
        self.asked = True
        call = self.step.follow(headers)
        if call is not None:
            self.started = self.start(call)


class ThreadedPending:
    """A call sent in a worker thread: its headers once they arrive (or its end), then its reply."""

    def __init__(self) -> None:
        self.headers: Optional[httpx.Headers] = None
        self.arrived = threading.Event()
        self.future: Optional["Future[Reply]"] = None

    def on_headers(self, headers: httpx.Headers) -> None:
        self.headers = headers
        self.arrived.set()


class ThreadedAhead:
    """The sync driver: Chained steps' follow-ups run in worker threads (two: the one being read and the one ahead)."""

    def __init__(self, send: Callable[[Call, Optional[OnHeaders]], Reply]) -> None:
        self._send = send
        self._pool: Optional[ThreadPoolExecutor] = None

    def __enter__(self) -> "ThreadedAhead":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        # A call ahead that nobody takes (the flow failed or stopped) finishes on its own: one page at most.
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _start(self, call: Call) -> ThreadedPending:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="meridian-ahead")
        pending = ThreadedPending()

        def send() -> Reply:
            try:
                return self._send(call, pending.on_headers)
            finally:
                pending.arrived.set()  # a call that failed before its headers releases its waiter

        pending.future = self._pool.submit(send)
        return pending

    def send(self, step: Any) -> Reply:
        if not isinstance(step, Chained):
            return self._send(step, None)
        follow = _Follow(step, self._start)
        if isinstance(step.call, ThreadedPending):
            step.call.arrived.wait()
            if step.call.headers is not None:
                follow(step.call.headers)
            assert step.call.future is not None
            reply = step.call.future.result()
        else:
            reply = self._send(step.call, follow)
        return Reply(reply.status, reply.headers, reply.content, ahead=follow.started)


class TaskPending:
    """A call sent as an asyncio task: its headers once they arrive (or its end), then its reply."""

    def __init__(self) -> None:
        self.headers: Optional[httpx.Headers] = None
        self.arrived = asyncio.Event()
        self.task: Optional["asyncio.Task[Reply]"] = None

    def on_headers(self, headers: httpx.Headers) -> None:
        self.headers = headers
        self.arrived.set()


class TaskAhead:
    """The async driver: Chained steps' follow-ups run as tasks; one left untaken is cancelled at the end."""

    def __init__(self, send: Callable[[Call, Optional[OnHeaders]], Awaitable[Reply]]) -> None:
        self._send = send
        self._tasks: list["asyncio.Task[Reply]"] = []

    async def __aenter__(self) -> "TaskAhead":
        return self

    async def __aexit__(self, kind: Optional[Type[BaseException]], error: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        for task in self._tasks:
            if not task.done():
                task.cancel()
        for task in self._tasks:
            try:
                await task
            except BaseException:  # noqa: BLE001 - a cancelled or failed call nobody took has no one to tell
                pass

    def _start(self, call: Call) -> TaskPending:
        pending = TaskPending()

        async def send() -> Reply:
            try:
                return await self._send(call, pending.on_headers)
            finally:
                pending.arrived.set()

        pending.task = asyncio.ensure_future(send())
        self._tasks = [t for t in self._tasks if not t.done()] + [pending.task]
        return pending

    async def send(self, step: Any) -> Reply:
        if not isinstance(step, Chained):
            return await self._send(step, None)
        follow = _Follow(step, self._start)
        if isinstance(step.call, TaskPending):
            await step.call.arrived.wait()
            if step.call.headers is not None:
                follow(step.call.headers)
            assert step.call.task is not None
            reply = await step.call.task
        else:
            reply = await self._send(step.call, follow)
        return Reply(reply.status, reply.headers, reply.content, ahead=follow.started)
