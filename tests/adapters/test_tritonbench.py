"""TritonBench: --output-json keys, --output CSV (own fixtures) and the real console table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernel_evidence import validate
from kernel_evidence.adapters import AdapterOptions, get_adapter, missing_fields
from kernel_evidence.adapters.tritonbench._parse import split_key, x_dims
from kernel_evidence.audit import audit_packets
from kernel_evidence.cli import main
from kernel_evidence.errors import AdapterError, UsageError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tritonbench"
AT = "2026-11-27T12:00:00Z"
H100 = "NVIDIA H100 80GB HBM3"


def _read(*paths: Path | str, **extra: Any) -> Any:
    return get_adapter("tritonbench").read(
        [str(p) for p in paths], AdapterOptions(created_at=AT, extra=extra)
    )


def _by(packets: list[Any]) -> dict[tuple[str, str], Any]:
    out = {}
    for p in packets:
        e = p.extensions["pytorch:tritonbench"]
        out[(e["x_val"], e["provider"])] = p
    return out


def test_key_format() -> None:
    assert split_key("tritonbench_flash_attention_fwd_bwd[x_(4, 48, -1, 64)-tk]_latency") == (
        "flash_attention_fwd_bwd", "(4, 48, -1, 64)", "tk", "latency",
    )  # fmt: skip
    assert split_key("tritonbench_gemm_fwd[aten_matmul]-latency-avg") is None
    assert split_key("tritonbench_gemm_fwd[x_8192-]_latency") is None


def test_output_json(tmp_path: Path) -> None:
    res = _read(FIX / "gemm_fwd.json", device=H100)
    ps = _by(res.packets)
    assert len(ps) == 6  # 3 inputs x 2 providers; the average row and the -avg keys are not inputs
    fast = ps[("(256, 256, 256)", "triton_tutorial_matmul")]
    assert fast.subject.name == "gemm" and fast.task.workload == "gemm_fwd"
    assert fast.extensions["pytorch:tritonbench"]["mode"] == "fwd"
    t = fast.timing
    assert (t.stats.unit, t.stats.median, t.method) == ("ms", 0.006144, "triton_do_bench")
    assert t.baseline.provider == "aten_matmul" and t.baseline.stats.median == 0.008192
    assert t.speedup.value == 1.333333 and t.speedup.basis == "median"
    # tflops x latency: the FLOPs TritonBench counted (2 * 256^3)
    assert fast.task.shapes[0].work.flops.value == pytest.approx(2 * 256**3, rel=1e-6)
    assert fast.validation.verdict == "passed" and fast.status.value == "passed"
    base = ps[("(256, 256, 256)", "aten_matmul")]
    assert base.timing.baseline is None and base.timing.speedup is None
    wrong = ps[("(4096, 4096, 4096)", "triton_tutorial_matmul")]
    assert wrong.status.value == "failed" and wrong.failure.failure_class.value == "incorrect_numerical"
    assert wrong.timing.speedup is None and wrong.timing.stats.median == 0.180224
    broken = ps[("(8192, 8192, 8192)", "triton_tutorial_matmul")]
    assert broken.status.value == "error" and broken.timing is None
    assert broken.failure.message == "CUDA error: out of resource: shared memory"
    assert fast.hardware.device_id == "nvidia-h100-sxm5-80gb"
    for p in res.packets:
        assert not validate(p).errors or {f.rule_id for f in validate(p).errors} <= {
            "KE101",
            "KE201",
            "KE202",
            "KE203",
            "KE210",
        }
    # the claims are the timings': nothing for the audit to recompute differently
    assert not {r.code for s in audit_packets(res.packets).suspects for r in s.reasons} & {
        "KE301",
        "AU201",
        "AU301",
    }


def test_output_csv() -> None:
    res = _read(FIX / "softmax_fwd.csv", op="softmax", mode="fwd", device="NVIDIA A100-SXM4-80GB")
    ps = _by(res.packets)
    assert len(ps) == 4
    tri = ps[("(4096, 1024)", "triton_softmax")]
    assert tri.timing.stats.median == 0.023552 and tri.timing.speedup.value == 1.913043
    assert tri.timing.baseline.provider == "naive_softmax" and tri.timing.baseline.stats.median == 0.045056
    assert tri.task.shapes[0].work.bytes.value == pytest.approx(1424.70e9 * 0.023552e-3)
    assert tri.task.shapes[0].dims is None  # the label `x_val` names no dims


def test_console_table_from_the_corpus(corpus: Path) -> None:
    path = corpus / "tritonbench" / "tritonbench_stdout_flash_attention_tk_h100_2025-03.txt"
    if not path.is_file():
        pytest.skip("corpus file absent")
    res = _read(path, op="flash_attention", mode="fwd", device=H100)
    ps = res.packets
    assert [p.timing.stats.median for p in ps] == [
        0.048896, 0.042528, 0.064064, 0.163776, 0.529888, 2.074208, 8.105056, 32.321217,
    ]  # fmt: skip
    first, last = ps[0], ps[-1]
    assert first.task.shapes[0].dims == {"Batch": 4, "Heads": 48, "SeqLen": 128, "Dhead": 64}
    assert last.task.shapes[0].id == "(4, 48, 16384, 64)"
    e = first.extensions["pytorch:tritonbench"]
    assert (e["provider"], e["latency_spread_pct"], e["error_lines_before_table"], e["outliers_removed_in_run"]) == (
        "tk", 22.97, 109, 132,
    )  # fmt: skip
    assert first.replay.packages == {"torch": "2.8.0.dev20250331+cu126"}
    assert "22.97%" in first.timing.notes and first.timing.conditions.sample_handling == "trimmed"
    assert any("109 error lines before the table" in w for w in res.warnings)
    # without options: the operator and the GPU are asked for as data
    bare = _read(path)
    asked = {k for w in bare.warnings for k in missing_fields(w)}
    assert asked == {"subject.name", "hardware.device"}
    assert bare.packets[0].subject.name == "tritonbench operator" and bare.packets[0].hardware is None


def test_every_corpus_file(corpus: Path) -> None:
    folder = corpus / "tritonbench"
    files = [p for p in sorted(folder.glob("*")) if p.name not in ("FORMAT_NOTES.md", "SOURCES.tsv")]
    if not files:
        pytest.skip("no tritonbench corpus files")
    for path in files:
        try:
            res = _read(path, device=H100)
        except AdapterError as exc:  # a clear one-line error naming the file
            assert str(path) in str(exc) and "\n" not in str(exc)
            continue
        assert res.packets and all(p.timing is None or p.timing.stats.median > 0 for p in res.packets)


def test_damaged_inputs(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    with pytest.raises(
        AdapterError,
        match=r"x.json: no key of the form tritonbench_<op>_<mode>\[x_<input>-<provider>\]_<metric>",
    ):
        _read(p)
    p.write_text("[1]")
    with pytest.raises(AdapterError, match=r"x.json: a JSON list; expected an object of tritonbench_"):
        _read(p)
    p.write_text('{"tritonbench_a_fwd[x_1-p]_latency": "1", "tritonbench_b_fwd[x_1-p]_latency": "2"}')
    with pytest.raises(AdapterError, match="keys of 2 benchmarks"):
        _read(p)
    t = tmp_path / "log.txt"
    t.write_text("just some output\nno table here\n")
    with pytest.raises(AdapterError, match=r"log.txt: no TritonBench table \(a header over a dashed ruler\)"):
        _read(t)
    with pytest.raises(UsageError, match="option `mode`: expected one of"):
        _read(FIX / "gemm_fwd.json", mode="sideways")


def test_x_dims() -> None:
    assert x_dims("(M, N, K)", "(1, 2, 3)") == {"M": 1, "N": 2, "K": 3}
    assert x_dims("(M, N)", "(1, 2, 3)") is None
    assert x_dims("x_val", "(1, 2)") is None


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p.jsonl"
    assert (
        main(["ingest", "tritonbench", str(FIX / "gemm_fwd.json"), "--opt", f"device={H100}", "-o", str(out)])
        == 0
    )
    assert len(out.read_text().splitlines()) == 6
    assert main(["ingest", "tritonbench", str(FIX / "gemm_fwd.json"), "--opt", "mode=up"]) == 2
    assert "option `mode`" in capsys.readouterr().err
    # the audit recognises --output-json by its keys
    assert main(["audit", str(FIX / "gemm_fwd.json"), "-f", "json", "--fail-on", "never"]) == 0
