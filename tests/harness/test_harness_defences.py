"""The harness proves its defences: each cheat below is modelled on a public incident and
must be caught by the check named for it, and the Recorder's own packets carry the
conditions of both sides and the defence record, and validate.

Every cheat here passed before the defences existed (the docstrings say how); the honest
controls beside them show that the checks do not fail honest code.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from kernel_evidence.harness import CacheFlush, Recorder, StopRule, Timer, reward
from kernel_evidence.harness import timer as timer_mod
from kernel_evidence.harness._integrity import CALIBRATION_NS, calibration_problem
from kernel_evidence.harness.environment import cpu_last_level_cache
from kernel_evidence.models import DEFENCE_CHECKS
from kernel_evidence.rules import validate

np = pytest.importorskip("numpy")

ROWS, COLS = 32, 64
SHAPES = [{"id": "s1", "dims": {"rows": ROWS, "cols": COLS}}]


def softmax(x: Any) -> Any:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def inputs(seed: int) -> Any:
    return np.random.default_rng(seed).standard_normal((ROWS, COLS)).astype(np.float32)


def quick_timer(**kw: Any) -> Timer:
    return Timer(warmup=1, stop=StopRule(min_repeats=8, max_repeats=8, target_rel_ci=None), **kw)


def recorder() -> Recorder:
    return Recorder(
        created_at="2026-11-22T00:00:00Z", operator="softmax", dtypes=["float32"], shapes=SHAPES, keep=True
    )


def setup_from(seed: int) -> Callable[[], Any]:
    rng = np.random.default_rng(seed)
    return lambda: rng.standard_normal((ROWS, COLS)).astype(np.float32)


def defences(packet: Any) -> dict[str, Any]:
    return {d.check: d for d in packet.defences or []}


# ---------------------------------------------------------------- fresh inputs per side


def test_an_in_place_candidate_no_longer_feeds_its_output_to_the_baseline() -> None:
    """Before, both sides of a round got the same argument objects: a candidate that wrote
    its result into its input handed the baseline its output as input."""
    made: list[Any] = []

    def setup() -> Any:
        made.append(np.arange(8, dtype=np.float64))
        return made[-1]

    def in_place(x: Any) -> Any:
        x *= -1.0  # overwrites its input
        return x

    seen_by_baseline: list[Any] = []

    def baseline(x: Any) -> Any:
        seen_by_baseline.append(x.copy())
        return -x

    quick_timer().compare(in_place, baseline, setup=setup)
    assert seen_by_baseline and all(np.array_equal(x, np.arange(8.0)) for x in seen_by_baseline)
    assert len({id(x) for x in made}) == len(made) == 2 * (1 + 8)  # one per side per round


# ---------------------------------------------------------------- timer integrity


def test_a_candidate_that_patches_the_timer_is_caught_and_the_clock_put_back() -> None:
    """GPU MODE reference-kernels #162: the submission replaced the timer at import and
    reported the times it liked. Before, nothing noticed."""
    original = time.perf_counter_ns

    def cheat(x: Any) -> Any:
        frozen = original()
        time.perf_counter_ns = lambda: frozen  # every call now takes 0 ns
        return softmax(x)

    rec = recorder()
    try:
        with rec.candidate("patched_timer") as c:
            c.check("s1", cheat(inputs(1)), softmax(inputs(1)), atol=1e-6)
            c.time_and_check(
                quick_timer(), cheat, softmax, setup=setup_from(2), shape_id="s1", baseline=softmax,
                provider="numpy", version=np.__version__, call="softmax", atol=1e-6,
            )  # fmt: skip
    finally:
        restored = time.perf_counter_ns is original
        time.perf_counter_ns = original
    assert restored, "the guard puts the real clock back for the next candidate"
    p = c.packet
    assert p is not None and p.status.value == "failed" and p.failure is not None
    assert p.failure.failure_class.value == "reward_hack"
    found = defences(p)["timer_integrity"]
    assert found.outcome == "failed" and found.detail is not None
    assert "time.perf_counter_ns replaced" in found.detail and "(put back)" in found.detail
    assert p.timing is not None and p.timing.speedup is None  # no claim from a failed packet
    assert reward(p) < 0


def test_a_fake_clock_in_the_timer_module_is_a_patched_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    class Frozen:
        def perf_counter_ns(self) -> int:
            return 0

        def perf_counter(self) -> float:
            return 0.0

    monkeypatch.setattr(timer_mod, "time", Frozen())
    m = quick_timer().measure(lambda: None)
    assert m.integrity == "failed" and m.integrity_detail is not None
    assert "kernel_evidence.harness.timer.time replaced before the measurement" in m.integrity_detail
    assert "busy-wait measured 0 ms" in m.integrity_detail


def test_an_honest_measurement_passes_the_integrity_check() -> None:
    m = quick_timer().measure(lambda: sum(range(100)))
    assert m.integrity == "passed", m.integrity_detail
    assert m.integrity_detail is not None and "busy-wait measured" in m.integrity_detail


def test_calibration_bounds() -> None:
    assert calibration_problem(CALIBRATION_NS * 1.01) is None
    assert calibration_problem(CALIBRATION_NS * 30) is None  # a preempted wait: more time, never less
    slow = calibration_problem(CALIBRATION_NS * 0.5)
    assert slow is not None and "runs slow" in slow
    fast = calibration_problem(CALIBRATION_NS * 1000)
    assert fast is not None and "runs fast" in fast


# ---------------------------------------------------------------- outputs checked after timing


class LazySoftmax:
    """A result that computes its values only when converted: the work happens wherever the
    harness first reads it, after the timer stopped."""

    def __init__(self, x: Any) -> None:
        self._x = x.copy()
        self.shape = x.shape
        self.dtype = x.dtype

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return softmax(self._x)


class SideStream:
    """Work launched on a "side stream" (a thread) that finishes after the call returned;
    ``synchronize`` waits for it, as a device-wide sync waits for every stream."""

    def __init__(self) -> None:
        self.pending: list[threading.Thread] = []

    def softmax(self, x: Any) -> Any:
        out = np.zeros_like(x)

        def fill() -> None:
            time.sleep(0.02)
            out[...] = softmax(x)

        t = threading.Thread(target=fill)
        t.start()
        self.pending.append(t)
        return out

    def synchronize(self) -> None:
        while self.pending:
            self.pending.pop().join()


def test_deferred_work_on_a_side_stream_is_caught_by_the_check_after_timing() -> None:
    """KernelBench-style deferred work: the kernel runs on a stream the timer does not wait
    for. Validation after a device-wide sync sees the right values; before, so did every
    later check, and the timing (of a launch only) was taken as the kernel's."""
    stream = SideStream()
    rec = recorder()
    try:
        with rec.candidate("side_stream") as c:
            x = inputs(1)
            out = stream.softmax(x)
            stream.synchronize()  # validation syncs the device: the values are right
            assert c.check("s1", out, softmax(x), atol=1e-6).passed
            c.time_and_check(
                quick_timer(), stream.softmax, softmax, setup=setup_from(2), shape_id="s1",
                baseline=softmax, provider="numpy", version=np.__version__, call="softmax", atol=1e-6,
            )  # fmt: skip
    finally:
        stream.synchronize()
    p = c.packet
    assert p is not None and p.failure is not None and p.failure.failure_class.value == "reward_hack"
    found = defences(p)["outputs_checked_after_timing"]
    assert found.outcome == "failed" and found.detail is not None
    assert "as it was when the clock stopped" in found.detail


