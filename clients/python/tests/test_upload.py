"""Uploads: failures with their rows, skip, idempotency, points, files, and following tasks."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import pandas as pd
import pytest

from meridian_client import ApiError, Client, TaskFailed


def test_one_bad_row_fails_the_upload_and_names_it(client: Client, prefix: str) -> None:
    name = f"{prefix}bad"
    df = pd.DataFrame({
        "timestamp": ["2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z", "yesterday", "2024-01-01T00:03:00Z"],
        "value": [1.0, 2.0, 3.0, float("inf")],
    })
    with pytest.raises(TaskFailed) as caught:
        client.upload(df, metric=name)
    errors = caught.value.errors
    assert {(e.frame_row, e.column) for e in errors} == {(2, "timestamp"), (3, "value")}
    assert all(e.row == e.frame_row + 2 for e in errors if e.frame_row is not None)  # the header is line 1
    assert "yesterday" in str(caught.value)
    with pytest.raises(ApiError) as nothing:
        client.download(name)
    assert nothing.value.status == 404  # nothing was stored


def test_skip_stores_the_good_rows_and_reports_the_rest(client: Client, prefix: str) -> None:
    name = f"{prefix}skip"
    df = pd.DataFrame({"timestamp": ["2024-01-01T00:00:00Z", "nope", "2024-01-01T00:02:00Z"], "value": [1.0, 2.0, 3.0]})
    task = client.upload(df, metric=name, on_error="skip")
    assert task.succeeded
    assert task.result is not None and task.result["points_accepted"] == 2 and task.result["rows_rejected"] == 1
    assert [e.frame_row for e in task.errors] == [1]
    assert client.download(name)["metric_numeric_value"].tolist() == [1.0, 3.0]


def test_a_retry_with_the_same_idempotency_key_is_the_same_task(client: Client, prefix: str) -> None:
    df = pd.DataFrame({"timestamp": pd.date_range("2024-01-01", periods=10, freq="s", tz="UTC"), "value": range(10)})
    key = f"test-{prefix}"
    first = client.upload(df, metric=f"{prefix}idem", idempotency_key=key)
    again = client.upload(df, metric=f"{prefix}idem", idempotency_key=key)
    assert again.task_id == first.task_id
    assert len(client.download(f"{prefix}idem")) == 10  # stored once
    with pytest.raises(ApiError) as caught:
        client.upload(df.assign(value=df.value + 1), metric=f"{prefix}idem", idempotency_key=key)
    assert caught.value.status == 409


def test_upload_points_pushes_a_few_values(client: Client, prefix: str) -> None:
    name = f"{prefix}points"
    stamps = [dt.datetime(2024, 2, 1, 12, 0, tzinfo=dt.timezone.utc), dt.datetime(2024, 2, 1, 12, 0, 1, 500000), "2024-02-01T13:00:00+01:00"]
    task = client.upload_points(name, stamps, [1, 2.5, -3])
    assert task.succeeded and task.result is not None and task.result["points_accepted"] == 3
    back = client.download(name)
    assert back["timestamp"].dt.strftime("%H:%M:%S.%f").tolist() == ["12:00:00.000000", "12:00:00.000000", "12:00:01.500000"]
    assert sorted(back["metric_numeric_value"].tolist()) == [-3.0, 1.0, 2.5]


def test_a_file_path_is_sent_as_it_is(client: Client, prefix: str, tmp_path: Path) -> None:
    name = f"{prefix}file"
    path = tmp_path / "points.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write("timestamp,value\n2024-01-01T00:00:00Z,1\n2024-01-01T00:00:01Z,2\n")
    task = client.upload(path, metric=name)
    assert task.result is not None and task.result["points_accepted"] == 2


def test_wait_false_then_wait_and_list_the_tasks(client: Client, prefix: str) -> None:
    df = pd.DataFrame({"timestamp": pd.date_range("2024-01-01", periods=100, freq="s", tz="UTC"), "value": range(100)})
    accepted = client.upload(df, metric=f"{prefix}later", wait=False)
    assert accepted.kind == "metrics_upload"
    done = client.wait(accepted.task_id, timeout=120)
    assert done.succeeded and done.task_id == accepted.task_id
    assert client.task(accepted.task_id).status == "succeeded"
    mine = client.tasks(kind="metrics_upload", limit=500)
    assert accepted.task_id in {t.task_id for t in mine}
    assert all(t.kind == "metrics_upload" for t in mine)


def test_wait_for_an_unknown_task_is_a_404(client: Client) -> None:
    with pytest.raises(ApiError) as caught:
        client.wait("00000000-0000-4000-8000-000000000000")
    assert caught.value.status == 404


def test_a_frame_without_its_columns_is_refused_before_sending(client: Client, prefix: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        client.upload(pd.DataFrame({"time": [1], "value": [1.0]}), metric=f"{prefix}x")
    with pytest.raises(ValueError, match="metric"):
        client.upload(pd.DataFrame({"timestamp": ["2024-01-01T00:00:00Z"], "value": [1.0]}))
