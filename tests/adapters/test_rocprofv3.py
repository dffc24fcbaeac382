"""rocprofv3 JSON output (results.json, plain or gzip) through ``kevidence ingest rocprof``.

No real results.json is public (the corpus notes describe one that was studied, not kept);
tests/fixtures/rocprofv3/4242_results.json follows the layout of rocprofiler-sdk's JSON
writer (see ``kernel_evidence.adapters.rocprof._v3_json``). The corpus's rocprofv3 CSVs are
read by path too (their kernels are per dispatch, as before)."""

from __future__ import annotations

import gzip
import json
import shutil
import statistics
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from _v3json import dispatch, results, symbol
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_evidence.adapters import AdapterOptions, get_adapter
from kernel_evidence.errors import InputError
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate
from kernel_evidence.schema import load_schema

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rocprofv3"
RESULTS = FIX / "4242_results.json"
T0 = "2026-11-22T00:00:00Z"
SCHEMA = jsonschema.Draft202012Validator(load_schema())
ADAPTER = get_adapter("rocprof")
ADD = "void addition_kernel<float>(float*, float const*, float const*, int, int)"
DIV = "divide_kernel(float*, float const*, float const*, int, int)"


def read(*paths: Any, **extra: Any) -> tuple[list[EvidencePacket], list[str]]:
    res = ADAPTER.read([str(p) for p in paths], AdapterOptions(created_at=T0, extra=extra))
    for p in res.packets:
        data = json.loads(p.to_json())
        SCHEMA.validate(data)
        again = EvidencePacket.model_validate(data)
        assert again.packet_id == p.packet_id == again.compute_id()
        partial = {"KE101"} | ({"KE801"} if p.hardware is None else set())
        assert {f.rule_id for f in validate(p).findings if f.severity == "error"} <= partial
        cap = p.profiler[0]
        assert all(len(col) == len(cap.kernels or ()) for col in (cap.raw_columns or {}).values())
    return res.packets, res.warnings


def write(tmp: Path, doc: dict[str, Any], name: str = "1_results.json") -> Path:
    f = tmp / name
    f.write_text(json.dumps(doc))
    return f


def test_fixture_one_record_per_kernel_per_gpu() -> None:
    (p,), warnings = read(RESULTS)
    assert warnings == []
    cap = p.profiler[0]
    assert cap.tool == "rocprofv3"
    got = [(k.name, k.device, k.invocations, k.metrics["duration"].value) for k in cap.kernels]
    assert got == [(ADD, 0, 3, 11400.0), (DIV, 0, 1, 11200.0), (ADD, 3, 1, 10000.0)]
    add0 = cap.kernels[0]
    assert add0.raw_name == "_Z15addition_kernelIfEvPT_PKS0_S3_ii.kd" and add0.id == "0/1"
    # Grid_Size counts work-items: 1024 x 1024 of them, in workgroups of 64 (not x 64 again)
    assert add0.grid == [1024, 1024, 1] and add0.block == [64, 1, 1]
    assert add0.metrics["grid_size"].value == 1048576 and add0.metrics["block_size"].value == 64
    assert (
        add0.metrics["registers_per_thread"].value == 8
        and add0.metrics["shared_memory_per_block"].value == 2048
    )
    raw = cap.raw_columns
    # absolute ns timestamps: durations are end - start (12800, 11400, 9840)
    assert raw["duration_sum_ns"][0] == 12800 + 11400 + 9840
    assert raw["duration_min_ns"][0] == 9840 and raw["duration_max_ns"][0] == 12800
    assert raw["start_timestamp"][0] == "1550151853029637 1550151853069637 1550151853089637"
    assert raw["dispatch_id"] == ["1 3 4", 2.0, 5.0] and raw["queue_id"] == ["1 1 2", 1.0, 3.0]
    assert raw["SQ_WAVES"] == ["16385.0 16387.0 16388.0", 16386.0, 16389.0]  # two instances summed
    assert cap.raw_units["start_timestamp"] == "ns" and cap.raw_units["group_segment_size"] == "B"
    # the node lists 8 GPUs; dispatches ran on two of them
    hw = p.hardware
    assert (hw.device, hw.arch, hw.count, hw.compute_units, hw.partitions) == (
        "AMD Instinct MI300X",
        "gfx942",
        2,
        304,
        8,
    )
    assert hw.device_id == "amd-mi300x"
    a = cap.attributes
    assert (a["gpus_listed"], a["agents_listed"], a["devices_used"], a["pid"], a["launches"]) == (
        8,
        9,
        "0 3",
        4242,
        5,
    )
    assert p.subject.name == ADD
    assert p.timing.stats.median == 11400 and p.timing.stats.n == 3
    assert p.timing.stats.mean == pytest.approx(34040 / 3)


