"""``AsyncClient``: the Client's operations as coroutines, over httpx.AsyncClient, sharing the same flows."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable, List, Optional, Union

import httpx

from . import download as dl
from . import tasks as tk
from . import upload as up
from ._http import AsyncTransport, RetryPolicy, single
from .client import Connected, PathLike, UploadSource, as_timeout
from .download import Bound, DownloadResult, Metrics, PageInfo
from .files import AsyncFiles
from .tasks import Task


class AsyncClient(Connected):
    """
    As Client, with ``await``: ``async with AsyncClient() as client: df = await client.download(...)``.

    Formatting an upload's frame and decoding Arrow run in a worker thread, so the event loop
    is not held by them; writing download_to's pages is plain file IO.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: Union[float, httpx.Timeout, None] = None,
        retry: RetryPolicy = RetryPolicy(),
        http: Optional[httpx.AsyncClient] = None,
    ) -> None:
        super().__init__(url, api_key)
        self._t = AsyncTransport(self.connection, timeout=as_timeout(timeout), retry=retry, http=http)
        #: The defined files, as coroutines.
        self.files = AsyncFiles(self._t)

    async def aclose(self) -> None:
        await self._t.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def download(
        self,
        metrics: Metrics,
        pattern: Optional[str] = None,
        start: Bound = None,
        end: Bound = None,
        *,
        latest_only: bool = False,
        output: str = "pandas",
        page_rows: int = dl.DEFAULT_PAGE_ROWS,
        wire: str = "auto",
        on_page: Optional[Callable[[PageInfo], None]] = None,
    ) -> Any:
        """See Client.download."""
        if wire not in dl.WIRES:
            raise ValueError(f"wire must be one of {', '.join(dl.WIRES)}")
        query = dl.make_query(metrics, pattern, start, end, latest_only, page_rows)
        table = await self._t.run(dl.table_flow(query, self._wires, wire, on_page))
        return await asyncio.to_thread(dl.to_output, table, output)

    async def download_to(
        self,
        path: PathLike,
        metrics: Metrics,
        pattern: Optional[str] = None,
        start: Bound = None,
        end: Bound = None,
        *,
        latest_only: bool = False,
        page_rows: int = dl.DEFAULT_PAGE_ROWS,
        resume: bool = True,
        on_page: Optional[Callable[[PageInfo], None]] = None,
    ) -> DownloadResult:
        """See Client.download_to."""
        query = dl.make_query(metrics, pattern, start, end, latest_only, page_rows)
        return await self._t.run(dl.file_flow(query, path, self._wires, resume=resume, on_page=on_page))

    async def upload(
        self,
        data: Any,
        metric: Optional[str] = None,
        *,
        on_error: str = "fail",
        layout: str = "csv",
        idempotency_key: Optional[str] = None,
        wait: bool = True,
        timeout: Optional[float] = None,
    ) -> Task:
        """See Client.upload."""
        source = await asyncio.to_thread(UploadSource(data, metric, layout).prepare)
        try:
            return await self._t.run(up.upload_flow(source.path, metric, on_error, idempotency_key=idempotency_key, wait=wait, timeout=timeout, header_rows=source.header_rows))  # type: ignore[arg-type]
        finally:
            source.close()

    async def upload_points(
        self,
        name: str,
        timestamps: Iterable[Any],
        values: Iterable[float],
        *,
        on_error: str = "fail",
        idempotency_key: Optional[str] = None,
        wait: bool = True,
        timeout: Optional[float] = None,
    ) -> Task:
        """See Client.upload_points."""
        return await self._t.run(up.points_flow(name, timestamps, values, on_error=on_error, idempotency_key=idempotency_key, wait=wait, timeout=timeout))

    async def task(self, task_id: str) -> Task:
        """A task as it is now."""
        return Task.from_json((await self._t.run(single(tk.task_call(task_id)))).json())

    async def wait(self, task_id: str, timeout: Optional[float] = None, *, raise_on_failure: bool = True) -> Task:
        """See Client.wait."""
        return await self._t.run(tk.wait_flow(task_id, timeout, raise_on_failure=raise_on_failure))

    async def tasks(self, status: Optional[str] = None, kind: Optional[str] = None, limit: Optional[int] = 100) -> List[Task]:
        """See Client.tasks."""
        return await self._t.run(tk.list_flow(status, kind, limit))
