"""End to end on one NVIDIA GPU: a recorder loop with honest, wrong, broken and cheating
candidates, vendor baselines, Nsight Compute and JAX profiles, then kevidence over the result.

    python examples/gpu/run.py --out gpu_out            # on a GPU (torch, Triton, ncu, JAX)
    python examples/gpu/run.py --out gpu_out --dry-run  # anywhere: numpy CPU stand-ins

Everything is written under ``--out`` (refused when it is not empty, unless ``--force``):

    packets/          one packet per candidate (recorder) and per ingested profile
    ncu/              <candidate>.<side>.ncu-rep and the raw page of each as CSV
    jax/              the jax.profiler trace folder (.xplane.pb)
    validate.txt, validate.json, audit.md, archive/, report.html
    summary.json      the table below as data, the device, the tool versions, the steps
    table.txt         the table printed last

The device's settings are never changed: no clock locking (``ncu --clock-control none``), no
persistence or power changes, no resets; clocks and the power limit are recorded as observed.
See README.md for what each candidate models and what the table means.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from gpu_specs import (  # noqa: E402
    CANDIDATES,
    Built,
    CandidateSpec,
    Operator,
    Published,
    spec_by_name,
    validation_seeds,
)

#: what run.py creates under --out; --force removes only these
OUTPUTS = (
    "packets", "ncu", "jax", "archive", "validate.txt", "validate.json", "audit.md",
    "report.html", "summary.json", "table.txt",
)  # fmt: skip
EXTENSION = "kernel-evidence:gpu-example"
#: the whole run should end well inside 8 minutes; later steps are skipped past this
DEFAULT_DEADLINE_S = 420.0


class UsageError(Exception):
    """Bad command-line use: exit code 2."""


# ----------------------------------------------------------------------------- arguments


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="run.py", description="kernel-evidence end to end on one NVIDIA GPU (or CPU stand-ins)"
    )
    ap.add_argument("--out", type=Path, help="output folder (must be empty or new, unless --force)")
    ap.add_argument("--force", action="store_true", help="write into a non-empty --out (run.py's own outputs there are replaced)")
    ap.add_argument("--dry-run", action="store_true", help="numpy CPU stand-ins for the kernels; no GPU, ncu or JAX needed")
    ap.add_argument("--seed", type=int, default=1234, help="base of the published validation seeds")
    ap.add_argument("--budget", type=float, default=None, help="timing seconds per candidate (default 1.5 on the GPU, 0.1 dry run)")
    ap.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE_S, help="seconds from the start after which the ncu and JAX steps are skipped")
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME", help="run these candidates only")
    ap.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute profiles")
    ap.add_argument("--no-jax", action="store_true", help="skip the JAX profile")
    ap.add_argument("--no-tools", action="store_true", help="skip kevidence validate/audit/archive/report")
    ap.add_argument("--created-at", default=None, help="fixed created_at (RFC 3339 UTC) for reproducible packets")
    # internal modes, run by the script itself in a child process
    ap.add_argument("--profile-target", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--profile-side", choices=("candidate", "baseline"), default="candidate", help=argparse.SUPPRESS)
    ap.add_argument("--jax-profile", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.profile_target is None and args.jax_profile is None and args.out is None:
        ap.error("--out is required")
    if args.budget is not None and not args.budget > 0:
        ap.error(f"--budget must be > 0, got {args.budget}")
    if args.only:
        known = {s.name for s in CANDIDATES}
        unknown = [n for n in args.only if n not in known]
        if unknown:
            ap.error(f"--only: unknown candidate {unknown[0]}; expected one of {', '.join(sorted(known))}")
    return args


def prepare_out(out: Path, force: bool) -> Path:
    """Create ``out``; refuse a folder that holds anything unless ``force`` (then run.py's own
    outputs there are removed; nothing else is touched)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise UsageError(f"--out {out}: the folder is not empty (pass --force to write into it)")
        for name in OUTPUTS:
            p = out / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    return out


# ----------------------------------------------------------------------------- backends


@dataclasses.dataclass
class Backend:
    """One way to run the candidates: the CUDA device, or numpy stand-ins on the host CPU."""

    name: str  # "cuda" or "cpu-standin"
    operators: dict[str, Operator]
    build: Any  # (spec, operators, published) -> Built
    synchronize: Any  # wait for every stream of the device
    flush: Any  # a CacheFlush, or None where the cache size is unknown
    environment: Any  # kernel_evidence.harness.Environment
    dry_run: bool
    release: Any = None  # give cached device memory back before the child processes run
    #: watches the timer's clock functions when a candidate's work ends; on the GPU this covers
    #: torch.cuda's too (the recorder itself puts back only the ``time`` functions then)
    clock_guard: Any = None