def test_command_line_is_not_copied() -> None:
    (p,), _ = read(RESULTS)
    assert "KEVIDENCE_PLANTED_SECRET_9f3a" not in p.to_json().decode()
    assert p.replay is None


def test_gzip_and_any_name_by_content(tmp_path: Path) -> None:
    (plain,), _ = read(RESULTS)
    gz = tmp_path / "capture.bin"
    gz.write_bytes(gzip.compress(RESULTS.read_bytes()))
    (packed,), _ = read(gz)
    assert packed.profiler[0].kernels == plain.profiler[0].kernels
    assert packed.profiler[0].raw_columns == plain.profiler[0].raw_columns
    assert packed.profiler[0].source.sha256 != plain.profiler[0].source.sha256  # the file as stored
    folder = tmp_path / "out"
    folder.mkdir()
    shutil.copyfile(RESULTS, folder / "4242_results.json.gz")  # not really gzip: read by content
    (found,), _ = read(folder)
    assert found.profiler[0].kernels == plain.profiler[0].kernels


def test_tool_entry_as_an_object_and_several_processes(tmp_path: Path) -> None:
    one = results([dispatch(1, 1, 0, 1000, 3000)], as_list=False)
    (p,), _ = read(write(tmp_path, one))
    assert p.profiler[0].kernels[0].metrics["duration"].value == 2000
    two = results([dispatch(1, 1, 0, 1000, 3000)])
    two["rocprofiler-sdk-tool"].append(
        results([dispatch(1, 2, 1, 5000, 5500)], pid=77)["rocprofiler-sdk-tool"][0]
    )
    packets, _ = read(write(tmp_path, two, "2_results.json"))
    assert [(p.subject.name, p.profiler[0].attributes["pid"]) for p in packets] == [(ADD, 4242), (DIV, 77)]


def test_counter_collection_without_kernel_trace(tmp_path: Path) -> None:
    doc = json.loads(RESULTS.read_text())
    entry = doc["rocprofiler-sdk-tool"][0]
    entry["buffer_records"]["kernel_dispatch"] = []
    (p,), _ = read(write(tmp_path, doc))
    cap = p.profiler[0]
    assert cap.attributes["dispatch_records"] == "counter_collection"
    assert [k.invocations for k in cap.kernels] == [3, 1, 1]
    assert cap.raw_columns["SQ_WAVES"][1] == 16386.0


def test_unknown_agent_and_kernel(tmp_path: Path) -> None:
    d = dispatch(1, 9, 0, 1000, 3000)
    d["dispatch_info"]["agent_id"]["handle"] = 999
    (p,), _ = read(write(tmp_path, results([d, dispatch(2, 1, 0, 4000, 4500)])))
    names = {k.name: k.device for k in p.profiler[0].kernels}
    assert names == {ADD: 0, "kernel 9": None}
    w = p.profiler[0].warnings
    assert any("1 dispatch(es) name no agent the file lists" in x for x in w)
    assert any("kernel id(s) 9 not in kernel_symbols" in x for x in w)


def test_launch_shapes_that_differ_stay_per_launch(tmp_path: Path) -> None:
    a, b = dispatch(1, 1, 0, 1000, 3000, lds=0), dispatch(2, 1, 0, 4000, 4500, lds=4096)
    (p,), _ = read(write(tmp_path, results([a, b])))
    (k,) = p.profiler[0].kernels
    assert "shared_memory_per_block" not in k.metrics and k.block == [64, 1, 1]
    assert p.profiler[0].raw_columns["group_segment_size"] == ["0 4096"]


def test_no_hardware_when_the_agents_are_missing(tmp_path: Path) -> None:
    doc = results([dispatch(1, 1, 0, 1000, 3000)])
    doc["rocprofiler-sdk-tool"][0]["agents"] = []
    (p,), warnings = read(write(tmp_path, doc))
    assert p.hardware is None
    assert any("name no agent the file lists" in w for w in warnings)


# --------------------------------------------------------------------------- damaged input


def test_truncated_json(tmp_path: Path) -> None:
    f = tmp_path / "t_results.json"
    f.write_bytes(RESULTS.read_bytes()[:3000])
    with pytest.raises(InputError) as err:
        read(f)
    msg = str(err.value)
    assert msg.startswith(f"{f}: not valid JSON (") and "\n" not in msg
    assert msg.endswith('; expected a rocprofv3 JSON output (results.json: {"rocprofiler-sdk-tool": [...]})')


