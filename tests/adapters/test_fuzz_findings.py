"""Regressions for what a mutation-fuzzing campaign over the four adapters found: inputs
that ended in a traceback (ValueError, OverflowError, TypeError, UnicodeEncodeError) or
printed a numpy RuntimeWarning instead of giving a packet or a one-line error naming the
file. Every input is a small synthetic one written here."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence._ingest import ingest_json
from kernel_evidence.adapters.ncu import _rep as _ncu_rep
from kernel_evidence.errors import AdapterError, KernelEvidenceError
from kernel_evidence.rules import validate

T0 = "2026-11-22T00:00:00Z"
#: a run of digits longer than int() takes from text (4300) and than any float holds
HUGE = "9" * 5000
#: a JSON integer the readers take (under 4300 digits) that no float or 64-bit int holds
BIG = "9" * 400


def ingest(tool: str, path: Path, **extra: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The packets (as JSON) and warnings; a Python warning (numpy's RuntimeWarning on
    stderr) fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result, encoded = ingest_json(tool, [str(path)], created_at=T0, extra=extra)
    return [json.loads(b) for b in encoded], result.warnings


def one_line_error(tool: str, path: Path, **extra: Any) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KernelEvidenceError) as exc:
            ingest_json(tool, [str(path)], created_at=T0, extra=extra)
    msg = str(exc.value)
    assert "\n" not in msg
    assert path.name in msg
    return msg


# --------------------------------------------------------------------------------- ncu

_RAW_HEAD = '"ID","Process ID","Kernel Name","Device","Block Size","Grid Size","gpu__time_duration.sum"\n'
_RAW_UNITS = '"","","","","","","nsecond"\n'
_DETAILS_HEAD = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
    '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
)
_TEXT_KERNEL = "  add(float *) (8, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device {dev}, CC {cc}\n"
_TEXT_TABLE = (
    "    Section: Command line profiler metrics\n"
    "    ---------------------- ----------- ------------\n"
    "    Metric Name            Metric Unit Metric Value\n"
    "    ---------------------- ----------- ------------\n"
    "    gpu__time_duration.sum          us         3.10\n"
    "    ---------------------- ----------- ------------\n"
)
_SUMMARY = (
    "[5150] raytrace@127.0.0.1\n"
    "  Device {dev}\n"
    "    clear(Pixel *, int), Block Size {block}, Grid Size 1,024, {n} invocations \n"
    "      Section: GPU Speed Of Light Throughput\n"
    "      Metric Name            Metric Unit Minimum  Maximum  Average \n"
    "      ---------------------- ----------- -------- -------- --------\n"
    "      gpu__time_duration.sum usecond     5.120000 5.120000 5.120000\n"
)
_NCU_CASES = {
    # raw page: the Device column and the (x, y, z) Block Size
    "raw-device": (
        "raw.csv",
        _RAW_HEAD + _RAW_UNITS + f'"0","7","k","{HUGE}","(128, 1, 1)","(64, 1, 1)","2048"\n',
    ),
    "raw-device-superscript": (
        "raw.csv",
        _RAW_HEAD + _RAW_UNITS + '"0","7","k","\u00b2","(128, 1, 1)","(64, 1, 1)","2048"\n',
    ),
    "raw-block": (
        "raw.csv",
        _RAW_HEAD + _RAW_UNITS + f'"0","7","k","0","({HUGE}, 1, 1)","(64, 1, 1)","2048"\n',
    ),
    # details page: the Device column
    "details-device": (
        "details.csv",
        _DETAILS_HEAD + f'"0","7","a","h","k","1","7","(128, 1, 1)","(64, 1, 1)","{HUGE}","8.6","SOL",'
        '"gpu__time_duration.sum","nsecond","2048"\n',
    ),
    # text page: `Device N` and `CC X.Y` in the kernel line
    "text-device": ("page.txt", _TEXT_KERNEL.format(dev=HUGE, cc="7.5") + _TEXT_TABLE),
    "text-cc": ("page.txt", _TEXT_KERNEL.format(dev="0", cc=f"{HUGE}.5") + _TEXT_TABLE),
    # --print-summary per-kernel text page: the `Device N` line, block size, invocations
    "summary-device": ("summary.txt", _SUMMARY.format(dev=HUGE, block="128", n="1")),
    "summary-block": ("summary.txt", _SUMMARY.format(dev="0", block=HUGE, n="1")),
    "summary-invocations": ("summary.txt", _SUMMARY.format(dev="0", block="128", n=HUGE)),
}


@pytest.mark.parametrize("case", sorted(_NCU_CASES))
def test_ncu_counts_of_thousands_of_digits_are_not_read_as_integers(tmp_path: Path, case: str) -> None:
    # int() refuses more than 4300 digits (ValueError) and float() makes them inf (int(inf):
    # OverflowError); such a device index, dimension or invocation count is left unread
    name, text = _NCU_CASES[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    packets, _ = ingest("ncu", path)
    (record,) = packets[0]["profiler"][0]["kernels"]
    assert record.get("device") in (None, 0)
    assert "9999" not in json.dumps(record.get("block")) + json.dumps(record.get("invocations"))
    assert "9999" not in json.dumps(packets[0].get("hardware"))


class _Metric:
    def __init__(self, value: Any, unit: str) -> None:
        self._value, self._unit = value, unit

    def has_value(self) -> bool:
        return True

    def value(self) -> Any:
        return self._value

    def unit(self) -> str:
        return self._unit

    def num_instances(self) -> int:
        return 0


class _Action:
    """What ncu_report gives for a damaged report: names and text holding bytes that are
    not UTF-8 (lone surrogates), which its own metric_by_name cannot take back."""

    NameBase_MANGLED, NameBase_DEMANGLED = 0, 1

    def __init__(self, bad_name: bool, bad_text: bool) -> None:
        self.names = ["gpu__time_duration.sum", "launch__block_size"]
        if bad_name:
            self.names.append("l1tex__t_output_wavefronts\udcff\udcff.sum")
        self.bad_text = bad_text

    def name(self, base: int | None = None) -> str:
        return "k\udcffernel" if self.bad_text else "kernel"

    def metric_names(self) -> list[str]:
        return list(self.names)

    def metric_by_name(self, name: str) -> _Metric:
        if any("\ud800" <= c <= "\udfff" for c in name):
            raise TypeError("in method 'IAction_metric_by_name', argument 2 of type 'char const *'")
        if name == "launch__block_size":
            return _Metric("12\udcff8" if self.bad_text else "128", "")
        return _Metric(2048.0, "nsecond")

    def rule_results_as_dicts(self) -> list[Any]:
        return []


class _Context:
    def __init__(self, action: _Action) -> None:
        self.action = action

    def num_ranges(self) -> int:
        return 1

    def range_by_idx(self, i: int) -> _Context:
        return self

    def num_actions(self) -> int:
        return 1

    def action_by_idx(self, i: int) -> _Action:
        return self.action

    def get_version(self) -> str:
        return "fake"


def _fake_report(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, bad_name: bool, bad_text: bool) -> Path:
    class Module:
        @staticmethod
        def load_report(path: str) -> _Context:
            return _Context(_Action(bad_name, bad_text))

    monkeypatch.setattr(_ncu_rep, "_module", lambda path: Module)
    monkeypatch.setattr(_ncu_rep, "container_problem", lambda path: None)
    path = tmp_path / "damaged.ncu-rep"
    path.write_bytes(_ncu_rep.REP_MAGIC + b"\0" * 60)
    return path


def test_ncu_rep_metric_name_that_is_not_utf8_is_left_out_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # ncu_report's metric_by_name raised TypeError (SWIG: not a `char const *`) for it
    path = _fake_report(monkeypatch, tmp_path, bad_name=True, bad_text=False)
    packets, warns = ingest("ncu", path)
    assert any("1 metric name(s) are not UTF-8 text" in w for w in warns)
    assert not any("l1tex" in c for c in packets[0]["profiler"][0]["raw_columns"])


def test_ncu_rep_text_that_is_not_utf8_is_kept_with_replacement_characters(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a kernel name or a text metric value holding lone surrogates failed when the packet
    # was encoded (UnicodeEncodeError: surrogates not allowed)
    path = _fake_report(monkeypatch, tmp_path, bad_name=False, bad_text=True)
    packets, _ = ingest("ncu", path)
    capture = packets[0]["profiler"][0]
    assert capture["kernels"][0]["name"] == "k\ufffdernel"
    assert capture["raw_columns"]["launch__block_size"] == ["12\ufffd8"]


# -------------------------------------------------------------------------------- vllm

_SERVE = {
    "date": "20250101-000000",
    "backend": "vllm",
    "model_id": "facebook/opt-125m",
    "num_prompts": 2,
    "request_rate": "inf",
    "duration": 2.0,
    "completed": 2,
    "total_input_tokens": 20,
    "total_output_tokens": 8,
    "request_throughput": 1.0,
    "output_throughput": 4.0,
    "total_token_throughput": 14.0,
    "mean_ttft_ms": 10.0,
    "median_ttft_ms": 10.0,
    "p99_ttft_ms": 11.0,
}


def _write_json(path: Path, doc: Any, replace: dict[str, str] | None = None) -> Path:
    text = json.dumps(doc)
    for old, new in (replace or {}).items():
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("key", ["completed", "total_output_tokens"])
def test_vllm_count_beyond_64_bits_is_a_one_line_error(tmp_path: Path, key: str) -> None:
    # `completed / duration` (and the token total) raised OverflowError: int too large to
    # convert to float
    path = _write_json(tmp_path / "serve.json", {**_SERVE, key: 12345}, {"12345": BIG})
    msg = one_line_error("vllm", path)
    assert f"`{key}`" in msg and "out of range" in msg


def test_vllm_count_of_thousands_of_digits_in_a_metadata_string(tmp_path: Path) -> None:
    # `--metadata` strings are read as numbers: int() refused the 5000 digits (ValueError)
    path = _write_json(tmp_path / "serve.json", {**_SERVE, "tensor_parallel_size": HUGE})
    msg = one_line_error("vllm", path)
    assert "`tensor_parallel_size`" in msg and "out of range" in msg


def test_vllm_rate_beyond_a_float_beside_its_counts(tmp_path: Path) -> None:
    # the rate was compared with completed / duration first: float(rate) raised OverflowError
    path = _write_json(tmp_path / "serve.json", {**_SERVE, "request_throughput": 12345}, {"12345": BIG})
    msg = one_line_error("vllm", path)
    assert "`request_throughput`" in msg


@pytest.mark.parametrize("use_numpy", [True, False])
def test_vllm_per_request_values_near_the_largest_float(tmp_path: Path, use_numpy: bool) -> None:
    # numpy printed `RuntimeWarning: overflow encountered in square` on stderr; without numpy
    # math.fsum raised OverflowError (intermediate overflow); now a one-line error
    doc = {
        **_SERVE,
        "input_lens": [10, 10],
        "output_lens": [4, 4],
        "ttfts": [1e308, 1e308],
        "itls": [[0.01], [0.01]],
        "latencies": [1e308, 1e308],
        "errors": ["", ""],
    }
    path = _write_json(tmp_path / "serve.json", doc)
    msg = one_line_error("vllm", path, use_numpy=use_numpy)
    assert "finite" in msg


@pytest.mark.parametrize("use_numpy", [True, False])
def test_vllm_token_counts_adding_up_beyond_a_float(tmp_path: Path, use_numpy: bool) -> None:
    # int(sum(input_lens)) raised OverflowError: cannot convert float infinity to integer
    doc = {
        **_SERVE,
        "input_lens": [1e308, 1e308],
        "output_lens": [4, 4],
        "ttfts": [0.01, 0.01],
        "itls": [[0.01], [0.01]],
        "latencies": [0.1, 0.1],
        "errors": ["", ""],
    }
    path = _write_json(tmp_path / "serve.json", doc)
    packets, _ = ingest("vllm", path, use_numpy=use_numpy)
    assert packets[0]["timing"]["serving"]["total_input_tokens"] == 20


@pytest.mark.parametrize("value", [[1, 2], "abc"])
def test_vllm_sweep_failure_with_overrides_that_are_not_an_object(tmp_path: Path, value: Any) -> None:
    # `{**serve_overrides}` raised TypeError: 'list' object is not a mapping
    doc = {"run_number": 1, "error_type": "RuntimeError", "error": "boom", "serve_overrides": value}
    path = _write_json(tmp_path / "run=1.failure.json", doc)
    msg = one_line_error("vllm", path)
    assert "`serve_overrides`: expected an object" in msg
    with pytest.raises(AdapterError):
        ingest_json("vllm", [str(path)], created_at=T0)


# ----------------------------------------------------------------------------- rocprof

_TRACE_HEAD = (
    '"Kind","Agent_Id","Queue_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp",'
    '"End_Timestamp","Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X",'
    '"Grid_Size_Y","Grid_Size_Z"\n'
)


@pytest.mark.parametrize("start", [HUGE, "1\u00b2"])
def test_rocprof_timestamp_that_int_refuses_is_left_unread(tmp_path: Path, start: str) -> None:
    # int() raised ValueError on a timestamp of 5000 digits (over its 4300-digit limit) and on
    # "1²", which str.isdigit accepts
    path = tmp_path / "55_kernel_trace.csv"
    path.write_text(
        _TRACE_HEAD
        + f'"KERNEL_DISPATCH",2,1,7,"reduce(double*, int)",1,{start},1000000000003000,128,1,1,4096,1,1\n'
        + '"KERNEL_DISPATCH",2,1,7,"reduce(double*, int)",2,1000000000010000,1000000000015000,128,1,1,4096,1,1\n',
        encoding="utf-8",
    )
    packets, warns = ingest("rocprof", path)
    assert packets[0]["profiler"][0]["kernels"]
    (note,) = [w for w in warns if "non-integer notation" in w]
    assert len(note) < 400  # the example is cut, not 5000 digits long


def test_rocprof_long_layout_with_a_column_named_twice(tmp_path: Path) -> None:
    # the pivot of the long (rocpd) layout selects columns by name: pyarrow raised KeyError
    # ('Field "Kernel_Name" exists 2 times in schema')
    workload = tmp_path / "workload"
    workload.mkdir()
    (workload / "pmc_perf.csv").write_text(
        "GPU_ID,Dispatch_ID,Grid_Size,Workgroup_Size,Kernel_Name,Start_Timestamp,End_Timestamp,"
        "Kernel_Name,Counter_Name,Counter_Value\n"
        "2,1,1048576,256,triad(double*),100,5100,x,GRBM_GUI_ACTIVE,80000.0\n"
        "2,1,1048576,256,triad(double*),100,5100,x,SQ_WAVES,4096.0\n",
        encoding="utf-8",
    )
    msg = one_line_error("rocprof", workload / "pmc_perf.csv")
    assert str(workload / "pmc_perf.csv") in msg and "`Kernel_Name` appears more than once" in msg


@pytest.mark.parametrize("device", ["1e308", "\u00b2"])
def test_rocprof_device_and_size_beyond_64_bits_are_left_out(tmp_path: Path, device: str) -> None:
    # `1e308` is an integral float: the packet got device / grid values of 308 digits, which
    # the packet model took but `kevidence validate` refused (KE001: expected a 64-bit int);
    # a GPU id "²" (a digit to str.isdigit) made int() raise ValueError
    path = tmp_path / "55_kernel_trace.csv"
    path.write_text(
        _TRACE_HEAD.replace("Agent_Id", "GPU_ID")
        + f'"KERNEL_DISPATCH",{device},1,7,"reduce(double*, int)",1,1000,4000,128,1,1,1e308,1,1\n'
        + '"KERNEL_DISPATCH",2,1,7,"reduce(double*, int)",2,5000,9000,128,1,1,4096,1,1\n',
        encoding="utf-8",
    )
    packets, _ = ingest("rocprof", path)
    first, second = packets[0]["profiler"][0]["kernels"]
    assert "device" not in first and "grid" not in first
    assert second["device"] == 2 and second["grid"] == [4096, 1, 1]
    report = validate(json.dumps(packets[0]).encode())
    assert not [f for f in report.findings if f.rule_id == "KE001"]


def test_rocprof_column_name_with_a_line_break_stays_on_one_warning_line(tmp_path: Path) -> None:
    # a quoted header cell holding a line break was copied into the "none of the hardware
    # counters the formulas read" warning as it was: a warning of two lines
    path = tmp_path / "55_kernel_trace.csv"
    path.write_text(
        _TRACE_HEAD.replace('"Grid_Size_Z"', '"Grid_Size_Z","Work\ngroup_Extra"')
        + '"KERNEL_DISPATCH",2,1,7,"reduce(double*, int)",1,1000,4000,128,1,1,4096,1,1,5\n',
        encoding="utf-8",
    )
    _, warns = ingest("rocprof", path)
    (note,) = [w for w in warns if "none of the hardware counters" in w]
    assert "Work group_Extra" in note
    assert not [w for w in warns if "\n" in w or "\r" in w]


_LONG_PMC = (
    "GPU_ID,Dispatch_ID,Grid_Size,Workgroup_Size,Kernel_Name,Start_Timestamp,End_Timestamp,"
    "Counter_Name,Counter_Value\n"
    "2,1,1048576,256,triad(double*),100,5100,GRBM_GUI_ACTIVE,80000.0\n"
    "2,1,1048576,256,triad(double*),100,5100,SQ_WAVES,4096.0\n"
)


@pytest.mark.parametrize(
    "yaml_text",
    [
        f"name: triad\nseed: {HUGE}\n",
        "name: triad\ndate: 2026-13-01\n",
        "name: " + "[" * 5000 + "]" * 5000 + "\n",
    ],
    ids=["int-of-5000-digits", "month-13", "nested-5000-deep"],
)
def test_rocprof_profiling_config_value_yaml_cannot_read_is_a_warning(tmp_path: Path, yaml_text: str) -> None:
    # yaml.safe_load raised ValueError (int() over 4300 digits, datetime month 13) or
    # RecursionError, not a YAMLError: the damaged file was a traceback, not a warning
    workload = tmp_path / "workload"
    workload.mkdir()
    (workload / "pmc_perf.csv").write_text(_LONG_PMC, encoding="utf-8")
    (workload / "profiling_config.yaml").write_text(yaml_text, encoding="utf-8")
    packets, warns = ingest("rocprof", workload)
    assert packets[0]["profiler"][0]["kernels"]
    assert any("profiling_config.yaml: holds a value YAML cannot read" in w for w in warns)


# ------------------------------------------------------------------------------- xprof


def test_xprof_profiler_error_text_with_control_bytes_is_one_warning_line(tmp_path: Path) -> None:
    # the XSpace's own `errors` strings were copied into the warnings as they were: a damaged
    # file's bytes (line feeds, backspaces) made a warning of several lines
    pytest.importorskip("google.protobuf")
    from kernel_evidence.adapters.xprof._proto import messages

    space = messages().XSpace()
    space.errors.append("bad\x08\x04\x12\nprogram_id")
    space.warnings.append("two\r\nlines")
    plane = space.planes.add(name="/device:TPU:0", id=0)
    plane.event_metadata[1].id, plane.event_metadata[1].name = 1, "fusion.1"
    plane.lines.add(name="XLA Ops", id=0).events.add(metadata_id=1, offset_ps=0, duration_ps=1_000_000)
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(space.SerializeToString())
    _, warns = ingest("xprof", path)
    said = [w for w in warns if "profiler error" in w or "profiler warning" in w]
    assert len(said) == 2
    assert all(w.isprintable() for w in said)
    assert any(w.endswith("profiler error: bad\\x08\\x04\\x12 program_id") for w in said)
    assert any(w.endswith("profiler warning: two lines") for w in said)


def test_xprof_step_time_that_overflows_is_a_one_line_error(tmp_path: Path) -> None:
    # a step of 1e308 ms is inf in ps: statistics.pstdev raised AttributeError ('float'
    # object has no attribute 'numerator'), which the adapter did not turn into an error
    step_table = {
        "p": {"steptime_ms_average": "1.5"},
        "cols": [{"id": "stepnum"}, {"id": "stepTimeMs"}],
        "rows": [{"c": [{"v": "1"}, {"v": 1e308}]}, {"c": [{"v": "2"}, {"v": 2.0}]}],
    }
    doc = [
        {"p": {"device_type": "TPU v5 lite", "device_core_count": "1"}, "cols": [], "rows": []},
        step_table,
    ]
    path = _write_json(tmp_path / "run.overview_page.json", doc)
    with pytest.raises(AdapterError) as exc:
        ingest_json("xprof", [str(path)], created_at=T0)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"{tmp_path / 'run'}: values out of range")


def _damaged_report(tmp_path: Path, damage: Any) -> Path:
    import importlib.util

    from conftest import CORPUS

    seed = CORPUS / "ncu" / "speedy_scan_profile.ncu-rep"
    if not seed.is_file():
        pytest.skip("../shared/corpus is not present")
    if importlib.util.find_spec("ncu_report") is None:
        pytest.skip("the ncu extra (ncu-report) is not installed")
    damaged = tmp_path / "damaged.ncu-rep"
    damaged.write_bytes(damage(seed.read_bytes()))
    return damaged


def _ingest_cli(path: Path, out: Path) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "kernel_evidence", "ingest", "ncu", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ncu_rep_whose_native_log_would_break_the_error_line(tmp_path: Path) -> None:
    # one bit flipped in a metric result of a real report: ncu_report logs "Can't parse
    # message ... missing required fields" on the process's stderr (fd 2); that log is
    # taken into the one-line error instead of printed above it
    damaged = _damaged_report(tmp_path, lambda d: d[:191985] + bytes([d[191985] ^ 0x40]) + d[191986:])
    run = _ingest_cli(damaged, tmp_path / "out.json")
    assert run.returncode == 1, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"kevidence: error: {damaged}: the report is truncated or damaged"
    )
    assert "(ncu_report: Can't parse message" in lines[0]


def test_ncu_rep_that_crashes_ncu_report_is_a_one_line_error(tmp_path: Path) -> None:
    # six 0xff bytes put into a block of a real report make NVIDIA's ncu_report abort the
    # process (a native "Check failed"); such a report is read in a child process, and its
    # death is a one-line error naming the file, exit code 1
    damaged = _damaged_report(tmp_path, lambda d: d[:222929] + b"\xff" * 6 + d[222929:])
    out = tmp_path / "out.json"
    run = _ingest_cli(damaged, out)
    assert run.returncode == 1, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"kevidence: error: {damaged}: the report is truncated or damaged"
    )
    assert "Traceback" not in run.stderr and not out.exists()
