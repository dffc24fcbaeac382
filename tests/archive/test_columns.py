"""Columns a dashboard groups by: two questions answered with plain column queries (no JSON
paths) in DuckDB, Polars, pyarrow and Spark, on a fresh archive and on one that mixes files
written with the layout 1.1 columns and files written now.

"Median kernel time per device and operator" and "TTFT p99 per engine version" are answered
from the packets themselves (their JSON, read here with the standard library) and compared
with what each engine computes from the columns.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import statistics
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from kernel_evidence.archive import COLUMNS, FILE_SCHEMA, archive_packets, open_archive, read_table
from kernel_evidence.devices import canonical_id

from ._factory import make_packets

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "archive.md"

#: the columns layout 1.2 added; an archive of layout 1.1 has every other column
NEW_IN_1_2 = (
    "measured_at", "relation", "dtype", "device_id", "kernel_median_us", "engine", "engine_version", "model",
    "ttft_median_ms", "ttft_p99_ms", "tpot_median_ms", "tpot_p99_ms", "itl_median_ms",
    "itl_p99_ms", "e2el_median_ms", "e2el_p99_ms", "serving_total_tok_per_s",
    "serving_completed", "serving_failed", "serving_max_concurrency", "serving_request_rate",
)  # fmt: skip

_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}

KERNEL_SQL = """
SELECT device_id, operator, median(kernel_median_us) AS median_us, count(*) AS packets
FROM {src}
WHERE kernel_median_us IS NOT NULL
GROUP BY device_id, operator
"""
SERVING_SQL = """
SELECT engine, engine_version, max(ttft_p99_ms) AS ttft_p99_ms, count(*) AS packets
FROM {src}
WHERE ttft_p99_ms IS NOT NULL
GROUP BY engine, engine_version
"""


def _serving_packets() -> list[dict[str, Any]]:
    """The serving example under several engine versions, loads and latencies; TTFT in
    seconds for one of them (the column is in ms whatever the packet's unit)."""
    base = json.loads((EXAMPLES / "serving_vllm_llama8b_h100.json").read_text())
    out = []
    for i, (engine, version, concurrency) in enumerate(
        [("vLLM", "0.11.0", 64), ("vLLM", "0.11.0", 128), ("vLLM", "0.10.1", 64), ("SGLang", "0.5.2", 96)]
    ):
        p = copy.deepcopy(base)
        p.pop("packet_id", None)
        p["task"]["serving"]["engine"] = {"name": engine, "version": version}
        p["task"]["serving"]["max_concurrency"] = concurrency
        cmd = p["replay"]["command"]  # the replay runs what the packet records (KE106)
        cmd[cmd.index("--max-concurrency") + 1] = str(concurrency)
        ttft = p["timing"]["serving"]["ttft"]
        scale = 1.0 + 0.25 * i
        for key in ("median", "mean", "min", "max"):
            ttft[key] = round(ttft[key] * scale, 3)
        ttft["percentiles"] = {k: round(v * scale, 3) for k, v in ttft["percentiles"].items()}
        if i == 3:  # the same latencies, written in seconds
            for key in ("median", "mean", "std", "min", "max"):
                ttft[key] = ttft[key] / 1e3
            ttft["percentiles"] = {k: v / 1e3 for k, v in ttft["percentiles"].items()}
            ttft["unit"] = "s"
        p["created_at"] = f"2026-11-2{i}T09:30:00Z"
        p["measured_at"] = "2026-08-14T12:00:00Z" if i == 0 else None
        if p["measured_at"] is None:
            del p["measured_at"]
        out.append(p)
    return out


def _kernel_packets() -> list[dict[str, Any]]:
    return [p.to_dict() for p in make_packets(36)]


def expected_kernel(packets: list[dict[str, Any]]) -> dict[tuple[str | None, str], tuple[float, int]]:
    by: dict[tuple[str | None, str], list[float]] = defaultdict(list)
    for p in packets:
        if p["subject"]["kind"] != "kernel" or "timing" not in p:
            continue
        stats, hw = p["timing"].get("stats"), p["hardware"]
        if not stats or stats.get("median") is None:
            continue
        dev = hw.get("device_id") or canonical_id(hw["device"], arch=hw.get("arch"))
        by[(dev, p["task"]["operator"])].append(stats["median"] * _US[stats["unit"]])
    return {k: (statistics.median(v), len(v)) for k, v in by.items()}


def expected_serving(packets: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, int]]:
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for p in packets:
        ttft = p.get("timing", {}).get("serving", {}).get("ttft")
        if p["subject"]["kind"] != "serving" or not ttft:
            continue
        engine = p["task"]["serving"]["engine"]
        by[(engine["name"], engine["version"])].append(ttft["percentiles"]["p99"] * _MS[ttft["unit"]])
    return {k: (max(v), len(v)) for k, v in by.items()}


