"""The client: ``Client(url, api_key)``, each argument else from the environment, else from the CLI's config file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, List, Optional, Union

import httpx

from . import download as dl
from . import tasks as tk
from . import upload as up
from ._http import DEFAULT_TIMEOUT, RetryPolicy, Transport, single
from .config import Connection, resolve_connection
from .download import Bound, DownloadResult, Metrics, PageInfo, WireState
from .files import Files
from .tasks import Task

PathLike = Union[str, "os.PathLike[str]"]


def as_timeout(timeout: Union[float, httpx.Timeout, None]) -> httpx.Timeout:
    """A number of seconds is the read timeout (connecting gets at most 30 s); None: the defaults (30 s, read 300 s)."""
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, httpx.Timeout):
        return timeout
    return httpx.Timeout(min(30.0, float(timeout)), read=float(timeout))


class UploadSource:
    """
    What an upload sends: a path as it is (CSV, JSON or NDJSON, plain or gzip, the service
    detects which), or a frame written to a temporary gzip file of the chosen layout.
    """

    def __init__(self, data: Any, metric: Optional[str], layout: str) -> None:
        self.data = data
        self.metric = metric
        self.layout = layout
        self.path: Optional[Path] = None
        self.header_rows: Optional[int] = None
        self.temporary = False

    def prepare(self) -> "UploadSource":
        if isinstance(self.data, (str, os.PathLike)):
            self.path = Path(self.data)
            if not self.path.is_file():
                raise FileNotFoundError(f"no such file to upload: {self.path}")
        else:
            prepared = up.prepare(self.data, self.metric, self.layout)
            self.path, self.header_rows, self.temporary = prepared.path, prepared.header_rows, True
        return self

    def close(self) -> None:
        if self.temporary and self.path is not None:
            self.path.unlink(missing_ok=True)


class Connected:
    """What both clients hold: the connection (url and key, resolved once) and which wire the server speaks."""

    def __init__(self, url: Optional[str], api_key: Optional[str]) -> None:
        self.connection: Connection = resolve_connection(url, api_key)
        self._wires = WireState()

    @property
    def url(self) -> str:
        return self.connection.url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r})"


class Client(Connected):
    """
    A Meridian api client. ``url`` and ``api_key`` each come from the argument, else
    ``MERIDIAN_URL`` / ``MERIDIAN_API_KEY``, else the CLI's config file
    (``$XDG_CONFIG_HOME/meridian/config.json``, default ``~/.config/meridian/config.json``).

    Every request is retried on 429, 502, 503 and 504, honouring Retry-After (``retry``). Use
    it as a context manager, or call ``close()``.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: Union[float, httpx.Timeout, None] = None,
        retry: RetryPolicy = RetryPolicy(),
        http: Optional[httpx.Client] = None,
    ) -> None:
        super().__init__(url, api_key)
        self._t = Transport(self.connection, timeout=as_timeout(timeout), retry=retry, http=http)
        #: The defined files: list, info, get, put, share, unshare, describe, delete.
        self.files = Files(self._t)

    def close(self) -> None:
        """Closes the connections."""
        self._t.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- downloads --------------------------------------------------------------------------

    def download(
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
        """
        Every row of the metrics, all pages, as a pandas DataFrame (``output="pandas"``), a polars
        DataFrame (``"polars"``) or a pyarrow Table (``"arrow"``), with the columns metric_name,
        timestamp (UTC, ms), metric_numeric_value and updated_at (UTC, ms), ordered by metric_name,
        timestamp, updated_at.

        ``metrics``: a name (pattern ``single``), a list of names (``list``), or the text of a
        ``contains``, ``starts_with`` or ``ends_with`` pattern. ``start`` and ``end`` are
        inclusive: ``YYYY-MM-DD``, an ISO 8601 text with offset, a date or a datetime (naive
        means UTC). ``page_rows`` rows are asked per request. ``wire``: ``auto`` reads Arrow and
        falls back to CSV on a server without it; ``arrow`` or ``csv`` force one.
        ``on_page`` is called after each page with a PageInfo.
        """
        if wire not in dl.WIRES:
            raise ValueError(f"wire must be one of {', '.join(dl.WIRES)}")
        query = dl.make_query(metrics, pattern, start, end, latest_only, page_rows)
        return dl.to_output(self._t.run(dl.table_flow(query, self._wires, wire, on_page)), output)

    def download_to(
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
        """
        Writes every row to ``path`` page by page: ``.csv`` (the service's CSV layout),
        ``.parquet``, or ``.arrow`` / ``.arrows`` (an Arrow IPC stream). After an interruption, the
        same call resumes after the last page on disk (``resume=False`` starts over). Read the
        file back with ``meridian_client.read_file`` or your library's reader.
        """
        query = dl.make_query(metrics, pattern, start, end, latest_only, page_rows)
        return self._t.run(dl.file_flow(query, path, self._wires, resume=resume, on_page=on_page))

    # --- uploads ----------------------------------------------------------------------------

    def upload(
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
        """
        Uploads a DataFrame (pandas or polars), a pyarrow Table, or a file path, and waits for its
        task (``wait=False`` returns it as accepted).

        A frame has ``timestamp`` and ``value`` (or ``metric_numeric_value``) columns, and
        ``metric_name`` unless ``metric=`` names the one metric; it is sent as ``layout`` (``csv``
        or ``ndjson``), gzip-compressed. The request carries an Idempotency-Key (generated unless
        given), so its retries never store anything twice.

        ``on_error="fail"``: one bad row fails the upload and nothing is stored; the call raises
        TaskFailed whose ``errors`` name the rows (``row`` as the service counts it,
        ``frame_row`` the frame's 0-based row). ``"skip"``: the good rows are stored, and the
        returned task's ``errors`` list the rest.
        """
        source = UploadSource(data, metric, layout).prepare()
        try:
            return self._t.run(up.upload_flow(source.path, metric, on_error, idempotency_key=idempotency_key, wait=wait, timeout=timeout, header_rows=source.header_rows))  # type: ignore[arg-type]
        finally:
            source.close()

    def upload_points(
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
        """
        Pushes a few points of one metric as a JSON upload (up to the server's cap, 100,000 by
        default): ``timestamps`` are datetimes (naive means UTC) or text with an offset.
        """
        return self._t.run(up.points_flow(name, timestamps, values, on_error=on_error, idempotency_key=idempotency_key, wait=wait, timeout=timeout))

    # --- tasks ------------------------------------------------------------------------------

    def task(self, task_id: str) -> Task:
        """A task as it is now."""
        return Task.from_json(self._t.run(single(tk.task_call(task_id))).json())

    def wait(self, task_id: str, timeout: Optional[float] = None, *, raise_on_failure: bool = True) -> Task:
        """
        Waits for a task to end with long-polls (no polling loop) and returns it; raises
        TaskFailed when it failed (unless ``raise_on_failure=False``), TaskTimeout after ``timeout`` seconds.
        """
        return self._t.run(tk.wait_flow(task_id, timeout, raise_on_failure=raise_on_failure))

    def tasks(self, status: Optional[str] = None, kind: Optional[str] = None, limit: Optional[int] = 100) -> List[Task]:
        """The caller's tasks, newest first: ``status`` (queued, running, succeeded, failed), ``kind`` (metrics_upload, file_definition); ``limit=None`` reads every page."""
        return self._t.run(tk.list_flow(status, kind, limit))