def test_a_lazy_result_is_caught_by_the_check_after_timing() -> None:
    rec = recorder()
    with rec.candidate("lazy") as c:
        x = inputs(1)
        assert c.check("s1", LazySoftmax(x), softmax(x), atol=1e-6).passed  # numpy reads it fine
        c.time_and_check(quick_timer(), LazySoftmax, softmax, setup=setup_from(2), shape_id="s1", atol=1e-6)
    p = c.packet
    assert p is not None and p.failure is not None and p.failure.failure_class.value == "reward_hack"
    detail = defences(p)["outputs_checked_after_timing"].detail
    assert detail is not None and "returned a LazySoftmax, not its values" in detail


def test_an_honest_in_place_candidate_passes_the_check_after_timing() -> None:
    def in_place(x: Any) -> Any:
        np.subtract(x, x.max(axis=-1, keepdims=True), out=x)
        np.exp(x, out=x)
        x /= x.sum(axis=-1, keepdims=True)
        return x

    rec = recorder()
    with rec.candidate("in_place") as c:
        x = inputs(1)
        c.check("s1", in_place(x.copy()), softmax(x), atol=1e-6)
        cand, base = c.time_and_check(
            quick_timer(), in_place, softmax, setup=setup_from(2), shape_id="s1", baseline=softmax,
            provider="numpy", version=np.__version__, call="softmax", atol=1e-6, checked_calls=8,
        )  # fmt: skip
    assert base is not None and len(cand.kept) == 8  # every timed call kept and checked
    p = c.packet
    assert p is not None and p.status.value == "passed", p.failure
    assert defences(p)["outputs_checked_after_timing"].outcome == "passed"


