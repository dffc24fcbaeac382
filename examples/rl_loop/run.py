"""An RL-style kernel search loop on a CPU, recording one evidence packet per candidate.

    python examples/rl_loop/run.py --out rl_loop_out/packets.jsonl
    kevidence validate rl_loop_out/packets.jsonl

For every proposed softmax candidate (see ``candidates.py``): build it (``compile`` +
``exec``), validate it on a shape suite with freshly generated inputs (two draws per
shape, so a cached output cannot pass), time it interleaved with the numpy reference on
the timing shape (each side on its own fresh inputs, the CPU's last-level cache flushed
before every timed call, the timer's clock checked), check the outputs of timed calls
after timing, re-run it on inputs from seeds it has not seen, and write a packet with the
conditions of both sides and the defence record - failures included. At the end it prints
the rejection histogram, each candidate's reward, and the best candidate with its
evidence grade. Needs numpy only; runs in a few seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from candidates import CANDIDATES  # noqa: E402

from kernel_evidence.harness import (  # noqa: E402
    CacheFlush,
    CandidateRecord,
    Recorder,
    StopRule,
    Timer,
    check_output,
    reward,
)
from kernel_evidence.models import (  # noqa: E402
    ByteSize,
    FlopCount,
    Reference,
    ShapeCase,
    TensorSpec,
    TolerancePolicy,
    Work,
)

#: (id, rows, cols, input scale): s2 has cols % 128 != 0, s4 has inputs large enough to
#: overflow exp() in float32 without the max shift
SUITE = [("s1", 64, 128, 1), ("s2", 256, 1000, 1), ("s3", 512, 512, 1), ("s4", 128, 256, 50)]
TIMING_SHAPE = "s3"
DTYPE = np.float32
ATOL, RTOL = 1e-7, 1e-5
CALL_LIMIT_S = 0.25
REFERENCE_CALL = "e = np.exp(x - x.max(axis=-1, keepdims=True)); e / e.sum(axis=-1, keepdims=True)"


def reference(x: np.ndarray) -> np.ndarray:
    """The numpy reference softmax (also the timing baseline)."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def shape_cases() -> list[ShapeCase]:
    cases = []
    for sid, rows, cols, scale in SUITE:
        elems = rows * cols
        cases.append(
            ShapeCase(
                id=sid,
                dims={"rows": rows, "cols": cols, "input_scale": scale},
                tensors=[
                    TensorSpec(name="x", shape=[rows, cols], dtype="float32"),
                    TensorSpec(name="y", shape=[rows, cols], dtype="float32"),
                ],
                # one read and one write of the tensor; max, subtract, exp, sum, divide per element
                work=Work(
                    bytes=ByteSize(value=float(elems * 4 * 2), unit="B"),
                    flops=FlopCount(value=float(elems * 5), unit="FLOP"),
                ),
            )
        )
    return cases


def make_inputs(rng: np.random.Generator, rows: int, cols: int, scale: int) -> np.ndarray:
    return (rng.standard_normal((rows, cols)) * scale).astype(DTYPE)


def call_with_limit(fn, x):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(x)
    took = time.perf_counter() - t0
    if took > CALL_LIMIT_S:
        raise TimeoutError(f"one call took {took:.2f} s, over the {CALL_LIMIT_S} s limit")
    return out


def evaluate(
    rec: Recorder,
    name: str,
    description: str,
    source: str,
    *,
    seed: int,
    iteration: int,
    parent: str | None,
    timer: Timer,
) -> CandidateRecord:
    with rec.candidate(
        name,
        description=description,
        iteration=iteration,
        parent_packet_id=parent,
        relation="mutation" if parent else None,
    ) as c:
        c.seed("inputs", seed)
        t0 = time.perf_counter()
        code = compile(source, f"<candidate {name}>", "exec")  # SyntaxError -> compile_error
        namespace: dict[str, object] = {}
        exec(code, namespace)  # noqa: S102 - the example's own candidates
        c.compile(
            source=source,
            compiler="CPython",
            language="python",
            duration_s=time.perf_counter() - t0,
        )
        fn = namespace["softmax"]

        rng = np.random.default_rng(seed)
        c.inputs_regenerated(True)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for sid, rows, cols, scale in SUITE:
                for _draw in range(2):  # fresh inputs each draw: cached outputs cannot pass
                    x = make_inputs(rng, rows, cols, scale)
                    out = call_with_limit(fn, x)
                    result, failure_class = check_output(sid, out, reference(x), atol=ATOL, rtol=RTOL)
                    if not result.passed:
                        break
                c.shape_result(result, failure_class=failure_class)  # one result per shape
        if not c.validated:
            return c  # failed validation: no timing, no claim

        rows, cols, scale = next((r, k, s) for i, r, k, s in SUITE if i == TIMING_SHAPE)
        trng = np.random.default_rng(seed + 1)
        # timed interleaved with numpy, each side on its own inputs; the outputs of three
        # timed calls (chosen at random) are checked against the reference after timing
        c.time_and_check(
            timer,
            fn,
            reference,
            setup=lambda: make_inputs(trng, rows, cols, scale),
            shape_id=TIMING_SHAPE,
            baseline=reference,
            provider="numpy",
            version=np.__version__,
            call=REFERENCE_CALL,
            atol=ATOL,
            rtol=RTOL,
        )
        # re-run on inputs from seeds drawn now, which no candidate could have seen
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            c.check_unseen(
                fn,
                reference,
                lambda s: make_inputs(np.random.default_rng(s), rows, cols, scale),
                shape_id=TIMING_SHAPE,
                atol=ATOL,
                rtol=RTOL,
            )
    return c


