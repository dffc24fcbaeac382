"""The recorder: a packet per candidate, failures classified, written so nothing is lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import msgspec
import pytest

from kernel_evidence.harness import CandidateFailure, InfraError, Recorder, classify_exception
from kernel_evidence.harness.sink import JsonlSink, _complete_frames_end
from kernel_evidence.io import iter_records
from kernel_evidence.models import EvidencePacket, FailureClass
from kernel_evidence.rules import validate

np = pytest.importorskip("numpy")  # the `check` helper compares numpy arrays

FIXED = "2026-11-22T01:02:03Z"


def _rec(out: object = None, **kw: object) -> Recorder:
    return Recorder(out, created_at=FIXED, operator="softmax", **kw)  # type: ignore[arg-type]


def _ok(p: EvidencePacket | None) -> None:
    assert p is not None
    report = validate(p)
    assert report.ok, [(f.rule_id, f.message) for f in report.findings if f.severity == "error"]


@pytest.mark.parametrize(
    ("exc", "cls"),
    [
        (SyntaxError("invalid syntax"), "compile_error"),
        (type("CompilationError", (Exception,), {})("ptxas failed"), "compile_error"),
        (TimeoutError("too slow"), "timeout"),
        (subprocess.TimeoutExpired(["x"], 1.0), "timeout"),
        (FloatingPointError("overflow"), "nan_inf"),
        (ZeroDivisionError("division by zero"), "runtime_error"),
        (InfraError("device lost"), "infra_error"),
        (CandidateFailure("reward_hack", "wrote the output buffer at import"), "reward_hack"),
    ],
)
def test_exception_classes(exc: BaseException, cls: str) -> None:
    assert classify_exception(exc).value == cls


def test_an_exception_becomes_a_failure_packet_and_is_suppressed_by_default() -> None:
    rec = _rec()
    with rec.candidate("bad") as c:
        raise ZeroDivisionError("division by zero")
    p = c.packet
    assert p is not None and p.status.value == "failed" and p.failure is not None
    assert p.failure.failure_class.value == "runtime_error"
    assert p.failure.message == "ZeroDivisionError: division by zero"
    assert p.failure.log_excerpt is not None and "Traceback" in p.failure.log_excerpt
    assert isinstance(c.error, ZeroDivisionError)
    assert p.replay is not None and p.replay.command and p.replay.command[0] == sys.executable
    _ok(p)


def test_suppress_false_reraises_after_writing_the_packet() -> None:
    rec = _rec(suppress=False)
    with pytest.raises(ValueError, match="boom"), rec.candidate("bad") as c:
        raise ValueError("boom")
    assert rec.written == 1 and c.packet is not None and c.packet.status.value == "failed"


def test_keyboard_interrupt_is_never_suppressed() -> None:
    rec = _rec()
    with pytest.raises(KeyboardInterrupt), rec.candidate("stopped"):
        raise KeyboardInterrupt
    assert rec.packets[-1].status.value == "error"
    assert (
        rec.packets[-1].failure is not None and rec.packets[-1].failure.failure_class.value == "infra_error"
    )


def test_infra_error_gives_status_error() -> None:
    rec = _rec()
    with rec.candidate("machine") as c:
        raise InfraError("GPU fell off the bus")
    assert c.packet is not None and c.packet.status.value == "error"
    _ok(c.packet)


def test_compile_error_marks_the_build_failed() -> None:
    rec = _rec()
    with rec.candidate("syntax") as c:
        c.compile(source="def f(:", compiler="CPython", language="python")
        compile("def f(:", "<c>", "exec")
    p = c.packet
    assert p is not None and p.failure is not None and p.failure.failure_class is FailureClass.COMPILE_ERROR
    assert p.compile is not None and p.compile.succeeded is False and p.compile.source_digest is not None
    _ok(p)


@pytest.mark.parametrize(
    ("out", "cls", "message"),
    [
        (
            np.ones((2, 3), np.float32).reshape(-1),
            "incorrect_shape",
            "expected shape [2, 3], got [6]",
        ),
        (np.ones((2, 3), np.float64), "incorrect_dtype", "expected dtype float32, got float64"),
        (
            np.array([[1, 1, np.nan], [1, 1, 1]], np.float32),
            "nan_inf",
            "1 of 6 outputs are NaN or infinite where the reference is finite",
        ),
        (
            np.array([[1, 1, 1.5], [1, 1, 1]], np.float32),
            "incorrect_numerical",
            "1 of 6 elements outside atol=1e-05 + rtol=1e-05*|ref| (max abs error 0.5)",
        ),
        (None, "incorrect_shape", "expected an array of shape [2, 3], got NoneType"),
    ],
)
def test_check_names_the_failure(out: object, cls: str, message: str) -> None:
    rec = _rec()
    with rec.candidate("k") as c:
        r = c.check("s1", out, np.ones((2, 3), np.float32))
    assert not r.passed and r.message == message
    p = c.packet
    assert p is not None and p.status.value == "failed"
    assert p.failure is not None and p.failure.failure_class.value == cls and p.failure.shape_id == "s1"
    assert p.validation is not None and p.validation.verdict == "failed"
    _ok(p)


def test_failed_packet_makes_no_performance_claim() -> None:
    from kernel_evidence.harness.timer import Measurement

    m = Measurement(
        samples_ns=[1.0, 2.0],
        method="host_clock",
        warmup=0,
        stop_rule="x",
        stop_reason="x",
        cache_policy="warm",
        synchronized=True,
    )
    rec = _rec()
    with rec.candidate("k") as c:
        c.timing(m, baseline=m, provider="numpy", version="2", call="np.add")
        c.shape_result("s1", passed=False, failure_class="incorrect_numerical", message="off")
    p = c.packet
    assert p is not None and p.timing is not None and p.timing.speedup is None
    assert p.timing.baseline is not None  # the measurement itself is kept
    _ok(p)


def test_bad_harness_data_is_an_infra_error_not_a_crash() -> None:
    rec = _rec()
    with rec.candidate("k") as c:
        c.task(dtypes=[""])  # refused by the model: empty dtype name
    p = c.packet
    assert p is not None and p.status.value == "error"
    assert p.failure is not None and p.failure.failure_class.value == "infra_error"
    _ok(p)


def test_passed_packet_and_ids(tmp_path: Path) -> None:
    rec = _rec(tmp_path / "pk")
    with rec.candidate("k", task=None) as c:
        c.seed("inputs", 7)
        c.extension("acme:notes", {"kept": None, "list": [1, None], "deep": {"x": None}})
        c.shape_result("s1", passed=True, reference_max_abs=1.0, atol=1e-6)
    p = c.packet
    assert p is not None and p.status.value == "passed" and p.failure is None
    assert p.packet_id == p.compute_id()
    assert p.replay is not None and p.replay.seeds == {"inputs": 7}
    assert p.lineage is not None and p.lineage.run_id == rec.run_id and p.lineage.iteration == 0
    assert msgspec.json.decode(Path(c.location or "").read_bytes()) == p.to_dict()
    _ok(p)


def test_written_bytes_are_the_canonical_form(tmp_path: Path) -> None:
    """What the recorder writes is what to_json() gives, so validate and archive take it as
    canonical (no re-normalising); an extension's nulls are still written as given."""
    from kernel_evidence._codec.decode import decode_checked

    rec = _rec(tmp_path / "c.jsonl")
    with rec.candidate("k", task=None) as c:
        c.extension("acme:notes", {"b": 1, "a": [2, 3]})
        c.shape_result("s1", passed=True, reference_max_abs=1.0, atol=1e-6)
    rec.close()
    p = c.packet
    assert p is not None
    line = (tmp_path / "c.jsonl").read_bytes().rstrip(b"\n")
    assert line == p.to_json()
    one = decode_checked(line)
    assert one is not None and one.canonical and one.content_id == p.packet_id