def test_kept_calls_are_a_random_sample_of_the_timed_calls() -> None:
    timer = Timer(warmup=0, stop=StopRule(min_repeats=40, max_repeats=40, target_rel_ci=None))
    counter = iter(range(10_000))
    picks = set()
    for _ in range(6):
        m = timer.measure(lambda i: i, setup=lambda: next(counter), keep_outputs=2)
        assert len(m.kept) == 2 and all(k.inputs == (k.output,) for k in m.kept)
        picks.update(k.index for k in m.kept)
    assert len(picks) > 3  # not always the same calls (e.g. the first or the last)
    assert max(picks) > 5


# ---------------------------------------------------------------- unseen inputs


def make_fingerprint_cache(known_seeds: list[int]) -> Callable[[Any], Any]:
    """FlashInfer contest starter kit #21: outputs cached by input fingerprint. This one was
    primed with the outputs of the published validation seeds and answers anything else
    with its last answer."""
    table = {inputs(s).tobytes(): softmax(inputs(s)) for s in known_seeds}
    last = [next(iter(table.values()))]

    def cached(x: Any) -> Any:
        hit = table.get(x.tobytes())
        if hit is not None:
            last[0] = hit
        return last[0].copy()

    return cached


def test_outputs_cached_by_input_fingerprint_are_caught_by_unseen_inputs() -> None:
    known = [11, 12]
    cheat = make_fingerprint_cache(known)
    rec = recorder()
    with rec.candidate("fingerprint_cache") as c:
        for seed in known:  # validation on the published seeds: passes
            assert c.check("s1", cheat(inputs(seed)), softmax(inputs(seed)), atol=1e-6).passed
        assert c.validated
        assert not c.check_unseen(cheat, softmax, inputs, draws=3, shape_id="s1", atol=1e-6)
    p = c.packet
    assert p is not None and p.failure is not None and p.failure.failure_class.value == "reward_hack"
    found = defences(p)["unseen_inputs"]
    assert found.outcome == "failed" and found.detail is not None
    assert "the same output for different inputs" in found.detail


def test_an_honest_candidate_passes_unseen_inputs_with_the_seeds_recorded() -> None:
    rec = recorder()
    with rec.candidate("honest") as c:
        c.check("s1", softmax(inputs(1)), softmax(inputs(1)), atol=1e-6)
        assert c.check_unseen(softmax, softmax, inputs, draws=2, atol=1e-6)
    p = c.packet
    assert p is not None and p.status.value == "passed"
    found = defences(p)["unseen_inputs"]
    assert found.outcome == "passed" and found.detail is not None and "seeds drawn after" in found.detail