def cpu_backend() -> Backend:
    """numpy stand-ins; the recorded device is the host CPU whatever accelerator is present."""
    import cpu_standins

    from kernel_evidence.harness import CacheFlush, capture_environment
    from kernel_evidence.harness.environment import cpu_hardware, host_info

    env = capture_environment()
    hw = cpu_hardware(env.hardware.host or host_info())
    note = "CPU stand-in run (run.py --dry-run): numpy code in place of the GPU kernels; hardware is the host CPU"
    env = dataclasses.replace(env, hardware=hw, notes=[note, *[n for n in env.notes if "no accelerator" not in n]])
    try:
        flush = CacheFlush(device="cpu")
    except ValueError:
        flush = None
    from kernel_evidence.harness import timer as timer_module
    from kernel_evidence.harness._integrity import ClockGuard

    guard = ClockGuard(module=timer_module)  # the time functions, as on the GPU run (plus torch.cuda there)
    return Backend(
        "cpu-standin", cpu_standins.operators(), cpu_standins.build, cpu_standins.device_synchronize, flush, env, True,
        None, guard,
    )  # fmt: skip


def cuda_backend() -> Backend:
    """torch + Triton on CUDA device 0 (imports torch before the environment is captured, so the
    capture can read the SM count, L2 size and runtime version from it)."""
    import torch

    if not torch.cuda.is_available():
        raise UsageError("no CUDA device visible to torch: run on a GPU machine, or pass --dry-run")
    import gpu_kernels

    from kernel_evidence.harness import CacheFlush, capture_environment

    torch.cuda.init()
    ops = gpu_kernels.operators()
    env = capture_environment()
    flush = CacheFlush(device="cuda")  # factor 2 x torch.cuda.get_device_properties(0).L2_cache_size
    # made before any candidate runs, so it holds the real functions
    from kernel_evidence.harness import timer as timer_module
    from kernel_evidence.harness._integrity import ClockGuard

    guard = ClockGuard(module=timer_module, torch=torch)
    return Backend("cuda", ops, gpu_kernels.build, gpu_kernels.synchronize, flush, env, False, torch.cuda.empty_cache, guard)


# ----------------------------------------------------------------------------- packet assembly


def shape_cases(op: Operator) -> list[dict[str, Any]]:
    """``task.shapes`` of an operator: dims, tensors and the work of one call."""
    from kernel_evidence.models import ByteSize, FlopCount, ShapeCase, TensorSpec, Work

    size = 2 if op.dtype in ("bfloat16", "float16") else 4
    cases = []
    for s in op.shapes:
        d = s.dims
        if op.spec.name == "softmax":
            tensors = [TensorSpec(name=n, shape=[d["rows"], d["cols"]], dtype=op.dtype) for n in ("x", "y")]
            elems = d["rows"] * d["cols"]
            # one read and one write; max, subtract, exp, sum, divide per element
            work = Work(bytes=ByteSize(value=float(2 * elems * size), unit="B"), flops=FlopCount(value=float(5 * elems), unit="FLOP"))
        else:
            m, n, k = d["m"], d["n"], d["k"]
            tensors = [
                TensorSpec(name="a", shape=[m, k], dtype=op.dtype),
                TensorSpec(name="b", shape=[k, n], dtype=op.dtype),
                TensorSpec(name="c", shape=[m, n], dtype=op.dtype),
            ]
            work = Work(
                bytes=ByteSize(value=float((m * k + k * n + m * n) * size), unit="B"),
                flops=FlopCount(value=float(2 * m * n * k), unit="FLOP"),
            )
        cases.append(ShapeCase(id=s.id, dims=dict(d), tensors=tensors, work=work).model_dump(exclude_none=True))
    return cases


def task_fields(op: Operator) -> dict[str, Any]:
    """The task of every candidate of an operator (for ``rec.candidate(...)``)."""
    from kernel_evidence.models import Reference, TolerancePolicy

    return {
        "operator": op.spec.name,
        "shapes": shape_cases(op),
        "dtypes": [op.dtype],
        "reference": Reference(name=op.reference_name, kind=op.reference_kind, version=op.reference_version).model_dump(exclude_none=True),  # type: ignore[arg-type]
        "tolerance": TolerancePolicy(atol=op.atol, rtol=op.rtol, required_matched_ratio=1.0).model_dump(exclude_none=True),
    }