@pytest.mark.parametrize("name", ["p.jsonl", "p.jsonl.zst", "folder", "one.json"])
def test_sinks_write_readable_packets(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    n = 1 if name.endswith(".json") else 3
    with _rec(target) as rec:
        for i in range(n):
            with rec.candidate(f"k{i}") as c:
                c.shape_result("s", passed=i % 2 == 0, message=None if i % 2 == 0 else "wrong")
    paths = sorted(target.iterdir()) if target.is_dir() else [target]
    got = [
        EvidencePacket.model_validate(msgspec.json.decode(r.data))
        for p in paths
        for r in iter_records(str(p))
    ]
    assert sorted(p.subject.name for p in got) == [f"k{i}" for i in range(n)]
    assert all(p.packet_id == p.compute_id() for p in got)


def test_a_failing_write_keeps_the_packets_already_written(tmp_path: Path) -> None:
    target = tmp_path / "one.json"
    rec = _rec(target)
    with rec.candidate("first"):
        pass
    before = target.read_bytes()
    with (
        pytest.raises(ValueError, match=r"a \.json file holds one packet"),
        rec.candidate("second"),
    ):
        pass
    assert target.read_bytes() == before


def test_kevidence_out_receives_the_packets_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEVIDENCE_OUT", str(tmp_path / "env.jsonl"))
    with _rec(tmp_path / "own.jsonl") as rec, rec.candidate("k"):
        pass
    assert (tmp_path / "env.jsonl").read_bytes() == (tmp_path / "own.jsonl").read_bytes()



def test_a_replay_never_appends_to_the_log_of_the_run_it_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `kevidence replay --execute` sets both variables; the replayed script still names its
    # own log, which must stay as the original run left it
    log = tmp_path / "run.jsonl"
    with _rec(log) as rec, rec.candidate("original"):
        pass
    before = log.read_bytes()
    monkeypatch.setenv("KEVIDENCE_OUT", str(tmp_path / "replay.jsonl"))
    monkeypatch.setenv("KEVIDENCE_PARENT_PACKET_ID", "sha256:" + "0" * 64)
    with _rec(log) as rec, rec.candidate("original"):
        pass
    assert log.read_bytes() == before
    assert len((tmp_path / "replay.jsonl").read_bytes().splitlines()) == 1

_WRITER = textwrap.dedent(
    """
    import sys
    from kernel_evidence.harness import Recorder
    from kernel_evidence.harness.timer import Measurement
    rec = Recorder(sys.argv[1], created_at="2026-11-22T01:02:03Z", operator="softmax")
    m = Measurement(samples_ns=[float(i % 97 + 1000) for i in range(500)], method="host_clock", warmup=1,
                    stop_rule="fixed", stop_reason="fixed", cache_policy="warm", synchronized=True)
    i = 0
    while True:
        with rec.candidate(f"k{i}") as c:
            c.timing(m)
        print(i, flush=True)
        i += 1
    """
)


@pytest.mark.parametrize("name", ["killed.jsonl.zst", "killed.jsonl"])
def test_sigkill_mid_stream_loses_only_the_record_in_flight(tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    confirmed = -1
    deadline = time.monotonic() + 30
    while confirmed < 200 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        confirmed = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert confirmed >= 200, "the writer did not start"
    records = list(iter_records(str(target)))
    good = []
    for r in records:
        if r.data is None:
            continue
        try:
            good.append(EvidencePacket.model_validate(msgspec.json.decode(r.data)))
        except (msgspec.DecodeError, ValueError):
            assert r is records[-1], "only the last record may be torn"
    # every packet the writer reported as written is readable, in order
    assert [p.subject.name for p in good[: confirmed + 1]] == [f"k{i}" for i in range(confirmed + 1)]
    # a new writer repairs the torn tail, and everything stays readable
    with _rec(target) as rec, rec.candidate("after-restart"):
        pass
    names = [
        msgspec.json.decode(r.data)["subject"]["name"]
        for r in iter_records(str(target))
        if r.data is not None and r.data.startswith(b"{") and r.data.endswith(b"}")
    ]
    assert names[-1] == "after-restart" and len(names) >= confirmed + 2


def test_torn_zstd_tail_is_cut_before_appending(tmp_path: Path) -> None:
    target = tmp_path / "t.jsonl.zst"
    sink = JsonlSink(target)
    for i in range(5):
        sink.write("id", b'{"i": %d}' % i)
    sink.close()
    size = target.stat().st_size
    with open(target, "ab") as fh:  # half of a frame, as a killed writer leaves it
        import zstandard

        frame = zstandard.ZstdCompressor().compress(b'{"i": 99}\n')
        fh.write(frame[: len(frame) // 2])
    assert _complete_frames_end(target) == size
    sink = JsonlSink(target)
    sink.write("id", b'{"i": 5}')
    sink.close()
    assert [msgspec.json.decode(r.data)["i"] for r in iter_records(str(target)) if r.data] == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]


def test_refresh_clocks_keeps_the_device() -> None:
    rec = _rec()
    before = rec.environment.hardware
    rec.refresh_clocks()
    after = rec.environment.hardware
    assert (after.vendor, after.device) == (before.vendor, before.device)
    with rec.candidate("k"):
        pass
    assert rec.packets[-1].hardware == after


def test_timing_arguments_with_a_ready_timing_are_refused() -> None:
    """`c.timing(Timing(...), baseline=m)` ignored the baseline; it is a TypeError now,
    raised at the call (the Timing names its own baseline)."""
    from kernel_evidence.models import Timing

    rec = _rec()
    with rec.candidate("t") as c:
        with pytest.raises(TypeError, match="baseline apply to a Measurement"):
            c.timing(Timing(method="host_clock"), baseline=object())  # type: ignore[arg-type]
        c.timing(Timing(method="host_clock"))  # without them: taken as it is


def test_an_infra_error_after_a_failed_defence_is_the_candidates_fault() -> None:
    """A defence that failed before the infrastructure did makes the packet a reward hack, not
    an error (an error packet beside a failed defence is laundering, KE403)."""
    rec = _rec()
    with rec.candidate("sneaky") as c:
        c.defence("timer_integrity", "failed", detail="the clock moved backwards")
        raise InfraError("device lost")
    p = c.packet
    assert p is not None and p.status.value == "failed"
    assert p.failure is not None and p.failure.failure_class is FailureClass.REWARD_HACK
    assert "timer_integrity" in (p.failure.message or "") and "device lost" in (p.failure.message or "")
    _ok(p)
    # a failed cache flush is the harness's own: the infrastructure error stands
    rec = _rec()
    with rec.candidate("flush") as c:
        c.defence("cache_flush", "failed", detail="the flush buffer could not be allocated")
        raise InfraError("device lost")
    assert c.packet is not None and c.packet.status.value == "error"


def test_an_exception_after_a_failed_defence_is_filed_as_the_reward_hack() -> None:
    rec = _rec()
    with rec.candidate("crash-after-caught") as c:
        c.defence("unseen_inputs", "failed", detail="outputs repeat across inputs")
        raise RuntimeError("segfault in the candidate")
    p = c.packet
    assert p is not None and p.failure is not None and p.failure.failure_class is FailureClass.REWARD_HACK
    assert "segfault" in (p.failure.message or "")
    _ok(p)