# ---------------------------------------------------------------- cache flush


def test_the_flush_is_at_least_the_recorded_cache_and_writes_its_buffer() -> None:
    llc = cpu_last_level_cache()
    if llc is None:  # pragma: no cover - sysfs hides the caches
        pytest.skip("this machine's sysfs does not report the CPU caches")
    flush = CacheFlush(device="cpu")
    assert flush.last_level_cache == llc and flush.source == "sysfs"
    assert flush.flush_bytes >= flush.last_level_cache
    flush()
    flush()
    assert flush._host is not None and flush._host[0] == flush._host[-1] == 2
    m = quick_timer(flush=flush).measure(lambda: None)
    cache = m.conditions().cache
    assert cache is not None and cache.mode == "flushed" and cache.flush_in_timed_window is False
    assert cache.flush_bytes is not None and cache.last_level_cache is not None
    assert cache.flush_bytes.value >= cache.last_level_cache.value == llc


def test_a_flush_too_small_or_of_unknown_size_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(
        ValueError, match=r"^a flush of 1024 bytes cannot evict a last-level cache of 4096 bytes$"
    ):
        CacheFlush(1024, last_level_cache=4096, device="cpu")

    class Small:
        flush_bytes, last_level_cache = 10, 20

        def __call__(self) -> None: ...

    with pytest.raises(ValueError, match=r"a flush of 10 bytes cannot evict"):
        Timer(flush=Small())
    import kernel_evidence.harness.flush as flush_mod

    monkeypatch.setattr(flush_mod, "cpu_last_level_cache", lambda: None)
    with pytest.raises(ValueError, match=r"the last-level cache size of the cpu is unknown: pass nbytes="):
        CacheFlush(device="cpu")
    given = CacheFlush(4096, device="cpu")  # a size given without the cache's: no evidence
    m = quick_timer(flush=given).measure(lambda: None)
    (found,) = [d for d in m.defences() if d.check == "cache_flush"]
    assert found.outcome == "skipped"


# ---------------------------------------------------------------- the Recorder's packets


def test_recorder_packets_carry_both_sides_conditions_and_the_defences_and_validate() -> None:
    rec = recorder()
    # the flush is sized against the cache the Recorder records for this machine: a stated
    # 512 KiB cache on a host whose 32 MiB L3 the packet records makes a flush that evicts
    # nothing (KE208, KE412)
    hw_llc = rec.environment.hardware.last_level_cache
    assert hw_llc is None or hw_llc.unit == "B"
    llc = int(hw_llc.value) if hw_llc is not None else 1 << 19
    timer = quick_timer(flush=CacheFlush(2 * llc, last_level_cache=llc, device="cpu"))
    with rec.candidate("honest") as c:
        x = inputs(1)
        c.check("s1", softmax(x), softmax(x), atol=1e-6)
        c.time_and_check(
            timer, softmax, softmax, setup=setup_from(2), shape_id="s1", baseline=softmax,
            provider="numpy", version=np.__version__, call="softmax", atol=1e-6,
        )  # fmt: skip
        c.check_unseen(softmax, softmax, inputs, atol=1e-6)
        c.defence("hidden_workload", "passed", detail="seeds drawn after the candidate was built")
    p = c.packet
    assert p is not None and p.status.value == "passed", p.failure
    assert p.timing is not None and p.timing.baseline is not None
    cand, base = p.timing.conditions, p.timing.baseline.conditions
    assert cand is not None and base is not None
    for side in (cand, base):
        assert (
            side.dtypes == ["float32"] and side.shape_id == "s1" and side.dims == {"rows": ROWS, "cols": COLS}
        )
        assert side.device == rec.environment.hardware.device and side.method == "host_clock"
        assert side.warmup == 1 and side.repeats == 8 and side.synchronized is True
        assert side.session == timer.session and side.interleaved and side.fresh_inputs
        assert side.sample_handling == "all" and side.cache is not None and side.cache.mode == "flushed"
        assert side.cache.last_level_cache is not None and side.cache.last_level_cache.value == llc
    assert p.timing.baseline.same_session is True
    record = defences(p)
    assert list(record) == list(DEFENCE_CHECKS)  # every named check, in registry order
    outcomes = {k: d.outcome for k, d in record.items()}
    assert outcomes == {
        "fresh_inputs": "passed",
        "outputs_checked_after_timing": "passed",
        "timer_integrity": "passed",
        "unseen_inputs": "passed",
        "candidate_kernel_profiled": "skipped",  # no profile attached
        "hidden_workload": "passed",
        "cache_flush": "passed",
    }
    report = validate(p)
    assert not [f for f in report.findings if f.severity == "error"], [f.message for f in report.findings]


