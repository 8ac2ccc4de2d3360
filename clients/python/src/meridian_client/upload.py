"""
Metrics uploads: a DataFrame (pandas, polars) or pyarrow Table written as the service's CSV or
NDJSON layout, gzip-compressed into a temporary file, sent with an Idempotency-Key (so the
retries of a refused or cut request make one task), then followed to its end; or a few
points as a JSON body.

Frame columns: ``timestamp`` and ``value`` (or ``metric_numeric_value``), plus
``metric_name`` when the frame holds several metrics (then ``metric=`` is left out). A
downloaded frame can be uploaded as it is; its ``updated_at`` is not sent (the service sets
it). Timestamps: a timestamp column (naive means UTC; at most millisecond precision) or text
the service reads (``YYYY-MM-DDTHH:MM:SS[.fff]`` with an offset).
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import struct
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc

from ._http import Call, Flow
from .tasks import Task, wait_flow

LAYOUTS = ("csv", "ndjson")
ON_ERROR = ("fail", "skip")
FILE_UPLOAD_PATH = "/api/v1/metrics_file_upload"
JSON_UPLOAD_PATH = "/api/v1/metrics/upload"
#: Rows formatted at a time: bounds the memory of the text beside the frame's own.
_CHUNK_ROWS = 250_000
_UTC_MS = pa.timestamp("ms", tz="UTC")
_NEEDS_QUOTES = r'[",\r\n]'

Frame = Any  # a pandas DataFrame, a polars DataFrame or a pyarrow Table


@dataclass(frozen=True)
class Prepared:
    """An upload written to a gzip file: where, its layout, the lines before the first row, its metric (None: named by each row)."""

    path: Path
    layout: str
    header_rows: int
    metric: Optional[str]
    rows: int


def as_table(data: Frame) -> pa.Table:
    """A pandas or polars DataFrame, or a pyarrow Table (or RecordBatch), as a pyarrow Table."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    module = type(data).__module__.split(".")[0]
    if module == "polars":
        return data.to_arrow()
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(f"upload takes a pandas or polars DataFrame, a pyarrow Table or a path, not {type(data).__name__}")


def _column(table: pa.Table, *names: str) -> Optional[pa.ChunkedArray]:
    for name in names:
        if name in table.column_names:
            return table.column(name)
    return None


def timestamp_text(column: Union[pa.Array, pa.ChunkedArray]) -> pa.ChunkedArray:
    """Timestamps as the service reads them (``YYYY-MM-DDTHH:MM:SS.fffZ``); text is kept as it is."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_string_view(column.type):
        return pc.cast(column, pa.string())
    if pa.types.is_date(column.type):
        column = pc.cast(column, pa.timestamp("ms"))
    if not pa.types.is_timestamp(column.type):
        raise TypeError(f"timestamp must be a timestamp or text column, not {column.type}")
    if column.type.tz is None:
        column = pc.assume_timezone(column, "UTC")
    try:
        column = pc.cast(column, _UTC_MS)
    except pa.ArrowInvalid as e:
        raise ValueError("timestamps below the millisecond would be cut: the service keeps milliseconds; round them first (pandas: .dt.floor('ms'))") from e
    # %S of a millisecond timestamp carries the fraction: 05.125
    return pc.strftime(column, format="%Y-%m-%dT%H:%M:%SZ")


def value_text(column: Union[pa.Array, pa.ChunkedArray]) -> pa.ChunkedArray:
    """Values as the shortest decimal that reads back to the same double (a missing value stays missing)."""
    if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type) or pa.types.is_decimal(column.type)):
        raise TypeError(f"value must be a numeric column, not {column.type}")
    return pc.cast(pc.cast(column, pa.float64()), pa.string())


def _csv_cell(names: pa.ChunkedArray) -> pa.ChunkedArray:
    """Names as CSV cells: quoted (quotes doubled) only when they hold a quote, a comma or a line break."""
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(names, '"', '""'), '"', "")
    return pc.if_else(pc.match_substring_regex(names, _NEEDS_QUOTES), quoted, names)


def _lines(parts: Sequence[Any]) -> list[pa.Buffer]:
    """
    Joins string columns and literals element-wise into lines, returned as the joined column's
    own text buffers (no copy); a missing cell becomes empty, and the service names its row.
    """
    joined = pc.binary_join_element_wise(*parts, "", null_handling="replace", null_replacement="")
    out: list[pa.Buffer] = []
    for chunk in joined.chunks if isinstance(joined, pa.ChunkedArray) else [joined]:
        if len(chunk) == 0:
            continue
        _, offsets, data = chunk.buffers()
        first = struct.unpack_from("<i", offsets, 4 * chunk.offset)[0]
        last = struct.unpack_from("<i", offsets, 4 * (chunk.offset + len(chunk)))[0]
        if data is not None and last > first:
            out.append(data.slice(first, last - first))
    return out


def _write(out: Any, buffers: list[pa.Buffer]) -> None:
    for buffer in buffers:
        out.write(memoryview(buffer))


def prepare(data: Frame, metric: Optional[str], layout: str, directory: Optional[str] = None, compresslevel: int = 3) -> Prepared:
    """Writes the frame as the upload layout into a gzip temporary file (the caller removes it)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    table = as_table(data)
    ts = _column(table, "timestamp")
    values = _column(table, "value", "metric_numeric_value")
    names = _column(table, "metric_name")
    if ts is None or values is None:
        raise ValueError(f"the frame needs a timestamp column and a value (or metric_numeric_value) column; it has {table.column_names}")
    if names is not None and metric is not None:
        raise ValueError("the frame names each row's metric (metric_name): leave metric= out, or drop the column")
    if names is None and metric is None:
        raise ValueError("say which metric the values belong to: metric='name', or a metric_name column")
    if names is not None and layout != "csv":
        raise ValueError("a frame of several metrics (metric_name) is sent as layout='csv'; NDJSON rows carry no metric name")
    fd, name = tempfile.mkstemp(prefix="meridian-upload-", suffix=".gz", dir=directory)
    os.close(fd)
    path = Path(name)
    try:
        # No name and no time in the gzip header: the same frame makes the same bytes, so an
        # upload repeated under its Idempotency-Key is recognised as the same upload.
        with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0) as out:
            if layout == "csv":
                out.write(b"metric_name,timestamp,metric_numeric_value,updated_at\n" if names is not None else b"timestamp,value\n")
            for start in range(0, table.num_rows, _CHUNK_ROWS):
                t = timestamp_text(ts.slice(start, _CHUNK_ROWS))
                v = value_text(values.slice(start, _CHUNK_ROWS))
                if layout == "ndjson":
                    _write(out, _lines(['{"timestamp":"', t, '","value":', v, "}\n"]))
                elif names is not None:
                    # The download layout: updated_at is read and checked, not stored (the service sets its own).
                    _write(out, _lines([_csv_cell(pc.cast(names.slice(start, _CHUNK_ROWS), pa.string())), ",", t, ",", v, ",", t, "\n"]))
                else:
                    _write(out, _lines([t, ",", v, "\n"]))
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Prepared(path, layout, 1 if layout == "csv" else 0, metric, table.num_rows)