def _rows(records: list[dict[str, Any]], keys: tuple[str, str], value: str) -> dict[Any, tuple[float, int]]:
    return {(r[keys[0]], r[keys[1]]): (r[value], r["packets"]) for r in records}


def _close(got: dict[Any, tuple[float, int]], want: dict[Any, tuple[float, int]]) -> None:
    assert got.keys() == want.keys()
    for k, (v, n) in want.items():
        assert got[k][1] == n, k
        assert got[k][0] == pytest.approx(v, rel=1e-9), k


@pytest.fixture(scope="module")
def packets() -> list[dict[str, Any]]:
    return _kernel_packets() + _serving_packets()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory, packets: list[dict[str, Any]]) -> Path:
    tmp = tmp_path_factory.mktemp("columns")
    src = tmp / "in.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in packets))
    summary = archive_packets([src], tmp / "archive")
    assert summary.refused_count == 0, [r.line() for r in summary.refused]
    assert summary.added == len(packets)
    return tmp / "archive"


@pytest.fixture(scope="module")
def mixed(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[dict[str, Any]], list[dict[str, Any]]]:
    """An archive written with the layout 1.1 columns (the serving packets and half the
    kernel packets), then appended to by this writer (the rest)."""
    tmp = tmp_path_factory.mktemp("mixed")
    kernels, serving = _kernel_packets(), _serving_packets()
    old, new = kernels[:18] + serving[:2], kernels[18:] + serving[2:]
    root = tmp / "archive"
    (tmp / "old.jsonl").write_text("".join(json.dumps(p) + "\n" for p in old))
    (tmp / "new.jsonl").write_text("".join(json.dumps(p) + "\n" for p in new))
    assert archive_packets([tmp / "old.jsonl"], root).added == len(old)
    _downgrade_to_1_1(root)
    assert archive_packets([tmp / "new.jsonl"], root).added == len(new)
    marker = json.loads((root / "_kevidence_archive.json").read_text())
    assert marker["layout_version"] == "1.2"
    return root, old, new


def _downgrade_to_1_1(root: Path) -> None:
    """Rewrite every data file as a layout 1.1 writer wrote it: without the 1.2 columns,
    partitioned by ``created_at``, layout ``1.1`` in the footer and the marker."""
    old_columns = [c.name for c in COLUMNS if c.name not in NEW_IN_1_2]
    files = sorted(root.rglob("*.parquet"))
    for f in files:
        table = pq.read_table(f, partitioning=None)
        meta = dict(table.schema.metadata or {})
        meta[b"kevidence.archive_layout_version"] = b"1.1"
        created = table.column("created_at").to_pylist()
        out = table.select(old_columns).replace_schema_metadata(meta)
        month = {c.strftime("%Y-%m") for c in created}
        assert len(month) == 1  # this test's old packets were created in one month
        target = f.parent.parent / f"month={month.pop()}" / f.name
        target.parent.mkdir(exist_ok=True)
        f.unlink()
        pq.write_table(out, target)
        if not any(f.parent.iterdir()):
            f.parent.rmdir()
    rel = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.parquet"))
    (root / "_kevidence_commits.json").write_text(json.dumps({"files": rel}))
    marker = root / "_kevidence_archive.json"
    marker.write_text(marker.read_text().replace('"1.2"', '"1.1"'))
    assert pq.read_schema(root / rel[0]).names == old_columns


# -- the columns -----------------------------------------------------------------------


def test_serving_and_kernel_columns_are_apart(fresh: Path) -> None:
    t = read_table(fresh, ["subject_kind", "kernel_median_us", "ttft_median_ms", "e2el_p99_ms", "engine"])
    for row in t.to_pylist():
        if row["subject_kind"] == "kernel":
            assert row["kernel_median_us"] is not None and row["ttft_median_ms"] is None
            assert row["engine"] is None and row["e2el_p99_ms"] is None
        else:
            assert row["kernel_median_us"] is None and row["engine"] is not None
            assert row["ttft_median_ms"] is not None and row["e2el_p99_ms"] is not None