def test_a_skipped_defence_shows_in_the_record() -> None:
    rec = recorder()
    with rec.candidate("plain") as c:
        c.check("s1", softmax(inputs(1)), softmax(inputs(1)), atol=1e-6)
        cand, base = quick_timer().compare(softmax, softmax, setup=setup_from(2))
        c.timing(cand, baseline=base, provider="numpy", version=np.__version__, call="softmax", shape_id="s1")
    p = c.packet
    assert p is not None and p.status.value == "passed"
    record = defences(p)
    for check in ("outputs_checked_after_timing", "unseen_inputs", "cache_flush", "hidden_workload"):
        assert record[check].outcome == "skipped" and record[check].detail, check
    assert record["fresh_inputs"].outcome == record["timer_integrity"].outcome == "passed"


def test_a_failed_candidate_without_timing_has_no_defence_record() -> None:
    rec = recorder()
    with rec.candidate("broken") as c:
        raise ValueError("boom")
    assert c.packet is not None and c.packet.defences is None


def test_a_defence_the_harness_reports_failed_fails_the_packet() -> None:
    rec = recorder()
    with rec.candidate("hand") as c:
        c.shape_result("s1", passed=True)
        c.defence("candidate_kernel_profiled", "failed", detail="only cublasGemmEx in the capture")
    p = c.packet
    assert p is not None and p.failure is not None
    assert p.failure.failure_class.value == "reward_hack"
    assert p.failure.message == "defence candidate_kernel_profiled failed: only cublasGemmEx in the capture"
    with pytest.raises(ValueError, match=r"^expected one of .*, got `made_up`$"):
        c.defence("made_up", "passed")


def test_a_clock_patched_outside_a_measurement_fails_that_candidate_not_the_next() -> None:
    """A patch made while validating (no timer running) and left in place: before, the next
    candidate's measurement would have found it and been blamed."""
    original = time.perf_counter_ns
    rec = recorder()
    try:
        with rec.candidate("patches_while_validated") as c:
            time.perf_counter_ns = lambda: 0
            c.shape_result("s1", passed=True)
        after_first = time.perf_counter_ns is original
        with rec.candidate("honest_next") as nxt:
            nxt.check("s1", softmax(inputs(1)), softmax(inputs(1)), atol=1e-6)
            cand, base = quick_timer().compare(softmax, softmax, setup=setup_from(2))
            nxt.timing(cand, baseline=base, provider="numpy", version=np.__version__, call="softmax")
    finally:
        time.perf_counter_ns = original
    assert after_first
    p = c.packet
    assert p is not None and p.failure is not None and p.failure.failure_class.value == "reward_hack"
    assert defences(p)["timer_integrity"].detail == (
        "time.perf_counter_ns replaced when the candidate's block ended (put back)"
    )
    assert nxt.packet is not None and nxt.packet.status.value == "passed", nxt.packet.failure


# ---------------------------------------------------------------- the candidate's own kernel