def test_wrong_type_names_the_place(tmp_path: Path) -> None:
    doc = results([dispatch(1, 1, 0, 1000, 3000)])
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][0]["start_timestamp"] = "soon"
    f = write(tmp_path, doc)
    with pytest.raises(InputError) as err:
        read(f)
    assert str(err.value) == (
        f"{f}: expected `int | null`, got `str` - at `$.rocprofiler-sdk-tool[0].buffer_records.kernel_dispatch[0]"
        '.start_timestamp`; expected a rocprofv3 JSON output (results.json: {"rocprofiler-sdk-tool": [...]})'
    )


def test_empty_tool_list(tmp_path: Path) -> None:
    f = write(tmp_path, {"rocprofiler-sdk-tool": []})
    with pytest.raises(InputError, match=r"`rocprofiler-sdk-tool` is empty"):
        read(f)


def test_timestamps_not_collected(tmp_path: Path) -> None:
    (p,), _ = read(
        write(
            tmp_path,
            results([dispatch(1, 1, 0, 0, 0), dispatch(2, 1, 0, 900, 400), dispatch(3, 1, 0, 1000, 1500)]),
        )
    )
    (k,) = p.profiler[0].kernels
    assert k.invocations == 3 and k.metrics["duration"].value == 500
    assert any("2 of 3 launches have no usable timestamps" in w for w in p.profiler[0].warnings)


# --------------------------------------------------------------------------- property: the reduction is exact

launch = st.tuples(st.integers(1, 2), st.integers(0, 2), st.integers(0, 10**6), st.integers(1, 10**5))


@settings(max_examples=25, deadline=None)
@given(st.lists(launch, min_size=1, max_size=40))
def test_records_agree_with_a_plain_python_reduction(
    tmp_path_factory: pytest.TempPathFactory, launches: list[tuple[int, int, int, int]]
) -> None:
    T = 1_700_000_000_000_000_000  # an absolute ns clock beyond 2**53
    ds = [dispatch(i + 1, k, g, T + s, T + s + d) for i, (k, g, s, d) in enumerate(launches)]
    tmp = tmp_path_factory.mktemp("prop")
    res = ADAPTER.read([str(write(tmp, results(ds)))], AdapterOptions(created_at=T0))
    (p,) = res.packets
    want: dict[tuple[int, str], list[int]] = {}
    for k, g, _s, d in launches:
        want.setdefault((g, NAMES_BY_ID[k]), []).append(d)
    got = {(r.device, r.name): r for r in p.profiler[0].kernels}
    assert set(got) == set(want)
    raw = p.profiler[0].raw_columns
    for i, r in enumerate(p.profiler[0].kernels):
        ds_ = want[(r.device, r.name)]
        assert r.invocations == len(ds_)
        assert r.metrics["duration"].value == statistics.median(ds_)
        assert raw["duration_sum_ns"][i] == sum(ds_)
    assert sum(r.invocations for r in p.profiler[0].kernels) == len(launches)


NAMES_BY_ID = {1: ADD, 2: DIV}


def test_symbol_helper_names() -> None:
    assert symbol(3, "k(int)", "_Z1ki")["truncated_kernel_name"] == "k"


# --------------------------------------------------------------------------- corpus CSVs (rocprofv3 docs data)


def test_corpus_rocprofv3_csvs(corpus: Path) -> None:
    d = corpus / "rocpd"
    (trace,), _ = read(d / "rocprofv3_docs_kernel_trace.csv")
    cap = trace.profiler[0]
    assert len(cap.kernels) == 9  # per dispatch, as rocprofv3 CSVs always were
    first = next(k for k in cap.kernels if k.id == "1")
    assert first.metrics["duration"].value == 1550151853042437 - 1550151853029637
    assert first.metrics["grid_size"].value == 1024 * 1024  # work-items, not workgroups
    assert trace.subject.name == ADD and trace.timing.stats.n == 3
    (cc,), _ = read(d / "rocprofv3_docs_counter_collection.csv")
    assert cc.profiler[0].raw_columns["SQ_WAVES"] == [16384.0] * 4
    assert [k.metrics["duration"].value for k in cc.profiler[0].kernels] == [
        52151.0,
        49780.0,
        46818.0,
        48151.0,
    ]


def test_corpus_api_trace_and_summary_fail_clearly(corpus: Path) -> None:
    from kernel_evidence.errors import AdapterError

    for name in ("rocprofv3_docs_rocpd-to-csv.csv", "rocprofv3_docs_summary.txt"):
        f = corpus / "rocpd" / name
        with pytest.raises(AdapterError) as err:
            read(f)
        assert str(err.value).startswith(f"{f}: no rocprof-compute/Omniperf workload")
