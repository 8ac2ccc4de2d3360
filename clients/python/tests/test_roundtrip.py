"""DataFrame → upload → download → the same frame, at a million rows and in each frame library."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from meridian_client import Client

ROWS = 1_000_000
METRICS = 10


def frame(prefix: str, rows: int, metrics: int) -> pd.DataFrame:
    """``rows`` points over ``metrics`` metrics, in the order a download returns them (metric, then time)."""
    per = rows // metrics
    rng = np.random.default_rng(7)
    names = np.repeat([f"{prefix}m{i:02d}" for i in range(metrics)], per)
    start = np.datetime64("2024-01-01T00:00:00.000", "ms")
    stamps = np.tile(start + np.arange(per) * np.timedelta64(1001, "ms"), metrics)
    values = rng.normal(size=per * metrics) * 10.0 ** rng.integers(-5, 6, size=per * metrics)
    return pd.DataFrame({
        "metric_name": pd.Series(names, dtype="str"),
        "timestamp": pd.Series(stamps).dt.tz_localize("UTC"),
        "metric_numeric_value": values,
    })


def test_a_million_row_frame_round_trips_exactly(client: Client, prefix: str) -> None:
    df = frame(prefix, ROWS, METRICS)
    t0 = time.monotonic()
    task = client.upload(df)
    t1 = time.monotonic()
    assert task.succeeded and task.result is not None
    assert task.result["points_accepted"] == ROWS
    assert task.result["rows_rejected"] == 0
    back = client.download(prefix, pattern="starts_with", wire="arrow")
    t2 = time.monotonic()
    as_csv = client.download(prefix, pattern="starts_with", wire="csv")
    t3 = time.monotonic()
    print(f"\n1M rows: upload and ingest {t1 - t0:.1f} s, download {t2 - t1:.1f} s as Arrow, {t3 - t2:.1f} s as CSV")
    pd.testing.assert_frame_equal(back, as_csv)
    assert list(back.columns) == ["metric_name", "timestamp", "metric_numeric_value", "updated_at"]
    assert str(back["timestamp"].dtype) == "datetime64[ms, UTC]"
    assert isinstance(back["metric_name"].dtype, pd.CategoricalDtype)  # the names come as a dictionary
    pd.testing.assert_frame_equal(back.drop(columns="updated_at").astype({"metric_name": "str"}), df, check_dtype=False)
    assert back["metric_numeric_value"].to_numpy().tobytes() == df["metric_numeric_value"].to_numpy().tobytes()  # bit for bit
    assert (back["timestamp"].to_numpy() == df["timestamp"].to_numpy()).all()


def test_a_polars_frame_round_trips(client: Client, prefix: str) -> None:
    df = pl.from_pandas(frame(prefix, 3000, 3))
    client.upload(df)
    back = client.download(prefix, pattern="starts_with", output="polars", page_rows=700)
    assert isinstance(back, pl.DataFrame)
    assert back.schema["metric_name"] == pl.Categorical
    assert back.drop("updated_at").with_columns(pl.col("metric_name").cast(pl.String)).equals(df)


def test_an_arrow_table_round_trips_with_one_metric(client: Client, prefix: str) -> None:
    name = f"{prefix}one"
    table = pa.table({
        "timestamp": pa.array([1_700_000_000_000 + i * 1000 for i in range(500)], pa.timestamp("ms", tz="UTC")),
        "value": pa.array([i / 7 for i in range(500)], pa.float64()),
    })
    client.upload(table, metric=name, layout="ndjson")
    back = client.download(name, output="arrow")
    assert isinstance(back, pa.Table)
    assert back.column("metric_name").to_pylist() == [name] * 500
    assert back.column("timestamp").equals(table.column("timestamp"))
    assert back.column("metric_numeric_value").to_pylist() == table.column("value").to_pylist()


@pytest.mark.parametrize("layout", ["csv", "ndjson"])
def test_naive_timestamps_are_utc_and_integers_are_values(client: Client, prefix: str, layout: str) -> None:
    name = f"{prefix}{layout}"
    df = pd.DataFrame({"timestamp": pd.date_range("2024-03-01", periods=50, freq="h"), "value": range(50)})
    client.upload(df, metric=name, layout=layout)
    back = client.download(name)
    assert back["timestamp"].tolist() == df["timestamp"].dt.tz_localize("UTC").tolist()
    assert back["metric_numeric_value"].tolist() == [float(v) for v in range(50)]