def extension(spec: CandidateSpec, backend: Backend, built: Built | None, op: Operator) -> dict[str, Any]:
    """The example's own record in each candidate packet: role, expectation, and on a dry run
    that the code was a CPU stand-in and for what."""
    data: dict[str, Any] = {
        "mode": "dry-run" if backend.dry_run else "gpu",
        "role": spec.role,
        "expected_status": spec.expect.status,
        "expected_failure_class": spec.expect.failure_class,
        "caught_by": list(spec.expect.caught_by) or None,
        "incident": spec.incident,
        "baseline_note": op.baseline_note,
        "stand_in": backend.dry_run,
    }
    if backend.dry_run:
        data["stands_in_for"] = built.stands_in_for if built is not None else spec.description
    return {k: v for k, v in data.items() if v is not None}


def describe(spec: CandidateSpec, backend: Backend) -> str:
    prefix = "CPU stand-in (numpy) for the GPU candidate: " if backend.dry_run else ""
    return prefix + spec.description


# ----------------------------------------------------------------------------- the recorder loop


@dataclasses.dataclass
class Outcome:
    spec: CandidateSpec
    record: Any  # CandidateRecord
    notes: list[str] = dataclasses.field(default_factory=list)


def validate_suite(c: Any, fn: Any, op: Operator, backend: Backend, published: Published) -> None:
    """Check the candidate on every shape with the published seeds (two draws per shape): a
    shape fails at its first wrong draw. The device is synchronised before each check, as a
    harness does (a candidate's side-stream work is waited for here)."""
    c.inputs_regenerated(True)
    for s in op.shapes:
        result = None
        for seed in published.seeds[s.id]:
            args = op.inputs(s.id, seed)
            out = fn(*args)
            backend.synchronize()
            result = c.check(s.id, out, op.reference(*args), atol=op.atol, rtol=op.rtol)
            if not result.passed:
                break


def timed_inputs(op: Operator, seed: int) -> Any:
    """Fresh inputs for every timed call, from seeds nobody published."""
    import secrets

    rng_seed = secrets.randbits(31)
    counter = iter(range(10**9))
    return lambda: op.inputs(op.spec.timed, (rng_seed + next(counter) * 7919) % (2**31))


def evaluate(rec: Any, spec: CandidateSpec, backend: Backend, timer: Any, args: argparse.Namespace, ctx: dict[str, Any]) -> Outcome:
    op = backend.operators[spec.operator]
    outcome = Outcome(spec, None)
    guard = backend.clock_guard
    if guard is not None:
        guard.replaced()  # a patch left before this candidate is not its doing
    with rec.candidate(spec.name, description=describe(spec, backend), **task_fields(op)) as c:
        outcome.record = c
        try:
            work(c, rec, spec, op, backend, timer, args, ctx, outcome)
        finally:
            left = guard.replaced() if guard is not None else []
            if left:
                c.defence(
                    "timer_integrity", "failed", tool="examples/gpu/run.py",
                    detail=f"{', '.join(left)} replaced when the candidate's work ended (put back by run.py);"
                    " the timer's own findings are in timing.notes",
                )  # fmt: skip
    return outcome


def work(c: Any, rec: Any, spec: CandidateSpec, op: Operator, backend: Backend, timer: Any, args: argparse.Namespace, ctx: dict[str, Any], outcome: Outcome) -> None:
    """Build, validate, time against the baseline, re-run on unseen inputs, profile."""
    published = Published(validation_seeds(op.shapes, args.seed))
    c.extension(EXTENSION, extension(spec, backend, None, op))
    for sid, seeds in published.seeds.items():
        c.seed(f"validation_{sid}", seeds[0])
    t0 = time.perf_counter()
    built = backend.build(spec, backend.operators, published)  # a kernel that does not build raises here
    c.compile(source=built.source, compiler=built.compiler, language=built.language, duration_s=time.perf_counter() - t0)
    c.extension(EXTENSION, extension(spec, backend, built, op))
    validate_suite(c, built.fn, op, backend, published)
    if not c.validated:
        return
    if not backend.dry_run:
        rec.refresh_clocks()  # the clocks observed now, not at start-up (the stand-ins keep the CPU)
    c.time_and_check(
        timer, built.fn, op.reference, setup=timed_inputs(op, args.seed), shape_id=op.spec.timed,
        baseline=op.baseline, provider=op.provider, version=op.version, call=op.call, atol=op.atol, rtol=op.rtol,
    )  # fmt: skip
    c.check_unseen(built.fn, op.reference, lambda seed: op.inputs(op.spec.timed, seed), shape_id=op.spec.timed, atol=op.atol, rtol=op.rtol)
    backend.synchronize()
    if spec.profile and ctx.get("ncu"):
        outcome.notes += profile_with_ncu(c, spec, op, args, ctx)


