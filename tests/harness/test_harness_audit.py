"""What real harnesses throw at the recorder, the checker, the timer, the reward and the sinks.

Every candidate yields a valid packet, failures included; each test here failed before the
fix it names.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from _harness_packets import fixed_measurement

from kernel_evidence.harness import (
    CandidateFailure,
    Recorder,
    RewardConfig,
    StopRule,
    Timer,
    _check,
    check_output,
    classify_exception,
    sink,
    speed_of_light_fraction,
)
from kernel_evidence.io import iter_records
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate

np = pytest.importorskip("numpy")

FIXED = "2026-11-22T01:02:03Z"


def _rec(out: object = None, **kw: Any) -> Recorder:
    return Recorder(out, created_at=FIXED, operator="softmax", **kw)  # type: ignore[arg-type]


def _valid(p: EvidencePacket | None) -> EvidencePacket:
    assert p is not None
    report = validate(p)
    errors = [(f.rule_id, f.message) for f in report.findings if f.severity == "error"]
    assert report.ok, errors
    return p


# ---------------------------------------------------------------- exceptions in the block


class _StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


class _StrNotText(Exception):
    def __str__(self) -> Any:
        return 5


@pytest.mark.parametrize("exc", [_StrRaises(), _StrNotText()])
def test_exception_whose_str_fails_still_yields_a_packet(exc: Exception) -> None:
    """recorder.CandidateRecord._failure_from: str(exc) raised out of __exit__, no packet."""
    rec = _rec()
    with rec.candidate("k") as c:
        raise exc
    p = _valid(c.packet)
    assert p.failure is not None and p.failure.failure_class.value == "runtime_error"
    assert p.failure.message is not None and p.failure.message.startswith(type(exc).__name__)
    assert c.error is exc


def test_surrogates_in_text_are_escaped_not_fatal() -> None:
    """recorder.identify: a lone surrogate made the JSON encoder raise out of __exit__."""
    rec = _rec()
    with rec.candidate("k\udcff") as c:
        c.compile(source="x", log="bad \ud800 log")
        raise RuntimeError("undecodable \udcff output")
    p = _valid(c.packet)
    assert p.failure is not None and "\\udcff" in (p.failure.message or "")
    assert p.subject.name == "k\\udcff"
    assert rec.sink.items[0].decode("utf-8")  # type: ignore[attr-defined]


def test_huge_message_keeps_its_head() -> None:
    """recorder._failure_from kept the last 1000 characters: the type name was lost."""
    rec = _rec()
    with rec.candidate("k") as c:
        raise RuntimeError("x" * 10_000_000)
    p = _valid(c.packet)
    assert p.failure is not None and p.failure.message is not None
    assert p.failure.message.startswith("RuntimeError: xxx")
    assert len(p.failure.message) < 1100


def test_empty_message_has_no_dangling_colon() -> None:
    rec = _rec()
    with rec.candidate("k") as c:
        raise MemoryError()
    assert c.packet is not None and c.packet.failure is not None
    assert c.packet.failure.message == "MemoryError"


def test_generator_exit_is_an_interruption_not_the_candidate() -> None:
    """classify_exception: GeneratorExit (a closed generator) was blamed on the candidate."""
    rec = _rec()
    with pytest.raises(GeneratorExit), rec.candidate("k") as c:
        raise GeneratorExit()
    p = _valid(c.packet)
    assert p.status.value == "error"
    assert p.failure is not None and p.failure.failure_class.value == "infra_error"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception groups are Python 3.11+")
def test_exception_group_takes_the_class_its_leaves_agree_on() -> None:
    """classify_exception: an ExceptionGroup of compile errors was a runtime_error."""
    group = __builtins__["ExceptionGroup"] if isinstance(__builtins__, dict) else ExceptionGroup  # noqa: F821
    same = group("build", [SyntaxError("a"), group("inner", [SyntaxError("b")])])
    mixed = group("mixed", [SyntaxError("a"), ValueError("b")])
    assert classify_exception(same).value == "compile_error"
    assert classify_exception(mixed).value == "runtime_error"
    rec = _rec()
    with rec.candidate("k") as c:
        raise same
    assert _valid(c.packet).failure.failure_class.value == "compile_error"  # type: ignore[union-attr]


def test_missing_numpy_is_infra_error() -> None:
    """classify_exception: a harness without numpy calling check() failed every candidate."""
    from kernel_evidence.errors import MissingExtra

    assert classify_exception(MissingExtra("numpy", "harness", "x")).value == "infra_error"


def test_unencodable_packet_falls_back_to_infra_error() -> None:
    """CandidateRecord.finish: an error while encoding escaped the block without a packet."""
    rec = _rec()
    with rec.candidate("k") as c:
        c.extension("x:data", {"handle": object()})  # not JSON data
        raise ValueError("the candidate's own error")
    p = _valid(c.packet)
    assert p.status.value == "error"
    assert p.failure is not None and p.failure.failure_class.value == "infra_error"
    assert "ValueError: the candidate's own error" in (p.failure.message or "")
    assert isinstance(c.error, ValueError)


# ---------------------------------------------------------------- correctness failures are valid packets


def _fpe(c: Any) -> None:
    with np.errstate(all="raise"):
        np.array([1.0]) / np.array([0.0])


def _raise_nan(c: Any) -> None:
    raise CandidateFailure("nan_inf", "NaN in the output", shape_id="s2")


def _declare(c: Any) -> None:
    c.fail("incorrect_numerical", "off by one")


def _check_then_fpe(c: Any) -> None:
    c.check("s1", np.ones(3), np.ones(3))
    _fpe(c)


def _check_then_shape(c: Any) -> None:
    c.check("s1", np.ones(3), np.ones(3))
    raise CandidateFailure("incorrect_shape", "late", shape_id="s1")


@pytest.mark.parametrize("body", [_fpe, _raise_nan, _declare, _check_then_fpe, _check_then_shape])
def test_correctness_failure_without_a_failed_check_is_a_valid_packet(body: Any) -> None:
    """CandidateRecord._build: a nan_inf / incorrect_* failure without a failed validation
    was refused by the validator (KE406)."""
    rec = _rec()
    with rec.candidate("k") as c:
        body(c)
    p = _valid(c.packet)
    assert p.status.value == "failed"
    assert p.validation is not None and p.validation.verdict == "failed"
    assert any(not s.passed for s in p.validation.shapes or [])


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nonfinite_output_matching_the_reference_passes_validly(value: float) -> None:
    """_check.compare_arrays: nan_seen/inf_seen on a match made a passed verdict invalid (KE407)."""
    rec = _rec()
    with rec.candidate("k") as c:
        c.check("s", np.array([value, 1.0]), np.array([value, 1.0]))
    p = _valid(c.packet)
    assert p.status.value == "passed"


def test_shape_given_as_passed_with_nan_seen_fails() -> None:
    """CandidateRecord.shape_result: passed=True with nan_seen gave an invalid passed packet."""
    rec = _rec()
    with rec.candidate("k") as c:
        c.shape_result("s", passed=True, nan_seen=True)
    p = _valid(c.packet)
    assert p.failure is not None and p.failure.failure_class.value == "nan_inf"


def test_speedup_without_validation_is_not_stated() -> None:
    """CandidateRecord._build: a kernel speedup without validation was refused (KE404)."""
    rec = _rec()
    with rec.candidate("k") as c:
        c.timing(
            fixed_measurement([10.0] * 5), baseline=fixed_measurement([20.0] * 5), provider="numpy", call="x"
        )
    p = _valid(c.packet)
    assert p.status.value == "passed"
    assert p.timing is not None and p.timing.speedup is None
    assert "no validation" in (p.timing.notes or "")


# ---------------------------------------------------------------- check()


class _FakeDeviceTensor:
    """Like a CUDA torch tensor: numpy cannot take it, .detach().cpu() gives host data."""

    def __init__(self, data: Any, dtype: str, device: str = "cuda") -> None:
        self._data = np.asarray(data)
        self.shape = self._data.shape
        self.dtype = dtype
        self.device = device

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        if self.device != "cpu":
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()")
        if self.dtype == "torch.bfloat16":
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    def detach(self) -> _FakeDeviceTensor:
        return self

    def cpu(self) -> _FakeDeviceTensor:
        return _FakeDeviceTensor(self._data, self.dtype, "cpu")

    def float(self) -> _FakeDeviceTensor:
        return _FakeDeviceTensor(self._data.astype(np.float32), "torch.float32", "cpu")


@pytest.mark.parametrize("dtype", ["torch.float32", "torch.bfloat16"])
def test_check_takes_device_tensors(dtype: str) -> None:
    """_check.compare_arrays: a CUDA tensor raised TypeError: every candidate a runtime_error."""
    x = np.linspace(0, 1, 8, dtype=np.float32)
    out, ref = _FakeDeviceTensor(x, dtype), _FakeDeviceTensor(x, dtype)
    result, fc = check_output("s", out, ref, atol=0, rtol=0)
    assert fc is None and result.passed
    result, fc = check_output("s", _FakeDeviceTensor(x + 1, dtype), ref, atol=0, rtol=0)
    assert fc is not None and fc.value == "incorrect_numerical"


def test_check_compares_torch_dtype_names() -> None:
    x = np.ones(4, dtype=np.float32)
    result, fc = check_output("s", _FakeDeviceTensor(x, "torch.float32"), x, atol=0, rtol=0)
    assert fc is None, result.message
    _, fc = check_output("s", _FakeDeviceTensor(x, "torch.float16"), x, atol=0, rtol=0)
    assert fc is not None and fc.value == "incorrect_dtype"


def test_check_complex_compares_the_imaginary_part() -> None:
    """_check.compare_arrays: complex values were cast to float64, dropping the imaginary part."""
    ref = np.array([1 + 1j, 2 + 2j])
    result, fc = check_output("s", np.array([1 - 1j, 2 + 2j]), ref, atol=1e-6, rtol=0)
    assert fc is not None and fc.value == "incorrect_numerical"
    assert result.max_abs_error == pytest.approx(2.0)


def test_check_plain_python_data_on_both_sides() -> None:
    result, fc = check_output("s", [1.0, 2.0], [1.0, 2.0], atol=0, rtol=0)
    assert fc is None and result.passed
    _, fc = check_output("s", [1.0, 2.0], np.array([1.0, 2.0]), atol=0, rtol=0)
    assert fc is not None and fc.value == "incorrect_shape"
    _, fc = check_output("s", [[1.0], [2.0, 3.0]], [[1.0, 2.0]], atol=0, rtol=0)
    assert fc is not None and fc.value == "incorrect_shape"


def test_check_in_chunks_gives_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((37, 11))
    out = ref + rng.standard_normal(ref.shape) * 1e-3
    out[3, 4] = np.nan
    ref[5, 6] = np.inf
    out[5, 6] = np.inf
    whole = check_output("s", out, ref, atol=1e-3, rtol=1e-3)
    monkeypatch.setattr(_check, "_CHUNK", 7)
    chunked = check_output("s", out, ref, atol=1e-3, rtol=1e-3)
    assert whole == chunked
    assert whole[0].nan_seen and not whole[0].inf_seen


# ---------------------------------------------------------------- timer and reward parameters


@pytest.mark.parametrize(
    "kw",
    [{"ci_level": 0.0}, {"ci_level": 1.5}, {"time_budget_s": float("nan")}, {"target_rel_ci": -0.1}],
)
def test_stop_rule_refuses_meaningless_values(kw: dict[str, float]) -> None:
    """StopRule: ci_level=0 stopped at once claiming a 0 % CI; NaN budgets were ignored."""
    with pytest.raises(ValueError):
        StopRule(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("kw", [{"warmup": -1}, {"warmup": 1.5}, {"call_timeout_s": 0.0}])
def test_timer_refuses_meaningless_values(kw: dict[str, float]) -> None:
    """Timer: warmup=-1 went into the packet and made it invalid (an infra_error later)."""
    with pytest.raises(ValueError):
        Timer(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["correct", "speed_weight", "floor", "sol_weight", "no_class", "cap"])
def test_reward_config_refuses_non_finite_weights(field: str) -> None:
    """RewardConfig: a NaN weight made reward() return NaN."""
    with pytest.raises(ValueError):
        RewardConfig(**{field: float("nan")})  # type: ignore[arg-type]


def test_speed_of_light_ignores_an_overflowed_fraction() -> None:
    p = {
        "schema_version": "0.2",
        "created_at": FIXED,
        "producer": {"name": "x", "version": "1"},
        "subject": {"kind": "kernel", "name": "k"},
        "status": "passed",
        "task": {"work": {"bytes": {"value": 1e300, "unit": "B"}}},
        "hardware": {
            "vendor": "nvidia",
            "device": "H100",
            "peak_bandwidth": {"value": 1e308, "unit": "TB/s"},
        },
        "timing": {"method": "host_clock", "stats": {"unit": "ns", "median": 1e-300}},
    }
    assert speed_of_light_fraction(p) == 0.0


# ---------------------------------------------------------------- sinks


@pytest.mark.parametrize("name", ["p.jsonl", "p.jsonl.zst"])
def test_one_recorder_from_many_threads(tmp_path: Path, name: str) -> None:
    """JsonlSink.write: threads sharing the zstd compressor raised ZstdError out of the block
    (a race: without the lock this fails on most runs, not all)."""
    rec = _rec(tmp_path / name)

    def work(k: int) -> None:
        for i in range(50):
            with rec.candidate(f"t{k}_{i}", suppress=False) as c:
                c.check("s", np.ones(2), np.ones(2))
                c.extension("x:pad", {"pad": "y" * (i * 997 % 70000)})

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.close()
    rec.close()  # twice is harmless
    records = list(iter_records(str(tmp_path / name)))
    assert [r.error for r in records if r.error is not None] == []
    assert len(records) == rec.written == 200
    assert sorted(p.lineage.iteration for p in _read(tmp_path / name)) == list(range(200))  # type: ignore[union-attr]


def _read(path: Path) -> list[EvidencePacket]:
    return [EvidencePacket.model_validate_json(r.data) for r in iter_records(str(path)) if r.data]


@pytest.mark.parametrize("name", ["p.jsonl", "p.jsonl.zst"])
def test_a_failed_partial_write_is_cut_off(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JsonlSink.write: a disk full mid-record left a torn record that merged with the next
    one (JSONL) or made the whole zstd stream unreadable."""
    path = tmp_path / name
    rec = _rec(path)
    with rec.candidate("before") as c:
        c.check("s", np.ones(2), np.ones(2))
    real_write = os.write
    calls = {"n": 0}

    def full_disk(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sink.os, "write", full_disk)
    with pytest.raises(OSError), rec.candidate("lost") as c:
        c.check("s", np.ones(2), np.ones(2))
    monkeypatch.setattr(sink.os, "write", real_write)
    with rec.candidate("after") as c:
        c.check("s", np.ones(2), np.ones(2))
    rec.close()
    records = list(iter_records(str(path)))
    assert [r.error for r in records if r.error is not None] == []
    assert [p.subject.name for p in _read(path)] == ["before", "after"]


def test_the_zstd_compressor_is_used_under_the_sink_lock(tmp_path: Path) -> None:
    """JsonlSink.write: the deterministic half of the thread test above."""
    s = sink.JsonlSink(tmp_path / "p.jsonl.zst")
    real = s._cctx  # noqa: SLF001
    assert real is not None
    held: list[bool] = []

    class Spy:
        def compress(self, data: bytes) -> bytes:
            held.append(s._lock.locked())  # noqa: SLF001
            return bytes(real.compress(data))

    s._cctx = Spy()  # type: ignore[assignment]  # noqa: SLF001
    s.write("sha256:" + "0" * 64, b"{}")
    s.close()
    assert held == [True]
