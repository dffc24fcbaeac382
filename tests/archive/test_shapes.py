"""Archives of packets of different shapes: vendors, tools, dates, extensions, validity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from kernel_evidence._codec.canonical import packet_id_for
from kernel_evidence.archive import archive_packets, build_report, export_packets
from kernel_evidence.archive._rows import created_micros, partition_from

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"


def _example(name: str) -> dict[str, Any]:
    data = json.loads((EXAMPLES / name).read_text())
    data.pop("packet_id", None)
    return data


def _with_id(data: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in data.items() if k != "packet_id"}
    return {"packet_id": packet_id_for(body), **body}


def _write(path: Path, packets: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(p, separators=(",", ":"), ensure_ascii=False) + "\n" for p in packets))
    return path


def _rows(root: Path) -> list[dict[str, Any]]:
    return ds.dataset(root, format="parquet", partitioning="hive").to_table().to_pylist()


@pytest.mark.parametrize(
    "text",
    ["2026-02-30T00:00:00Z", "2023-02-29T12:00:00Z", "2026-04-31T00:00:00Z", "2026-01-01T00:00:61Z"],
)
def test_an_impossible_created_at_is_null_and_in_no_month(text: str) -> None:
    # the regular expression lets these through; timegm made 2026-02-30 the 2nd of March,
    # while the partition said February
    assert created_micros(text) is None
    assert partition_from("amd", text) == ("amd", "unknown")


def test_real_dates_keep_their_month() -> None:
    assert partition_from("amd", "2024-02-29T23:59:59.999999999Z") == ("amd", "2024-02")
    leap = created_micros("2026-12-31T23:59:60Z")  # a leap second stays in its month
    assert leap is not None and leap == created_micros("2026-12-31T23:59:59Z")
    assert partition_from("nvidia", "2026-12-31T23:59:60Z") == ("nvidia", "2026-12")


def test_created_at_column_and_month_partition_agree(tmp_path: Path) -> None:
    packets = []
    for text in ["2026-02-30T00:00:00Z", "2026-02-28T00:00:00Z", "2025-12-31T23:59:60Z"]:
        p = _example("nvidia_h100_gemm_vs_cublaslt.json")
        p["created_at"] = text
        packets.append(_with_id(p))
    root = tmp_path / "archive"
    summary = archive_packets(
        [_write(tmp_path / "in.jsonl", packets)], root, allow_invalid=True, parallel=False
    )
    assert summary.added == 3
    for row in _rows(root):
        ts = row["created_at"]
        assert (ts is None) == (row["month"] == "unknown")
        if ts is not None:
            assert ts.strftime("%Y-%m") == row["month"]


def test_report_names_every_vendor(tmp_path: Path) -> None:
    # vendors whose packets have no speed-of-light fraction (serving, failed, unidentified
    # hardware) appeared nowhere in the report
    packets = [_with_id(_example("amd_mi300x_gemm_fp8_vs_hipblaslt.json"))]
    serving = _example("serving_vllm_llama8b_h100.json")
    serving["hardware"]["vendor"] = "huawei"
    packets.append(_with_id(serving))
    no_hw = _example("failed_nan_inf.json")
    no_hw.pop("hardware", None)
    packets.append(_with_id(no_hw))
    root = tmp_path / "archive"
    archive_packets([_write(tmp_path / "in.jsonl", packets)], root, allow_invalid=True, parallel=False)
    vendors = {r["vendor"] for r in _rows(root)}
    assert vendors == {"amd", "huawei", "unknown"}
    html, n = build_report(root, generated_at="2026-01-01T00:00:00Z")
    assert n == 3
    assert "<h2>Packets by vendor</h2>" in html
    for v in vendors:
        assert f"<td>{v}</td>" in html


def test_extensions_of_every_shape_round_trip_and_read_everywhere(tmp_path: Path) -> None:
    values: list[Any] = [1, "one", {"a": {"b": {"c": [1, {"d": None}]}}}, [1, "x", None], 2.5, True, "ü∂ß"]
    root = tmp_path / "archive"
    archived: list[bytes] = []
    for i, v in enumerate(values):  # one append per shape: files disagree on nothing
        p = _example("nvidia_h100_gemm_vs_cublaslt.json" if i % 2 else "serving_vllm_llama8b_h100.json")
        p["extensions"] = {"acme:meta": {"val": v, "ключ": {"鍵": v}}}
        p["created_at"] = f"20{24 + i % 3}-{1 + i:02d}-0{1 + i}T00:00:00Z"
        line = json.dumps(_with_id(p), separators=(",", ":"), ensure_ascii=bool(i % 2)).encode()
        archived.append(line)
        src = tmp_path / f"in{i}.jsonl"
        src.write_bytes(line + b"\n")
        assert archive_packets([src], root, parallel=False).added == 1
    out = tmp_path / "out.jsonl"
    export_packets(root, out)
    assert sorted(out.read_bytes().splitlines()) == sorted(archived)

    table = ds.dataset(root, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == len(values)
    duckdb = pytest.importorskip("duckdb")
    n, months = (
        duckdb.connect()
        .execute(
            f"SELECT count(*), count(DISTINCT month) FROM read_parquet('{root}/**/*.parquet', hive_partitioning = true)"
        )
        .fetchone()
    )
    assert n == len(values) and months == len(values)
    pl = pytest.importorskip("polars")
    lf = pl.scan_parquet(f"{root}/**/*.parquet", hive_partitioning=True)
    assert lf.select(pl.len()).collect().item() == len(values)
    assert lf.select(pl.col("subject_kind").n_unique()).collect().item() == 2


def test_same_device_named_differently_keeps_each_name(tmp_path: Path) -> None:
    names = ["NVIDIA H100 80GB HBM3", "H100", "nvidia h100 80gb hbm3", "NVIDIA H100-SXM5-80GB"]
    packets = []
    for name in names:
        p = _example("nvidia_h100_gemm_vs_cublaslt.json")
        p["hardware"]["device"] = name
        packets.append(_with_id(p))
    root = tmp_path / "archive"
    archive_packets([_write(tmp_path / "in.jsonl", packets)], root, parallel=False)
    rows = _rows(root)
    assert sorted(r["device"] for r in rows) == sorted(names)
    assert {r["vendor"] for r in rows} == {"nvidia"}
    assert len({r["sol_fraction"] for r in rows}) == 1