def make_timer(backend: Backend, budget: float) -> Any:
    from kernel_evidence.harness import StopRule, Timer

    rule = StopRule(min_repeats=10, max_repeats=100 if not backend.dry_run else 30, target_rel_ci=0.01, time_budget_s=budget)
    return Timer(warmup=3 if not backend.dry_run else 1, stop=rule, flush=backend.flush)


def run_loop(backend: Backend, args: argparse.Namespace, out: Path, ctx: dict[str, Any]) -> list[Outcome]:
    from kernel_evidence.harness import Recorder

    budget = args.budget if args.budget is not None else (0.1 if backend.dry_run else 1.5)
    timer = make_timer(backend, budget)  # made before any candidate runs: it keeps the real clocks
    specs = [s for s in CANDIDATES if not args.only or s.name in args.only]
    outcomes = []
    with Recorder(out / "packets", created_at=args.created_at, environment=backend.environment) as rec:
        for spec in specs:
            outcomes.append(evaluate(rec, spec, backend, timer, args, ctx))
            print(f"  {spec.name:<24} {status_text(outcomes[-1].record.packet)}", flush=True)
    backend.synchronize()
    if backend.release is not None:
        backend.release()
    return outcomes


def status_text(packet: Any) -> str:
    if packet is None:
        return "-"
    return packet.status.value if packet.failure is None else f"{packet.status.value}/{packet.failure.failure_class.value}"


# ----------------------------------------------------------------------------- Nsight Compute


def ncu_tool() -> tuple[str | None, str | None]:
    """``(path, version line)`` of ``ncu``, or ``(None, why)``."""
    path = shutil.which("ncu")
    if path is None:
        return None, "ncu not found on PATH"
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"ncu --version failed: {exc}"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return path, lines[-1] if lines else "unknown"


def ncu_argv(ncu: str, rep: Path, name: str, side: str, seed: int) -> list[str]:
    """Profile one side of one candidate at the timed shape in a child process, without touching
    the clocks (``--clock-control none``), only the calls between cudaProfilerStart/Stop."""
    return [
        ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
        "--force-overwrite", "--export", str(rep),
        sys.executable, str(HERE / "run.py"), "--profile-target", name, "--profile-side", side, "--seed", str(seed),
    ]  # fmt: skip


def ncu_raw_csv_argv(ncu: str, rep: Path) -> list[str]:
    return [ncu, "--import", str(rep), "--csv", "--page", "raw"]


def attach_ncu(c: Any, csv_path: Path, *, side: str, shape_id: str, expected: Sequence[str]) -> tuple[Any, list[str]]:
    """Ingest an ncu raw-page CSV (the ncu adapter) and attach its capture to the candidate's
    packet, saying what it is of; a capture of the candidate with expected kernels runs the
    ``candidate_kernel_profiled`` defence, and the validator's KE1101/KE1102 hold it against the
    packet's timing. Returns the capture and the adapter's warnings."""
    from kernel_evidence import ingest

    result = ingest("ncu", [str(csv_path)])
    captures = [cap for p in result.packets for cap in (p.profiler or [])]
    if len(captures) != 1:
        raise ValueError(f"{csv_path}: expected one ncu capture, got {len(captures)}")
    c.profile(captures[0], side=side, shape_id=shape_id, expected_kernels=list(expected) or None)
    return captures[0], list(result.warnings)