def test_serving_columns_hold_the_packets_values(fresh: Path, packets: list[dict[str, Any]]) -> None:
    t = read_table(fresh, None, ds.field("subject_kind") == "serving").to_pylist()
    by_time = {r["created_at"].strftime("%Y-%m-%dT%H:%M:%SZ"): r for r in t}
    for p in packets:
        if p["subject"]["kind"] != "serving":
            continue
        row, s, ts = by_time[p["created_at"]], p["timing"]["serving"], p["task"]["serving"]
        assert (row["engine"], row["engine_version"], row["model"]) == (
            ts["engine"]["name"],
            ts["engine"]["version"],
            ts["model"],
        )
        for key in ("ttft", "tpot", "e2el"):
            f = _MS[s[key]["unit"]]
            assert row[f"{key}_median_ms"] == pytest.approx(s[key]["median"] * f)
            assert row[f"{key}_p99_ms"] == pytest.approx(s[key]["percentiles"]["p99"] * f)
        assert row["itl_median_ms"] is None  # the packet has no ITL
        assert row["serving_request_per_s"] == s["request_throughput"]["value"]
        assert row["serving_output_tok_per_s"] == s["output_throughput"]["value"]
        assert row["serving_total_tok_per_s"] == s["total_token_throughput"]["value"]
        assert (row["serving_completed"], row["serving_failed"]) == (s["completed"], s["failed"])
        assert row["serving_max_concurrency"] == ts["max_concurrency"]
        # "inf" (all requests at once) is null: number columns hold finite numbers only
        rate = ts["request_rate"]
        assert row["serving_request_rate"] == (None if rate == "inf" else float(rate))
        assert row["device_id"] == "nvidia-h100-sxm5-80gb"


def test_measured_at_chooses_the_month_and_created_at_stays(fresh: Path) -> None:
    t = read_table(fresh, ["created_at", "measured_at", "month", "subject_kind"])
    rows = [r for r in t.to_pylist() if r["measured_at"] is not None]
    assert len(rows) == 1
    row = rows[0]
    assert row["month"] == "2026-08" == row["measured_at"].strftime("%Y-%m")
    assert row["created_at"].strftime("%Y-%m") == "2026-11"
    others = [r for r in t.to_pylist() if r["measured_at"] is None]
    assert all(r["month"] == r["created_at"].strftime("%Y-%m") for r in others)
    assert (fresh / "vendor=nvidia" / "month=2026-08").is_dir()


def test_dtype_and_device_id(fresh: Path) -> None:
    t = read_table(fresh, ["dtypes", "dtype", "device", "arch", "device_id"]).to_pylist()
    for row in t:
        assert row["dtype"] == (",".join(row["dtypes"]) if row["dtypes"] else None)
        assert row["device_id"] == canonical_id(row["device"], arch=row["arch"])
    assert {r["device_id"] for r in t} >= {"nvidia-h100-sxm5-80gb", "amd-mi300x"}


# -- the two questions, four engines ---------------------------------------------------


def test_duckdb(fresh: Path, packets: list[dict[str, Any]]) -> None:
    src = f"read_parquet('{fresh}/**/*.parquet', hive_partitioning = true)"
    con = duckdb.connect()
    k = con.sql(KERNEL_SQL.format(src=src)).to_arrow_table().to_pylist()
    s = con.sql(SERVING_SQL.format(src=src)).to_arrow_table().to_pylist()
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(packets))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(packets))


def test_docs_queries_of_the_new_columns(fresh: Path) -> None:
    """The docs' two queries on these columns run as written and find every group."""
    doc = DOCS.read_text()
    blocks = [b.split("```", 1)[0] for b in doc.split("```sql duckdb")[1:]]
    ours = [b for b in blocks if "kernel_median_us" in b or "ttft_p99_ms" in b]
    assert len(ours) == 2
    con = duckdb.connect()
    for sql in ours:
        query = sql.replace("'archive/", f"'{fresh}/").strip().rstrip(";")
        (n,) = con.execute(f"SELECT count(*) FROM ({query})").fetchone()
        assert n >= 3, sql


def _polars(lf: pl.LazyFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    k = (
        lf.filter(pl.col("kernel_median_us").is_not_null())
        .group_by("device_id", "operator")
        .agg(pl.col("kernel_median_us").median().alias("median_us"), pl.len().alias("packets"))
        .collect()
        .to_dicts()
    )
    s = (
        lf.filter(pl.col("ttft_p99_ms").is_not_null())
        .group_by("engine", "engine_version")
        .agg(pl.col("ttft_p99_ms").max(), pl.len().alias("packets"))
        .collect()
        .to_dicts()
    )
    return k, s


def test_polars(fresh: Path, packets: list[dict[str, Any]]) -> None:
    k, s = _polars(pl.scan_parquet(f"{fresh}/**/*.parquet", hive_partitioning=True))
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(packets))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(packets))