def cache_flush() -> CacheFlush | None:
    """A flush twice the CPU's last-level cache, or None where the cache size is unknown
    (the packets then record the cache_flush defence as skipped)."""
    try:
        return CacheFlush(device="cpu")
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out",
        default="rl_loop_out/packets.jsonl",
        help="packet output: .jsonl, .jsonl.zst or a folder",
    )
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--budget", type=float, default=0.5, help="timing budget per candidate, seconds")
    ap.add_argument(
        "--append", action="store_true", help="append to an existing output instead of replacing it"
    )
    ap.add_argument(
        "--created-at",
        default=None,
        help="fixed created_at (RFC 3339 UTC) for reproducible packets",
    )
    args = ap.parse_args(argv)

    out = Path(args.out)
    # under `kevidence replay --execute` (KEVIDENCE_OUT set) the packets go there only: the
    # recorded output, which holds the packet being replayed, is left as it is
    replaying = bool(os.environ.get("KEVIDENCE_OUT"))
    if out.is_file() and not args.append and not replaying:
        out.unlink()
    started = time.perf_counter()
    timer = Timer(
        warmup=2,
        stop=StopRule(min_repeats=10, max_repeats=100, target_rel_ci=0.02, time_budget_s=args.budget),
        flush=cache_flush(),
    )
    rec = Recorder(
        None if replaying else out,
        created_at=args.created_at,
        operator="softmax",
        description="row-wise softmax over the last axis, float32",
        shapes=[s.model_dump(exclude_none=True) for s in shape_cases()],
        dtypes=["float32"],
        reference=Reference(name="numpy softmax", kind="numpy", version=np.__version__).model_dump(
            exclude_none=True
        ),
        tolerance=TolerancePolicy(atol=ATOL, rtol=RTOL, required_matched_ratio=1.0).model_dump(
            exclude_none=True
        ),
    )
    results = []
    parent = None
    with rec:
        for i, (name, description, source) in enumerate(CANDIDATES):
            c = evaluate(
                rec,
                name,
                description,
                source,
                seed=args.seed + i,
                iteration=i,
                parent=parent,
                timer=timer,
            )
            if name == "ref_copy" and c.packet is not None:
                parent = c.packet.packet_id  # later candidates are mutations of the first
            results.append(c)

    print(f"{rec.written} packets -> {out}  ({time.perf_counter() - started:.1f} s)")
    print("\nrejection histogram:")
    for key, n in sorted(rec.histogram.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {key:<20} {n:>3}  {'#' * n}")
    print("\ncandidates:")
    best = None
    for c in results:
        p = c.packet
        assert p is not None
        r = reward(p)
        sp = p.timing.speedup.value if p.timing and p.timing.speedup else None
        outcome = p.status.value if p.failure is None else f"{p.status.value}/{p.failure.failure_class.value}"
        shape = f" at {p.failure.shape_id}" if p.failure and p.failure.shape_id else ""
        print(
            f"  {c.name:<14} {outcome + shape:<34} speedup {'-' if sp is None else f'{sp:.2f}x':>7}  reward {r:5.2f}"
        )
        if best is None or r > best[0]:
            best = (r, c)
    if best is not None and best[1].packet is not None:
        p = best[1].packet
        try:
            from kernel_evidence.rules import validate

            report = validate(p)
            grade = report.grade.letter
            reasons = "; ".join(report.grade.reasons)
        except ImportError:  # the validator is not part of this build
            grade, reasons = "?", "validator not available"
        print(f"\nbest: {best[1].name} (reward {best[0]:.2f}), evidence grade {grade}")
        if reasons:
            print(f"  why not higher: {reasons}")
        print(f"  packet {p.packet_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
