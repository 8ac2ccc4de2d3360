"""
Metrics downloads: every page of a result, read as Arrow (or CSV from a server without the
Arrow format), returned as a pyarrow Table, a pandas or a polars DataFrame; or written page by
page to a file that a later call resumes after an interruption.

Pages are asked with POST /api/v1/metrics/download (the parameters in a JSON body, so a long
list of names fits) and followed with X-Next-Cursor. Each page is read whole and checked
before it counts, so a page cut off midway is asked again, never half-kept. The next page is
asked as soon as the current one's headers name its cursor (one page ahead at most, _ahead.py),
so the service plans and sorts it while this one is read.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
from functools import partial
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import httpx
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.ipc as pa_ipc

from ._http import Call, Chained, Flow, Reply
from .errors import ApiError

PATTERNS = ("single", "list", "contains", "starts_with", "ends_with")
OUTPUTS = ("pandas", "polars", "arrow")
WIRES = ("auto", "arrow", "csv")
DOWNLOAD_PATH = "/api/v1/metrics/download"
#: Rows asked per page unless told otherwise (the server's ceiling is 10,000,000 by default).
DEFAULT_PAGE_ROWS = 1_000_000

_UTC_MS = pa.timestamp("ms", tz="UTC")
#: metric_name as the service's Arrow sends it: a dictionary (a category in pandas, a
#: Categorical in polars), each name once per record batch rather than once per row.
NAME_TYPE = pa.dictionary(pa.int32(), pa.string())
#: The columns of every download, in the service's order.
SCHEMA = pa.schema(
    [
        pa.field("metric_name", NAME_TYPE),
        pa.field("timestamp", _UTC_MS),
        pa.field("metric_numeric_value", pa.float64()),
        pa.field("updated_at", _UTC_MS),
    ]
)
#: The columns of a file download_to writes: names as plain strings, so each record batch is
#: whole on its own (a batch serialized alone carries no dictionary).
FILE_SCHEMA = SCHEMA.set(0, pa.field("metric_name", pa.string()))
_ARROW_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"

Bound = Union[str, dt.date, dt.datetime, None]
Metrics = Union[str, Sequence[str]]


def format_bound(value: Bound) -> Optional[str]:
    """A start or end bound as the service reads it: text as given, a date as YYYY-MM-DD, a datetime in UTC (naive means UTC) to the millisecond."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dt.datetime):
        when = value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)
        return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{when.microsecond // 1000:03d}Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"start and end take a str, a date or a datetime, not {type(value).__name__}")


@dataclass(frozen=True)
class Query:
    """What rows to download: the service's parameters, checked and normalised."""

    metrics: Union[str, tuple[str, ...]]
    pattern: str
    start: Optional[str]
    end: Optional[str]
    latest_only: bool
    page_rows: int

    def body(self, wire: str, cursor: Optional[str]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "metrics": list(self.metrics) if isinstance(self.metrics, tuple) else self.metrics,
            "pattern": self.pattern,
            "max_rows": self.page_rows,
            "format": wire,
        }
        if self.start is not None:
            body["start_date"] = self.start
        if self.end is not None:
            body["end_date"] = self.end
        if self.latest_only:
            body["latest_only"] = True
        if cursor is not None:
            body["cursor"] = cursor
        return body


def make_query(metrics: Metrics, pattern: Optional[str] = None, start: Bound = None, end: Bound = None, latest_only: bool = False, page_rows: int = DEFAULT_PAGE_ROWS) -> Query:
    """
    The query of a download. ``metrics``: one name (pattern ``single``, the default), a list of
    names (pattern ``list``), or the text of a ``contains`` / ``starts_with`` / ``ends_with`` pattern.
    """
    if isinstance(metrics, str):
        pattern = pattern or "single"
        names: Union[str, tuple[str, ...]] = metrics
    else:
        names = tuple(metrics)
        if not names:
            raise ValueError("metrics is an empty list")
        if pattern not in (None, "list"):
            raise ValueError("a list of metrics goes with pattern='list' (or no pattern)")
        pattern = "list"
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    if page_rows < 1:
        raise ValueError("page_rows must be at least 1")
    return Query(names, pattern, format_bound(start), format_bound(end), bool(latest_only), int(page_rows))


@dataclass
class WireState:
    """Whether the server speaks Arrow (None: not known yet); a client keeps one, so the fallback is found once."""

    arrow: Optional[bool] = None


@dataclass(frozen=True)
class PageInfo:
    """Progress, given to ``on_page`` after each page: its number (from 1), its rows, the rows so far, whether more follow."""

    page: int
    rows: int
    total_rows: int
    more: bool


@dataclass(frozen=True)
class DownloadResult:
    """What ``download_to`` wrote: the file, its rows and pages, and the page it resumed after (0: from the start)."""

    path: Path
    rows: int
    pages: int
    resumed_after_page: int


def _refuses_arrow(error: ApiError) -> bool:
    """A 400 naming the format parameter: a server from before the Arrow format."""
    return error.status == 400 and any(str(e.get("field", "")).split(".")[-1] in ("format", "file_format") for e in error.errors)


def _page_call(query: Query, wire: str, cursor: Optional[str]) -> Call:
    headers = {"Accept": "application/vnd.apache.arrow.stream" if wire == "arrow" else "text/csv"}
    return Call("POST", DOWNLOAD_PATH, json=query.body(wire, cursor), headers=headers)


def decode_page(content: bytes, wire: str) -> pa.Table:
    """One page's rows as a Table of SCHEMA, from an Arrow IPC stream or the CSV layout (its names dictionary-encoded as they are read)."""
    if wire == "arrow":
        table = pa_ipc.open_stream(pa.py_buffer(content)).read_all()
    else:
        table = pa_csv.read_csv(
            io.BytesIO(content),
            convert_options=pa_csv.ConvertOptions(column_types={f.name: f.type for f in SCHEMA}, strings_can_be_null=False),
        )
    if table.schema.names != SCHEMA.names:
        raise ValueError(f"the page's columns are {table.schema.names}, expected {SCHEMA.names}")
    return table if table.schema.equals(SCHEMA) else table.cast(SCHEMA)


def _pages(query: Query, wires: WireState, wire: str, cursor: Optional[str] = None, ahead: Any = None) -> Flow[tuple[Reply, str, Optional[str]]]:
    """
    One page: its reply, the wire format it came in, and the cursor of the next page (None: the
    last). The next page is asked as soon as this one's headers name its cursor (the reply's
    ``ahead``; pass it back as ``ahead`` for the next page), so the service prepares it while
    this body is read and decoded: one page ahead at most.
    """
    while True:
        use = wire if wire != "auto" else ("csv" if wires.arrow is False else "arrow")
        follow = partial(_next_page, query, use)
        try:
            reply = yield Chained(ahead if ahead is not None else _page_call(query, use, cursor), follow)
        except ApiError as error:
            if ahead is None and wire == "auto" and use == "arrow" and _refuses_arrow(error):
                wires.arrow = False
                continue
            raise
        if use == "arrow":
            wires.arrow = True
        return reply, use, reply.headers.get("X-Next-Cursor") or None


def _next_page(query: Query, wire: str, headers: httpx.Headers) -> Optional[Call]:
    """The call of the page after the one whose headers these are; None after the last."""
    cursor = headers.get("X-Next-Cursor")
    return _page_call(query, wire, cursor) if cursor else None


def table_flow(query: Query, wires: WireState, wire: str = "auto", on_page: Optional[Callable[[PageInfo], None]] = None) -> Flow[pa.Table]:
    """Every page of the query, concatenated into one Table of SCHEMA."""
    tables: list[pa.Table] = []
    cursor: Optional[str] = None
    ahead: Any = None
    total = 0
    while True:
        reply, used, cursor = yield from _pages(query, wires, wire, cursor, ahead)
        ahead = reply.ahead
        table = decode_page(reply.content, used)
        tables.append(table)
        total += table.num_rows
        if on_page is not None:
            on_page(PageInfo(len(tables), table.num_rows, total, cursor is not None))
        if cursor is None:
            return one_dictionary(pa.concat_tables(tables)) if tables else SCHEMA.empty_table()


def one_dictionary(table: pa.Table) -> pa.Table:
    """
    The table with one dictionary of names for all its batches (each batch of the service
    brings its own): pandas then makes its category without merging hundreds of them, and two
    tables of the same rows compare equal whatever their batches were.
    """
    return table.unify_dictionaries()


def to_output(table: pa.Table, output: str) -> Any:
    """
    The table as asked: a pyarrow Table, a pandas DataFrame or a polars DataFrame. For pandas
    the table is given up as it converts (``self_destruct``: each column's Arrow memory is freed
    once converted, so the peak is about one copy of the rows, not two) and each column stays a
    block of its own (``split_blocks``: no copy into consolidated 2-D blocks); the table must
    not be used after.
    """
    if output == "arrow":
        return table
    if output == "pandas":
        try:
            import pandas  # noqa: F401
        except ImportError as e:
            raise ImportError("output='pandas' needs pandas: pip install 'meridian-metrics-client[pandas]'") from e
        return table.to_pandas(self_destruct=True, split_blocks=True)
    if output == "polars":
        try:
            import polars
        except ImportError as e:
            raise ImportError("output='polars' needs polars: pip install 'meridian-metrics-client[polars]'") from e
        return polars.from_arrow(table)
    raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")


# --- resumable writes -------------------------------------------------------------------------

_KINDS = {".csv": "csv", ".parquet": "parquet", ".arrow": "arrow", ".arrows": "arrow", ".ipc": "arrow"}


def file_kind(path: Path) -> str:
    """What a download_to path is written as, from its suffix: csv, parquet or arrow (an Arrow IPC stream)."""
    kind = _KINDS.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: the suffix must be one of {', '.join(sorted(_KINDS))}")
    return kind


def _save_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    os.replace(tmp, path)


def _load_state(path: Path, fingerprint: dict[str, Any], partial: Path) -> Optional[dict[str, Any]]:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("query") != fingerprint or not partial.exists():
        return None
    if partial.stat().st_size < int(state.get("offset", -1)) or state.get("cursor") is None:
        return None
    return state


def file_flow(query: Query, path: Union[str, "os.PathLike[str]"], wires: WireState, *, resume: bool = True, on_page: Optional[Callable[[PageInfo], None]] = None) -> Flow[DownloadResult]:
    """
    Writes every page of the query to ``path`` (csv, parquet or Arrow IPC stream, by suffix).

    While it runs the rows go to ``<path>.partial`` and ``<path>.resume.json`` records, after
    each page is on disk, the cursor of the next one and the size written. A call for the same
    query and path after an interruption (``resume=True``) cuts the partial file back to that
    size and goes on from that cursor. At the end the file is moved to ``path`` (a parquet
    file is written from the partial Arrow stream) and the state removed.
    """
    target = Path(path)
    kind = file_kind(target)
    partial = target.with_name(target.name + ".partial")
    state_path = target.with_name(target.name + ".resume.json")
    fingerprint = {**asdict(query), "metrics": list(query.metrics) if isinstance(query.metrics, tuple) else query.metrics, "kind": kind}
    state = _load_state(state_path, fingerprint, partial) if resume else None
    resumed_after = int(state["pages"]) if state else 0
    cursor: Optional[str] = state["cursor"] if state else None
    rows = int(state["rows"]) if state else 0
    pages = resumed_after
    ahead: Any = None
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(partial, "r+b" if state else "wb") as out:
        if state:
            out.truncate(int(state["offset"]))
            out.seek(int(state["offset"]))
        elif kind != "csv":
            out.write(FILE_SCHEMA.serialize().to_pybytes())
        while True:
            reply, used, cursor = yield from _pages(query, wires, "csv" if kind == "csv" else "auto", cursor, ahead)
            ahead = reply.ahead
            if kind == "csv":
                data = reply.content
                if pages > 0:  # every page repeats the header line
                    data = data[data.find(b"\n") + 1 :]
                page_rows = data.count(b"\n") - (1 if pages == 0 else 0)
                out.write(data)
            else:
                table = decode_page(reply.content, used).cast(FILE_SCHEMA)
                page_rows = table.num_rows
                for batch in table.to_batches():
                    out.write(batch.serialize().to_pybytes())
            out.flush()
            os.fsync(out.fileno())
            pages += 1
            rows += page_rows
            if cursor is not None:
                _save_state(state_path, {"query": fingerprint, "cursor": cursor, "offset": out.tell(), "rows": rows, "pages": pages})
            if on_page is not None:
                on_page(PageInfo(pages, page_rows, rows, cursor is not None))
            if cursor is None:
                break
        if kind != "csv":
            out.write(_ARROW_EOS)
    if kind == "parquet":
        _arrow_stream_to_parquet(partial, target)
        partial.unlink()
    else:
        os.replace(partial, target)
    state_path.unlink(missing_ok=True)
    return DownloadResult(target, rows, pages, resumed_after)


def _arrow_stream_to_parquet(source: Path, target: Path) -> None:
    import pyarrow.parquet as pq

    tmp = target.with_name(target.name + ".tmp")
    with pa.memory_map(str(source)) as f, pq.ParquetWriter(str(tmp), FILE_SCHEMA) as writer:
        reader = pa_ipc.open_stream(f)
        for batch in reader:
            writer.write_batch(batch)
    os.replace(tmp, target)


def read_file(path: Union[str, "os.PathLike[str]"]) -> pa.Table:
    """A file written by download_to, back as a Table of SCHEMA (csv, parquet or Arrow stream, by suffix)."""
    target = Path(path)
    kind = file_kind(target)
    if kind == "arrow":
        with pa.memory_map(str(target)) as f:
            table = pa_ipc.open_stream(f).read_all()
    elif kind == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(str(target))
    else:
        table = decode_page(target.read_bytes(), "csv")
    return one_dictionary(table.cast(SCHEMA))
