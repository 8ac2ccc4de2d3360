"""Downloads: patterns, bounds, pages, wire formats and resumable writes to a file."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from meridian_client import ApiError, Client, PageInfo, read_file

BASE = pd.Timestamp("2024-05-01T00:00:00Z")


@pytest.fixture
def seeded(client: Client, prefix: str) -> str:
    """Three metrics of 1000 points each (one a minute from BASE), and one outside the prefix's pattern."""
    rows = []
    for metric in ("a", "b", "c"):
        rows.append(pd.DataFrame({
            "metric_name": f"{prefix}{metric}",
            "timestamp": pd.date_range(BASE, periods=1000, freq="min"),
            "value": [float(i) + 0.25 for i in range(1000)],
        }))
    client.upload(pd.concat(rows, ignore_index=True))
    return prefix


def test_patterns_lists_and_single_names(client: Client, seeded: str) -> None:
    assert len(client.download(seeded, pattern="starts_with")) == 3000
    assert set(client.download([f"{seeded}a", f"{seeded}c"])["metric_name"]) == {f"{seeded}a", f"{seeded}c"}
    assert len(client.download(f"{seeded}b")) == 1000
    assert len(client.download(f"{seeded}b", pattern="ends_with")) == 1000
    empty = client.download(f"{seeded}nothing-matches", pattern="starts_with")
    assert len(empty) == 0 and list(empty.columns) == ["metric_name", "timestamp", "metric_numeric_value", "updated_at"]


def test_a_name_that_does_not_exist_is_a_404(client: Client, seeded: str) -> None:
    with pytest.raises(ApiError) as caught:
        client.download(f"{seeded}missing")
    assert caught.value.status == 404


def test_bounds_are_inclusive_in_each_form(client: Client, seeded: str) -> None:
    name = f"{seeded}a"
    start = BASE + pd.Timedelta(minutes=10)
    end = BASE + pd.Timedelta(minutes=19)
    as_text = client.download(name, start="2024-05-01T00:10:00Z", end="2024-05-01T00:19:00+00:00")
    as_datetime = client.download(name, start=start.to_pydatetime(), end=end.to_pydatetime().replace(tzinfo=None))
    assert len(as_text) == 10
    pd.testing.assert_frame_equal(as_text, as_datetime)
    assert len(client.download(name, start=dt.date(2024, 5, 1), end=dt.date(2024, 5, 1))) == 1000


def test_every_page_is_followed(client: Client, seeded: str) -> None:
    pages: list[PageInfo] = []
    df = client.download(seeded, pattern="starts_with", page_rows=700, on_page=pages.append)
    assert len(df) == 3000
    assert [p.page for p in pages] == [1, 2, 3, 4, 5]
    assert [p.more for p in pages] == [True, True, True, True, False]
    assert pages[-1].total_rows == 3000
    whole = client.download(seeded, pattern="starts_with")
    pd.testing.assert_frame_equal(df, whole)


def test_arrow_and_csv_give_the_same_frame(client: Client, seeded: str) -> None:
    via_arrow = client.download(seeded, pattern="starts_with", wire="arrow", page_rows=1100)
    via_csv = client.download(seeded, pattern="starts_with", wire="csv", page_rows=1100)
    pd.testing.assert_frame_equal(via_arrow, via_csv)


class Interrupt(Exception):
    pass


@pytest.mark.parametrize("suffix", [".arrow", ".parquet", ".csv"])
def test_a_file_download_resumes_after_an_interruption(client: Client, seeded: str, tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"out{suffix}"
    expected = client.download(seeded, pattern="starts_with", output="arrow")

    def stop_after_two(page: PageInfo) -> None:
        if page.page == 2:
            raise Interrupt()

    with pytest.raises(Interrupt):
        client.download_to(target, seeded, pattern="starts_with", page_rows=700, on_page=stop_after_two)
    assert not target.exists()
    assert Path(f"{target}.resume.json").exists()
    seen: list[PageInfo] = []
    result = client.download_to(target, seeded, pattern="starts_with", page_rows=700, on_page=seen.append)
    assert result.resumed_after_page == 2
    assert [p.page for p in seen] == [3, 4, 5]
    assert result.rows == 3000 and result.pages == 5
    assert not Path(f"{target}.resume.json").exists() and not Path(f"{target}.partial").exists()
    got = read_file(target)
    assert got.equals(expected)
    if suffix == ".parquet":
        assert pq.read_table(target).num_rows == 3000
    if suffix == ".csv":
        text = target.read_text()
        assert text.startswith("metric_name,timestamp,metric_numeric_value,updated_at\n")
        assert text.count("metric_name,") == 1


def test_a_different_query_does_not_resume_another_ones_file(client: Client, seeded: str, tmp_path: Path) -> None:
    target = tmp_path / "out.arrow"

    def stop(page: PageInfo) -> None:
        raise Interrupt()

    with pytest.raises(Interrupt):
        client.download_to(target, seeded, pattern="starts_with", page_rows=700, on_page=stop)
    result = client.download_to(target, f"{seeded}a", page_rows=700)
    assert result.resumed_after_page == 0
    assert read_file(target).num_rows == 1000