def profile_with_ncu(c: Any, spec: CandidateSpec, op: Operator, args: argparse.Namespace, ctx: dict[str, Any]) -> list[str]:
    """ncu on the candidate and on its baseline at the timed shape; both captures attached."""
    ncu, folder = ctx["ncu"], ctx["out"] / "ncu"
    folder.mkdir(exist_ok=True)
    notes = []
    for side, expected in (("candidate", spec.expected_kernels), ("baseline", ())):
        if time.monotonic() > ctx["deadline"]:
            notes.append(f"ncu {side}: skipped, past the deadline")
            continue
        rep = folder / f"{spec.name}.{side}.ncu-rep"
        try:
            prof = subprocess.run(ncu_argv(ncu, rep, spec.name, side, args.seed), capture_output=True, text=True, timeout=240, check=False)
            (folder / f"{spec.name}.{side}.log").write_text(prof.stdout + prof.stderr)
            raw = subprocess.run(ncu_raw_csv_argv(ncu, rep), capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            notes.append(f"ncu {side}: {exc}")
            continue
        csv_path = folder / f"{spec.name}.{side}.raw.csv"
        csv_path.write_text(raw.stdout)
        if prof.returncode != 0 or raw.returncode != 0 or not raw.stdout.strip():
            notes.append(f"ncu {side}: exit {prof.returncode}/{raw.returncode}, see {rep.name} and its .log")
            continue
        try:
            _, warnings = attach_ncu(c, csv_path, side=side, shape_id=op.spec.timed, expected=expected)
        except Exception as exc:  # noqa: BLE001 - a profile that cannot be read is the run's problem, not the candidate's
            notes.append(f"ncu {side}: {csv_path.name} not ingested: {type(exc).__name__}: {exc}")
            continue
        ctx.setdefault("ncu_files", []).append({"side": side, "candidate": spec.name, "rep": str(rep), "csv": str(csv_path)})
        notes += [f"ncu {side}: {w}" for w in warnings]
    return notes


def ingest_ncu_rep(rep: Path, packets: Path, replay: list[str], repository: Any = None) -> tuple[list[str], str | None]:
    """The binary report through the ncu adapter's .ncu-rep reader (NVIDIA's ncu_report module,
    shipped with ncu under extras/python), as a profile packet of its own."""
    ncu = shutil.which("ncu")
    if ncu is not None:
        extras = Path(os.path.realpath(ncu)).parent / "extras" / "python"
        if extras.is_dir() and str(extras) not in sys.path:
            sys.path.append(str(extras))
    try:
        return write_ingested("ncu", [rep], packets, replay, name=f"ncu-rep {rep.stem}", repository=repository), None
    except Exception as exc:  # noqa: BLE001 - reported in the summary, the run goes on
        return [], f"{type(exc).__name__}: {exc}"


# ----------------------------------------------------------------------------- JAX


def jax_target(folder: Path) -> None:
    """A small jitted op, profiled with jax.profiler into ``folder`` (run in a child process:
    JAX must not share the torch process's device memory)."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def scaled_tanh_matmul(a: Any, b: Any) -> Any:
        return jnp.tanh(a @ b) * 0.5

    ka, kb = jax.random.split(jax.random.PRNGKey(0))
    a = jax.random.normal(ka, (2048, 2048), dtype=jnp.bfloat16)
    b = jax.random.normal(kb, (2048, 2048), dtype=jnp.bfloat16)
    scaled_tanh_matmul(a, b).block_until_ready()  # compiled outside the trace
    with jax.profiler.trace(str(folder)):
        for _ in range(5):
            scaled_tanh_matmul(a, b).block_until_ready()
    print(json.dumps({"jax": jax.__version__, "devices": [str(d) for d in jax.devices()]}))


def find_xplane(folder: Path) -> Path | None:
    """The profile run folder (``plugins/profile/<run>/``) holding an ``.xplane.pb``."""
    found = sorted(folder.glob("plugins/profile/*/*.xplane.pb"))
    return found[-1].parent if found else None


def profile_jax(out: Path, packets: Path, repository: Any = None) -> tuple[list[str], str | None]:
    """Run the JAX target in a child process and ingest its profile (the xprof adapter)."""
    folder = out / "jax"
    folder.mkdir(exist_ok=True)
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    argv = [sys.executable, str(HERE / "run.py"), "--jax-profile", str(folder)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        return [], f"JAX profile: {exc}"
    (folder / "jax.log").write_text(proc.stdout + proc.stderr)
    run_dir = find_xplane(folder)
    if proc.returncode != 0 or run_dir is None:
        return [], f"JAX profile: exit {proc.returncode}, no .xplane.pb (see jax/jax.log)"
    return write_ingested("xprof", [run_dir], packets, argv, name="jax scaled_tanh_matmul (jax.profiler)", repository=repository), None


def write_ingested(
    tool: str, inputs: Sequence[Path], packets: Path, replay: list[str], *, name: str, repository: Any = None
) -> list[str]:
    """Ingest ``inputs`` with an adapter and write each packet into the packets folder (named as
    the recorder names its own); returns the files written. ``repository`` (the recorder's
    ``Repository``: commit, dirty tree, remote) goes to ``replay.repository``, which only the
    run knows."""
    from kernel_evidence import ingest

    sets: list[tuple[tuple[str, ...], Any]] = [(("subject", "name"), name)]
    if repository is not None:
        sets.append((("replay", "repository"), repository.model_dump(mode="json", exclude_none=True)))
    result = ingest(tool, [str(p) for p in inputs], replay_cmd=replay, sets=sets)
    written = []
    for packet in result.packets:
        assert packet.packet_id is not None  # ingest gives every packet its id
        path = packets / f"{packet.packet_id.split(':', 1)[-1][:32]}.json"
        path.write_bytes(packet.to_json())
        written.append(str(path))
    return written


# ----------------------------------------------------------------------------- kevidence over the result


def kevidence(*argv: str) -> list[str]:
    return [sys.executable, "-m", "kernel_evidence", *argv]


def tool_commands(out: Path) -> dict[str, tuple[list[str], Path | None]]:
    """Each kevidence step: its command line and the file its standard output goes to."""
    packets = str(out / "packets")
    steps: dict[str, tuple[list[str], Path | None]] = {
        "validate": (kevidence("validate", packets, "-v"), out / "validate.txt"),
        "validate-json": (kevidence("validate", packets, "--format", "json"), out / "validate.json"),
    }
    if importlib.util.find_spec("kernel_evidence.cli.audit") is not None:  # `kevidence audit` exists
        steps["audit"] = (kevidence("audit", packets, "--format", "md", "--fail-on", "never", "-o", str(out / "audit.md")), None)
    steps["archive"] = (kevidence("archive", packets, "--to", str(out / "archive"), "--allow-invalid"), None)
    steps["report"] = (kevidence("report", str(out / "archive"), "-o", str(out / "report.html"), "--title", "kernel-evidence GPU example", "--force"), None)
    return steps


def run_tools(out: Path) -> dict[str, dict[str, Any]]:
    """Run validate, audit, archive and report; their exit codes and where their output went."""
    done: dict[str, dict[str, Any]] = {}
    for step, (argv, sink) in tool_commands(out).items():
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            done[step] = {"exit": None, "error": str(exc)}
            continue
        if sink is not None:
            sink.write_text(proc.stdout)
        tail = (proc.stdout if sink is None else "") + proc.stderr
        done[step] = {"exit": proc.returncode, "command": " ".join(argv[2:]), "output": str(sink) if sink else None, "tail": tail[-400:]}
    return done


# ----------------------------------------------------------------------------- verdicts and the table


def judge(packet: Any, spec: CandidateSpec | None, report: Any) -> str:
    """Expected against actual for one packet: ``ok: ...`` or ``MISMATCH: ...``."""
    if spec is None:  # an ingested profile: valid is all it must be
        return "ok: profile ingested, valid" if report.ok else "MISMATCH: profile packet invalid"
    exp = spec.expect
    actual = packet.failure.failure_class.value if packet.failure else None
    if spec.role == "cheat":
        failed = sorted(d.check for d in packet.defences or [] if d.outcome == "failed")
        hit = [d for d in failed if d in exp.caught_by]
        if actual == "reward_hack" and hit:
            return f"ok: caught by {', '.join(hit)}"
        return f"MISSED: cheat ended {status_text(packet)}, failed defences {failed or 'none'}"
    if packet.status.value != exp.status or actual != exp.failure_class:
        want = exp.status + (f"/{exp.failure_class}" if exp.failure_class else "")
        return f"MISMATCH: expected {want}, got {status_text(packet)}"
    if not report.ok:
        return f"MISMATCH: {status_text(packet)} as expected but invalid ({', '.join(f.rule_id for f in report.errors)})"
    if exp.status == "passed":
        return "ok: honest, passed, valid" + _race_note(spec, packet)
    return f"ok: {status_text(packet)} as expected"


def _race_note(spec: CandidateSpec, packet: Any) -> str:
    """A note when the candidate meant to win lost, or the one meant to lose won: reported, not
    a failed verdict (which is faster is what the run measures, not what it assumes)."""
    t = packet.timing
    s = t.speedup.value if t is not None and t.speedup is not None else None
    if s is None:
        return ""
    if spec.role == "honest-win" and s < 1:
        return f" (meant to win, lost: {s:.3g}x)"
    if spec.role == "honest-lose" and s > 1:
        return f" (meant to lose, won: {s:.3g}x)"
    return ""


def rate_text(packet: Any) -> str:
    """Achieved rate at the timed shape (bytes or FLOP per second) against the device's peak."""
    from kernel_evidence.rules import device_peaks

    t, task = packet.timing, packet.task
    if t is None or t.stats is None or t.stats.median is None or task is None:
        return "-"
    shape = next((s for s in task.shapes or [] if s.id == t.shape_id), None)
    if shape is None or shape.work is None:
        return "-"
    from kernel_evidence.units import to_base

    sec = to_base(t.stats.median, t.stats.unit)
    if not sec > 0:
        return "-"
    hw = packet.hardware
    peaks = device_peaks(hw.device if hw else None, hw.arch if hw else None)
    dtype = (task.dtypes or ["?"])[0]
    if task.operator == "gemm" and shape.work.flops is not None:
        rate = shape.work.flops.value / sec
        peak = peaks.flops.get({"bfloat16": "bf16", "float32": "fp32"}.get(dtype, dtype)) if peaks else None
        text = f"{rate / 1e12:.3g} TFLOP/s"
    elif shape.work.bytes is not None:
        rate = shape.work.bytes.value / sec
        peak = peaks.bandwidth if peaks else None
        text = f"{rate / 1e9:.4g} GB/s"
    else:
        return "-"
    return f"{text} ({100 * rate / peak:.0f}% of peak)" if peak else text


@dataclasses.dataclass
class Row:
    packet: str
    role: str
    status: str
    grade: str
    findings: str
    median: str
    speedup: str
    rate: str
    audit: str
    verdict: str
    packet_id: str = ""


def audit_levels(folder: Path) -> dict[str, str]:
    """packet id -> the audit's level for it (the library function behind ``kevidence audit``);
    empty where this build has no audit."""
    try:
        from kernel_evidence.audit import audit
    except ImportError:
        return {}
    return {s.packet_id: s.level for s in audit(str(folder)).suspects if s.packet_id}


def table_rows(packets: Sequence[Any], levels: dict[str, str] | None = None) -> list[Row]:
    """One row per packet, candidates in the order of the run, then the profiles; ``levels``:
    the audit's level per packet id."""
    from kernel_evidence.rules import validate

    levels = levels or {}
    rows = []
    for p in packets:
        report = validate(p)
        ext = (p.extensions or {}).get(EXTENSION) or {}
        spec = spec_by_name(p.subject.name) if ext.get("role") else None
        ids = sorted({f.rule_id for f in report.findings if f.severity in ("error", "warning")})
        t = p.timing
        median = f"{t.stats.median:.4g} {t.stats.unit}" if t is not None and t.stats is not None and t.stats.median is not None else "-"
        speedup = f"{t.speedup.value:.3g}x" if t is not None and t.speedup is not None else "-"
        rows.append(
            Row(
                packet=p.subject.name, role=ext.get("role", "profile"), status=status_text(p), grade=report.grade.letter,
                findings=", ".join(ids) if ids else "none", median=median, speedup=speedup, rate=rate_text(p),
                audit=levels.get(p.packet_id or "", "-"), verdict=judge(p, spec, report), packet_id=p.packet_id or "",
            )
        )  # fmt: skip
    order = {s.name: i for i, s in enumerate(CANDIDATES)}
    rows.sort(key=lambda r: (r.role == "profile", order.get(r.packet, 99), r.packet))
    return rows


COLUMNS = ("packet", "role", "status", "grade", "findings", "median", "speedup", "rate", "audit", "verdict")


def render_table(rows: Sequence[Row]) -> str:
    """A fixed-width text table: one line per packet, a header and a rule."""
    cells = [list(COLUMNS)] + [[str(getattr(r, c)) for c in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def read_packets(folder: Path) -> list[Any]:
    from kernel_evidence.models import EvidencePacket

    return [EvidencePacket.model_validate_json(p.read_bytes()) for p in sorted(folder.glob("*.json"))]


# ----------------------------------------------------------------------------- main


def tool_versions(backend: Backend, ctx: dict[str, Any]) -> dict[str, str]:
    from kernel_evidence import __version__

    versions = dict(backend.environment.packages)
    versions["kernel-evidence"] = __version__
    versions["python"] = sys.version.split()[0]
    if ctx.get("ncu_version"):
        versions["ncu"] = ctx["ncu_version"]
    return versions


def device_summary(backend: Backend) -> dict[str, Any]:
    hw = backend.environment.hardware
    data = hw.model_dump(mode="json", exclude_none=True)
    data.pop("host", None)
    data["notes"] = backend.environment.notes
    return data


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    out = prepare_out(args.out, args.force)
    backend = cpu_backend() if args.dry_run else cuda_backend()
    ctx: dict[str, Any] = {"out": out, "deadline": started + args.deadline, "steps": {}}
    if backend.dry_run or args.no_ncu:
        ctx["steps"]["ncu"] = "skipped: " + ("dry run (no GPU)" if backend.dry_run else "--no-ncu")
    else:
        ctx["ncu"], ctx["ncu_version"] = ncu_tool()
        ctx["steps"]["ncu"] = "run" if ctx["ncu"] else f"skipped: {ctx['ncu_version']}"
    print(f"device: {backend.environment.hardware.device} ({backend.name}); output: {out}", flush=True)
    outcomes = run_loop(backend, args, out, ctx)
    packets = out / "packets"
    for o in outcomes:
        for note in o.notes:
            print(f"  note {o.spec.name}: {note}")
    extra_steps(args, backend, out, packets, ctx)
    tools = {} if args.no_tools else run_tools(out)
    found = read_packets(packets)
    rows = table_rows(found, audit_levels(packets))
    table = render_table(rows)
    ok = all(r.verdict.startswith("ok") for r in rows)
    done = checklist(rows, found, tools, out)
    summary = {
        "mode": "dry-run" if backend.dry_run else "gpu",
        "device": device_summary(backend),
        "versions": tool_versions(backend, ctx),
        "baselines": {k: {"provider": op.provider, "version": op.version, "call": op.call, "note": op.baseline_note} for k, op in backend.operators.items()},
        "cache_flush": repr(backend.flush),
        "steps": ctx["steps"],
        "ncu_files": ctx.get("ncu_files", []),
        "tools": tools,
        "rows": [dataclasses.asdict(r) for r in rows],
        "all_verdicts_ok": ok,
        "checklist": done,
        "seconds": round(time.monotonic() - started, 1),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    (out / "table.txt").write_text(table + "\n")
    print(f"\n{len(rows)} packets in {summary['seconds']} s; steps: " + "; ".join(f"{k}: {v}" for k, v in ctx["steps"].items()))
    print("tools: " + ", ".join(f"{k} exit {v.get('exit')}" for k, v in tools.items()) if tools else "tools: skipped")
    print("checklist: " + "; ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in done.items()))
    print()
    print(table)
    return 0 if ok else 1


def checklist(rows: Sequence[Row], packets: Sequence[Any], tools: dict[str, Any], out: Path) -> dict[str, bool]:
    """What issue 19's "done when" asks of a run, each as found in its outputs."""
    by_role: dict[str, list[Row]] = {}
    for r in rows:
        by_role.setdefault(r.role, []).append(r)
    honest = [r for role, rs in by_role.items() if role.startswith("honest") for r in rs]
    profiled = {s.name for s in CANDIDATES if s.profile}
    sides = {
        cap.of.side
        for p in packets
        if p.subject.name in profiled
        for cap in p.profiler or []
        if cap.tool == "ncu" and cap.of is not None
    }
    return {
        "every honest packet valid": bool(honest) and all(r.verdict.startswith("ok") for r in honest),
        "every planted cheat caught": bool(by_role.get("cheat")) and all(r.verdict.startswith("ok: caught") for r in by_role["cheat"]),
        "ncu captures of candidate and baseline in the winner's packet": {"candidate", "baseline"} <= sides,
        "XProf capture ingested": any(cap.tool == "xprof" for p in packets for cap in p.profiler or []),
        "report produced": tools.get("report", {}).get("exit") == 0 and (out / "report.html").is_file(),
    }


def extra_steps(args: argparse.Namespace, backend: Backend, out: Path, packets: Path, ctx: dict[str, Any]) -> None:
    """The .ncu-rep and JAX profiles, ingested as packets of their own."""
    steps = ctx["steps"]
    for f in ctx.get("ncu_files", []):
        replay = [sys.executable, str(HERE / "run.py"), "--profile-target", f["candidate"], "--profile-side", f["side"]]
        written, err = ingest_ncu_rep(Path(f["rep"]), packets, replay, backend.environment.repository)
        steps[f"ncu-rep {f['side']}"] = err or f"ingested ({len(written)} packet)"
    if args.no_jax or time.monotonic() > ctx["deadline"]:
        steps["jax"] = "skipped: " + ("--no-jax" if args.no_jax else "past the deadline")
        return
    if importlib.util.find_spec("jax") is None:
        steps["jax"] = "skipped: jax is not installed"
        return
    written, err = profile_jax(out, packets, backend.environment.repository)
    steps["jax"] = err or f"profiled and ingested ({len(written)} packet)" + (" on the CPU" if backend.dry_run else "")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.profile_target is not None:
        import gpu_kernels

        gpu_kernels.profile_target(args.profile_target, args.profile_side, args.seed)
        return 0
    if args.jax_profile is not None:
        jax_target(args.jax_profile)
        return 0
    try:
        return run(args)
    except UsageError as exc:
        print(f"run.py: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