def _pyarrow(table: pa.Table) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    kt = table.filter(pc.is_valid(table["kernel_median_us"]))
    k = kt.group_by(["device_id", "operator"]).aggregate(
        [("kernel_median_us", "list"), ("kernel_median_us", "count")]
    )
    # pyarrow's group_by has only an approximate median; the exact one from the grouped lists
    k_rows = [
        {"device_id": r["device_id"], "operator": r["operator"],
         "median_us": statistics.median(r["kernel_median_us_list"]), "packets": r["kernel_median_us_count"]}
        for r in k.to_pylist()
    ]  # fmt: skip
    st = table.filter(pc.is_valid(table["ttft_p99_ms"]))
    s = st.group_by(["engine", "engine_version"]).aggregate(
        [("ttft_p99_ms", "max"), ("ttft_p99_ms", "count")]
    )
    s_rows = [
        {"engine": r["engine"], "engine_version": r["engine_version"], "ttft_p99_ms": r["ttft_p99_ms_max"],
         "packets": r["ttft_p99_ms_count"]}
        for r in s.to_pylist()
    ]  # fmt: skip
    return k_rows, s_rows


def test_pyarrow(fresh: Path, packets: list[dict[str, Any]]) -> None:
    dataset = ds.dataset(fresh, format="parquet", partitioning="hive")
    cols = ["device_id", "operator", "kernel_median_us", "engine", "engine_version", "ttft_p99_ms"]
    k, s = _pyarrow(dataset.to_table(columns=cols))
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(packets))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(packets))


# -- an archive of layout 1.1, appended to ---------------------------------------------


def test_old_files_read_back_with_the_new_columns_null(mixed: tuple[Path, list[Any], list[Any]]) -> None:
    root, old, new = mixed
    t = read_table(root, ["packet_id", "median_ns", "kernel_median_us", "engine", "subject_kind"])
    assert t.num_rows == len(old) + len(new)
    rows = t.to_pylist()
    # old files: the 1.1 columns are there, the 1.2 ones null
    with_ns = [r for r in rows if r["median_ns"] is not None]
    assert len(with_ns) == len(old) + len(new)
    assert sum(r["kernel_median_us"] is not None for r in rows) == sum(
        p["subject"]["kind"] == "kernel" for p in new
    )
    assert sum(r["engine"] is not None for r in rows) == sum(p["subject"]["kind"] == "serving" for p in new)
    # and the questions, on the packets that have the columns
    k, s = _pyarrow(open_archive(root).to_table())
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(new))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(new))


def test_old_files_in_duckdb_and_polars(mixed: tuple[Path, list[Any], list[Any]]) -> None:
    root, _, new = mixed
    src = f"read_parquet('{root}/**/*.parquet', hive_partitioning = true, union_by_name = true)"
    con = duckdb.connect()
    k = con.sql(KERNEL_SQL.format(src=src)).to_arrow_table().to_pylist()
    s = con.sql(SERVING_SQL.format(src=src)).to_arrow_table().to_pylist()
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(new))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(new))
    # Polars takes the columns of the first file unless given the schema: the archive's
    schema = pl.from_arrow(FILE_SCHEMA.empty_table()).schema
    lf = pl.scan_parquet(
        f"{root}/**/*.parquet", hive_partitioning=True, schema=schema, missing_columns="insert"
    )
    k, s = _polars(lf)
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(new))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(new))


# -- Spark -------------------------------------------------------------------------------


def _java() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and Path(home, "bin", "java").exists()))


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local Spark session (one JVM) for the module, on two cores."""
    missing = []
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        missing.append("pyspark (pip install 'kernel-evidence[spark]')")
    if not _java():
        missing.append("a Java runtime (apt-get install default-jre-headless)")
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail("CI: Spark test needs " + " and ".join(missing) + "; .ci/run installs them")
        pytest.skip("needs " + " and ".join(missing))
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kevidence-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _spark_answers(spark: Any, df: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    df.createOrReplaceTempView("packets")
    sql = KERNEL_SQL.replace("median(kernel_median_us)", "percentile(kernel_median_us, 0.5)")
    k = [r.asDict() for r in spark.sql(sql.format(src="packets")).collect()]
    s = [r.asDict() for r in spark.sql(SERVING_SQL.format(src="packets")).collect()]
    return k, s


@pytest.mark.spark
def test_spark(spark: Any, fresh: Path, packets: list[dict[str, Any]]) -> None:
    k, s = _spark_answers(spark, spark.read.parquet(str(fresh)))
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(packets))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(packets))


@pytest.mark.spark
def test_spark_old_files(spark: Any, mixed: tuple[Path, list[Any], list[Any]]) -> None:
    root, old, new = mixed
    df = spark.read.option("mergeSchema", "true").parquet(str(root))
    assert df.count() == len(old) + len(new)
    k, s = _spark_answers(spark, df)
    _close(_rows(k, ("device_id", "operator"), "median_us"), expected_kernel(new))
    _close(_rows(s, ("engine", "engine_version"), "ttft_p99_ms"), expected_serving(new))