def test_a_candidate_that_only_calls_a_library_fails_its_own_profile() -> None:
    """AMD GEAK #254 / the Sakana CUDA Engineer: the "new kernel" spent its time in a
    library call (or a trivial kernel); its own kernel never showed in the profile."""
    from kernel_evidence.models import KernelRecord, ProfilerCapture

    library_only = ProfilerCapture(
        tool="ncu",
        kernels=[
            KernelRecord(name="ampere_sgemm_128x64_nn"),
            KernelRecord(name="vectorized_elementwise_kernel"),
        ],
    )
    rec = recorder()
    with rec.candidate("library_call") as c:
        c.shape_result("s1", passed=True)
        c.profile(library_only, side="candidate", shape_id="s1", expected_kernels=["softmax_fused"])
    p = c.packet
    assert p is not None and p.failure is not None and p.failure.failure_class.value == "reward_hack"
    found = defences(p)["candidate_kernel_profiled"]
    assert found.outcome == "failed" and found.tool == "ncu"
    assert found.detail == (
        "none of the expected kernels (softmax_fused) in the ncu capture of the candidate, which shows"
        " ampere_sgemm_128x64_nn, vectorized_elementwise_kernel"
    )
    assert p.profiler is not None and p.profiler[0].of is not None and p.profiler[0].of.side == "candidate"

    own = ProfilerCapture(tool="ncu", kernels=[KernelRecord(name="softmax_fused_kernel<float, 512>")])
    with rec.candidate("own_kernel") as c2:
        c2.shape_result("s1", passed=True)
        c2.profile(own, side="candidate", shape_id="s1", expected_kernels=["softmax_fused"])
        c2.profile(library_only, side="baseline", shape_id="s1")  # a baseline capture checks nothing
    assert c2.packet is not None and c2.packet.status.value == "passed"
    assert defences(c2.packet)["candidate_kernel_profiled"].outcome == "passed"


def test_the_flush_runs_outside_the_timed_window() -> None:
    # what conditions.cache.flush_in_timed_window=false claims: a slow flush adds nothing
    class SlowFlush:
        flush_bytes, last_level_cache = 2048, 1024
        calls = 0

        def __call__(self) -> None:
            self.calls += 1
            time.sleep(0.005)

    flush = SlowFlush()
    m = quick_timer(flush=flush).measure(lambda: None)
    assert flush.calls == 1 + 8  # before every call, warmup included
    assert m.median_ns < 5e6, m.samples_ns  # inside the window every sample would be >= 5 ms
    assert m.conditions().cache == m.cache() and m.cache().flush_in_timed_window is False
    (found,) = [d for d in m.defences() if d.check == "cache_flush"]
    assert found.outcome == "passed" and found.detail is not None and "2048 bytes" in found.detail


def test_a_cuda_event_patch_left_by_a_candidate_fails_it_and_is_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A candidate that replaces ``torch.cuda.Event.elapsed_time`` outside any measurement
    (while validating, say) fails ``timer_integrity``, and the next candidate is timed with
    the original again. torch is not installed here: a module object standing in for it
    only owns the attributes; what is under test is the recorder's put-back."""
    import sys
    import types

    from kernel_evidence.harness import _integrity

    class Event:
        def record(self) -> None: ...

        def synchronize(self) -> None: ...

        def elapsed_time(self, other: Any) -> float:
            return 1.0

    cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(_integrity, "_TORCH_CLOCKS", None)
    original = Event.elapsed_time
    rec = Recorder(None, created_at="2026-11-22T00:00:00Z", operator="softmax")
    with rec.candidate("patcher"):
        Event.elapsed_time = lambda self, other: 0.001  # type: ignore[method-assign]
    with rec.candidate("honest"):
        assert Event.elapsed_time is original
    first, second = rec.packets
    integrity = {d.check: d for d in first.defences or []}["timer_integrity"]
    assert integrity.outcome == "failed" and "torch.cuda.Event.elapsed_time" in (integrity.detail or "")
    assert first.failure is not None and first.failure.failure_class.value == "reward_hack"
    assert all(d.outcome != "failed" for d in second.defences or [])