def _check_on_error(on_error: str) -> None:
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be 'fail' or 'skip', not {on_error!r}")


def file_call(path: Path, metric: Optional[str], on_error: str, idempotency_key: str) -> Call:
    """POST /api/v1/metrics_file_upload of a file as the body, under an Idempotency-Key (so it may be retried)."""
    params = {"on_error": on_error}
    if metric is not None:
        params["metric_name"] = metric
    headers = {"Idempotency-Key": idempotency_key, "Content-Type": "application/octet-stream"}
    return Call("POST", FILE_UPLOAD_PATH, params=params, body_file=path, headers=headers, repeatable=True)


def upload_flow(path: Path, metric: Optional[str], on_error: str, *, idempotency_key: Optional[str], wait: bool, timeout: Optional[float], header_rows: Optional[int]) -> Flow[Task]:
    """Sends a file and, with ``wait``, follows its task to the end (TaskFailed when it failed); else returns the task as accepted."""
    _check_on_error(on_error)
    key = idempotency_key or f"py-{uuid.uuid4()}"
    reply = yield file_call(path, metric, on_error, key)
    task_id = str(reply.json()["task_id"])
    if not wait:
        reply = yield Call("GET", f"/api/v1/tasks/{quote(task_id, safe='')}")
        return Task.from_json(reply.json(), header_rows)
    return (yield from wait_flow(task_id, timeout, header_rows=header_rows))


def _timestamp_strings(timestamps: Iterable[Any]) -> list[str]:
    items = list(timestamps)
    if all(isinstance(t, str) for t in items):
        return items
    out: list[str] = []
    for t in items:
        if isinstance(t, str):
            out.append(t)
        elif isinstance(t, dt.datetime):
            when = t.replace(tzinfo=dt.timezone.utc) if t.tzinfo is None else t.astimezone(dt.timezone.utc)
            out.append(when.strftime("%Y-%m-%dT%H:%M:%S") + f".{when.microsecond // 1000:03d}Z")
        else:
            raise TypeError(f"timestamps are datetimes or text, not {type(t).__name__}")
    return out


def points_flow(name: str, timestamps: Iterable[Any], values: Iterable[float], *, on_error: str, idempotency_key: Optional[str], wait: bool, timeout: Optional[float]) -> Flow[Task]:
    """POST /api/v1/metrics/upload of a few points as JSON (up to the server's cap, 100,000 by default), then follows the task."""
    _check_on_error(on_error)
    stamps = _timestamp_strings(timestamps)
    numbers = [float(v) for v in values]
    if len(stamps) != len(numbers):
        raise ValueError(f"{len(stamps)} timestamps but {len(numbers)} values")
    body = {"metric_name": name, "values": [{"timestamp": t, "value": v} for t, v in zip(stamps, numbers)]}
    key = idempotency_key or f"py-{uuid.uuid4()}"
    reply = yield Call("POST", JSON_UPLOAD_PATH, params={"on_error": on_error}, json=body, headers={"Idempotency-Key": key})
    task_id = str(reply.json()["task_id"])
    if not wait:
        reply = yield Call("GET", f"/api/v1/tasks/{quote(task_id, safe='')}")
        return Task.from_json(reply.json())
    return (yield from wait_flow(task_id, timeout))

