"""Under which conditions each side of a comparison was measured, and what the harness did
against gaming (schema 0.2).

A speedup is only meaningful when the candidate and its baseline ran on the same device,
with the same dtypes and shape, timed the same way. ``Timing.conditions`` records the
candidate's side and ``Baseline.conditions`` the baseline's, in the same structure, so the
rules can compare them field by field instead of trusting a bare ``same_session: true``.

The defence record (:class:`Defence`, listed in ``EvidencePacket.defences``) says which
anti-gaming checks the harness ran and what they found; check names come from a closed
registry (:data:`DEFENCE_CHECKS`).
"""

from __future__ import annotations

from typing import Literal

from ._base import Bool, ByteSize, Int, Model, NonEmptyStr, NonNegFloat, NonNegInt, PosInt, Str

__all__ = ["DEFENCE_CHECKS", "CachePolicy", "CaptureOf", "Conditions", "Defence", "TimingMethod"]

TimingMethod = Literal[
    "cuda_events", "hip_events", "cupti", "host_clock", "profiler", "xprof", "torch_profiler",
    "triton_do_bench", "serving_client", "other",
]  # fmt: skip


class CachePolicy(Model):
    """What the caches held when the timed calls ran, with the evidence for it.

    ``mode``: ``flushed`` (a buffer was written between calls to evict the last-level
    cache), ``rotating`` (``rotating_buffers`` copies of the inputs, used in turn, whose
    total exceeds the cache), ``warm`` (nothing done: repeated calls hit the cache),
    ``cold_start`` (each call in a fresh process) or ``unknown``. A flush only evicts the
    cache when ``flush_bytes`` is at least ``last_level_cache``; a flush inside the timed
    window (``flush_in_timed_window``) adds its own time to every sample.
    """

    mode: Literal["flushed", "rotating", "warm", "cold_start", "unknown"]
    flush_bytes: ByteSize | None = None
    last_level_cache: ByteSize | None = None
    rotating_buffers: PosInt | None = None
    flush_in_timed_window: Bool | None = None
    cuda_graph_replays: NonNegInt | None = None


class Conditions(Model):
    """The conditions one side of a comparison was measured under.

    ``device`` is the device name as the side's tool reported it (``device_id`` the
    canonical id from the shipped device table, when known); ``session`` an opaque id of
    the process or run that timed it (two sides with the same session ran in one process);
    ``sample_handling`` how the samples were reduced before the statistics (``all``:
    none dropped; ``trimmed``: outliers removed; ``best_of``: the minimum of several runs).
    """

    dtypes: list[NonEmptyStr] | None = None
    shape_id: NonEmptyStr | None = None
    dims: dict[str, Int] | None = None
    device: Str | None = None
    device_id: Str | None = None
    device_count: PosInt | None = None
    method: TimingMethod | None = None
    warmup: NonNegInt | None = None
    repeats: NonNegInt | None = None
    synchronized: Bool | None = None
    cache: CachePolicy | None = None
    clock_policy: Literal["locked", "unlocked", "unknown"] | None = None
    session: Str | None = None
    interleaved: Bool | None = None
    fresh_inputs: Bool | None = None
    sample_handling: Literal["all", "trimmed", "best_of", "other"] | None = None


#: the named anti-gaming checks a harness can report, and what each one establishes
DEFENCE_CHECKS: dict[str, str] = {
    "fresh_inputs": "new input tensors for each side in every timed round, so an in-place "
    "or caching candidate cannot reuse earlier work",
    "outputs_checked_after_timing": "the outputs of the timed calls themselves were checked "
    "after the timer stopped, so deferred (asynchronous) work cannot hide outside the window",
    "timer_integrity": "the timing functions were the harness's own (not patched or replaced "
    "by the candidate) and a known delay was measured as such",
    "unseen_inputs": "the candidate was re-run on inputs it had not seen and its outputs "
    "checked, so outputs cached by input fingerprint fail",
    "candidate_kernel_profiled": "the profile of the timed call shows the candidate's own "
    "kernel, not only a library call",
    "hidden_workload": "the workload or seed was hidden from the candidate until it ran",
    "cache_flush": "the last-level cache was flushed (or inputs rotated) between timed calls "
    "with a buffer at least the size of the cache",
}

DefenceName = Literal[
    "fresh_inputs", "outputs_checked_after_timing", "timer_integrity", "unseen_inputs",
    "candidate_kernel_profiled", "hidden_workload", "cache_flush",
]  # fmt: skip


class Defence(Model):
    """One anti-gaming check the harness ran (or could not run), and what it found.

    ``outcome``: ``passed`` (ran and found nothing wrong), ``failed`` (ran and caught the
    candidate), ``skipped`` (not run) or ``not_applicable``. ``detail`` says what was done
    (for example the flush size, or how many unseen inputs were checked)."""

    check: DefenceName
    outcome: Literal["passed", "failed", "skipped", "not_applicable"]
    detail: Str | None = None
    tool: Str | None = None


class CaptureOf(Model):
    """What a profiler capture is of: which side, which shape, which kernels to expect.

    ``expected_kernels`` are names (or substrings of names) of the kernels the candidate is
    expected to launch; a capture of the candidate that shows none of them did not profile
    the candidate. ``claim_tolerance`` is the relative difference allowed between the
    capture's kernel time and the claimed timing of the same side and shape (rule KE1101
    uses 0.5 when it is not stated)."""

    side: Literal["candidate", "baseline", "reference", "other"]
    shape_id: NonEmptyStr | None = None
    expected_kernels: list[NonEmptyStr] | None = None
    claim_tolerance: NonNegFloat | None = None
