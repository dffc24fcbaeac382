"""examples/gpu/run.py on a CPU: argument parsing, the output folder, packet assembly, the
ingestion of ncu and XProf files, the verdicts and the table, and the whole pipeline end to end
with numpy stand-ins (``--dry-run``). What needs torch with CUDA, ncu or JAX is skipped here,
saying why; the GPU path itself is checked only by a run on a device (see examples/gpu/README.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence.harness import Recorder
from kernel_evidence.harness.timer import SESSION, Measurement
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate

np = pytest.importorskip("numpy")  # the stand-ins are numpy code

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gpu"
FIXTURES = ROOT / "tests" / "fixtures"
sys.path.insert(0, str(EXAMPLE))


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"gpu_example_{name}", EXAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


run = _load("run")
specs = sys.modules["gpu_specs"]  # the module run.py imported


# ----------------------------------------------------------------------------- arguments, output folder


def test_parse_args() -> None:
    args = run.parse_args(["--out", "x", "--dry-run", "--only", "softmax_triton", "gemm_triton"])
    assert args.out == Path("x") and args.dry_run and not args.force
    assert args.only == ["softmax_triton", "gemm_triton"] and args.budget is None and args.seed == 1234


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "--out is required"),
        (["--out", "x", "--only", "nope"], "--only: unknown candidate nope"),
        (["--out", "x", "--budget", "0"], "--budget must be > 0"),
    ],
)
def test_parse_args_refuses(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        run.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_out_folder_refused_unless_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    (out / "packets").mkdir()
    (out / "packets" / "old.json").write_text("{}")
    (out / "table.txt").write_text("old")
    with pytest.raises(run.UsageError, match="the folder is not empty"):
        run.prepare_out(out, force=False)
    assert run.main(["--out", str(out), "--dry-run"]) == 2
    run.prepare_out(out, force=True)
    # only run.py's own outputs are removed
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    (tmp_path / "file").write_text("")
    with pytest.raises(run.UsageError, match="not a folder"):
        run.prepare_out(tmp_path / "file", force=True)
    assert run.prepare_out(tmp_path / "new" / "deeper", force=False).is_dir()


# ----------------------------------------------------------------------------- the dry run, end to end


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("gpu") / "out"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "run.py"), "--out", str(out), "--dry-run", "--budget", "0.05", "--no-jax"],
        capture_output=True, text=True, timeout=240, check=False, env=env, cwd=str(out.parent),
    )  # fmt: skip
    return out, proc


def _packets(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for p in sorted((out / "packets").glob("*.json")):
        data = json.loads(p.read_bytes())
        found[data["subject"]["name"]] = data
    return found


def test_dry_run_catches_every_cheat(dry_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, proc = dry_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    packets = _packets(out)
    assert set(packets) == {s.name for s in specs.CANDIDATES}
    for spec in specs.CANDIDATES:
        p = packets[spec.name]
        got = p.get("failure", {}).get("failure_class")
        assert (p["status"], got) == (spec.expect.status, spec.expect.failure_class), spec.name
        failed = {d["check"] for d in p.get("defences", []) if d["outcome"] == "failed"}
        if spec.role == "cheat":
            assert failed & set(spec.expect.caught_by), (spec.name, failed)
            assert "speedup" not in p["timing"]  # timed, but no claim
        elif p["status"] == "passed":
            assert not failed
    # each cheat by the defence it models, not by another one that happens to fire
    patched = packets["softmax_patched_timer"]
    integrity = {d["check"]: d for d in patched["defences"]}["timer_integrity"]
    assert integrity["outcome"] == "failed" and "time.perf_counter_ns replaced" in integrity["detail"]
    notes = patched["timing"]["notes"]
    assert "timer integrity failed" in notes and "time.perf_counter_ns replaced during candidate" in notes
    memo = {d["check"]: d for d in packets["softmax_memo"]["defences"]}
    assert memo["unseen_inputs"]["outcome"] == "failed"
    deferred = {d["check"]: d for d in packets["softmax_deferred"]["defences"]}
    assert deferred["outputs_checked_after_timing"]["outcome"] == "failed"
    assert deferred["timer_integrity"]["outcome"] == "passed"


def test_dry_run_packets_are_labelled_stand_ins(dry_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, _ = dry_run
    for name, p in _packets(out).items():
        assert p["hardware"]["vendor"] == "cpu", name
        assert p["subject"]["description"].startswith("CPU stand-in (numpy)"), name
        ext = p["extensions"]["kernel-evidence:gpu-example"]
        assert ext["mode"] == "dry-run" and ext["stand_in"] is True and ext["stands_in_for"], name
        assert "CPU stand-in run" in p["replay"]["notes"]
        assert validate(EvidencePacket.model_validate(p)).ok, name
    triton = _packets(out)["softmax_triton"]
    cond, base = triton["timing"]["conditions"], triton["timing"]["baseline"]["conditions"]
    assert cond["fresh_inputs"] and base["fresh_inputs"] and triton["timing"]["baseline"]["interleaved"]
    assert cond["dims"] == base["dims"] == {"rows": 512, "cols": 512}
    flush = cond["cache"]
    if flush["mode"] == "flushed":  # the CPU's last-level cache size was found in sysfs
        assert flush["flush_bytes"]["value"] >= flush["last_level_cache"]["value"]
    assert triton["timing"]["baseline"]["provider"] == "numpy"
    gemm = _packets(out)["gemm_triton"]["timing"]["baseline"]
    assert gemm["provider"] in ("OpenBLAS", "oneMKL", "numpy") and gemm["version"]


def test_dry_run_outputs_and_table(dry_run: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out, proc = dry_run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["mode"] == "dry-run" and summary["all_verdicts_ok"] is True
    assert summary["checklist"] == {
        "every honest packet valid": True,
        "every planted cheat caught": True,
        "ncu captures of candidate and baseline in the winner's packet": False,  # no ncu on a CPU
        "XProf capture ingested": False,  # --no-jax
        "report produced": True,
    }
    assert "checklist: every honest packet valid: yes; every planted cheat caught: yes; ncu captures" in proc.stdout
    assert summary["device"]["vendor"] == "cpu"
    assert summary["steps"]["ncu"] == "skipped: dry run (no GPU)"
    assert summary["steps"]["jax"] == "skipped: --no-jax"
    tools = summary["tools"]
    assert tools["validate"]["exit"] == 0 and tools["archive"]["exit"] == 0 and tools["report"]["exit"] == 0
    assert "8 valid, 0 invalid" in (out / "validate.txt").read_text()
    assert (out / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    if "audit" in tools:
        assert tools["audit"]["exit"] == 0 and (out / "audit.md").stat().st_size > 0
    # the table is printed last, one row per packet, every verdict ok
    table = (out / "table.txt").read_text().strip()
    assert proc.stdout.rstrip().endswith(table)
    lines = table.splitlines()
    assert lines[0].split() == list(run.COLUMNS)
    assert len(lines) == 2 + len(specs.CANDIDATES)
    assert all(" ok: " in line for line in lines[2:])
    rows = {r["packet"]: r for r in summary["rows"]}
    assert rows["softmax_patched_timer"]["verdict"].startswith("ok: caught by timer_integrity")
    if "audit" in tools:  # the audit flags every planted cheat too, and no honest packet as worse than low
        for spec in specs.CANDIDATES:
            level = rows[spec.name]["audit"]
            assert level == "critical" if spec.role == "cheat" else level in ("-", "low"), (spec.name, level)
    assert rows["softmax_triton"]["grade"] == "C"  # a reference baseline (numpy) caps the grade at C
    assert rows["softmax_triton"]["speedup"].endswith("x") and rows["softmax_tail_dropped"]["speedup"] == "-"


# ----------------------------------------------------------------------------- ingestion of real-format files


def _timed_record(median_ns: float) -> tuple[Recorder, Any]:
    rec = Recorder(created_at="2026-11-27T00:00:00Z", operator="softmax", shapes=[{"id": "s3", "dims": {"rows": 8, "cols": 8}}], dtypes=["float32"])
    c = rec.candidate("softmax_triton")
    c.shape_result("s3", passed=True)
    m = Measurement(
        samples_ns=[median_ns] * 10, method="cuda_events", warmup=3, stop_rule="fixed", stop_reason="max",
        cache_policy="flushed", synchronized=True, session=SESSION,
    )  # fmt: skip
    c.timing(m, shape_id="s3")
    return rec, c


def test_attach_ncu_raw_page_checks_the_claim() -> None:
    # hand-written raw page (see tests/fixtures/ncu): two launches of `attn` of 2.05 ms each
    csv_path = FIXTURES / "ncu" / "raw_clean.csv"
    # the expected kernel is there and a call of 3 ms can hold it: the defence passes, no finding
    rec, c = _timed_record(median_ns=3e6)
    capture, _ = run.attach_ncu(c, csv_path, side="candidate", shape_id="s3", expected=["attn"])
    packet = c.finish()
    assert capture.tool == "ncu" and packet.profiler[0].of.side == "candidate"
    assert packet.profiler[0].of.expected_kernels == ["attn"] and packet.profiler[0].of.shape_id == "s3"
    defence = {d.check: d for d in packet.defences}["candidate_kernel_profiled"]
    assert defence.outcome == "passed" and packet.status.value == "passed"
    ids = {f.rule_id for f in validate(packet).findings}
    assert "KE1102" not in ids and "KE1101" not in ids
    # a claim of 1 ms per call, faster than its own 2.05 ms kernel: KE1101
    _, c = _timed_record(median_ns=1e6)
    run.attach_ncu(c, csv_path, side="candidate", shape_id="s3", expected=["attn"])
    assert "KE1101" in {f.rule_id for f in validate(c.finish()).errors}
    # a capture that shows none of the candidate's kernels: the defence fails the packet
    _, c = _timed_record(median_ns=3e6)
    run.attach_ncu(c, csv_path, side="candidate", shape_id="s3", expected=["ke_softmax_row_kernel"])
    packet = c.finish()
    assert packet.failure.failure_class.value == "reward_hack"
    assert {d.check: d.outcome for d in packet.defences}["candidate_kernel_profiled"] == "failed"


def test_checklist_finds_both_ncu_sides_in_the_winner(tmp_path: Path) -> None:
    csv_path = FIXTURES / "ncu" / "raw_clean.csv"
    _, c = _timed_record(median_ns=3e6)
    run.attach_ncu(c, csv_path, side="candidate", shape_id="s3", expected=["attn"])
    one_side = c.finish()
    _, c = _timed_record(median_ns=3e6)
    run.attach_ncu(c, csv_path, side="candidate", shape_id="s3", expected=["attn"])
    run.attach_ncu(c, csv_path, side="baseline", shape_id="s3", expected=())
    both = c.finish()
    key = "ncu captures of candidate and baseline in the winner's packet"
    assert run.checklist(run.table_rows([one_side]), [one_side], {}, tmp_path)[key] is False
    done = run.checklist(run.table_rows([both]), [both], {}, tmp_path)
    assert done[key] is True and done["report produced"] is False and done["every planted cheat caught"] is False


FAKE_NCU = """#!/usr/bin/env bash
# stands in for ncu: records its arguments; --export writes a report, --import prints a raw page
echo "$@" >> "$(dirname "$0")/calls.txt"
for ((i = 1; i <= $#; i++)); do
  if [ "${!i}" = "--export" ]; then j=$((i + 1)); echo "not a real report" > "${!j}"; fi
  if [ "${!i}" = "--import" ]; then
    j=$((i + 1)); case "${!j}" in *candidate*) cat "$(dirname "$0")/candidate.csv";; *) cat "$(dirname "$0")/baseline.csv";; esac
  fi
done
"""


def test_profile_with_ncu_plumbing(tmp_path: Path) -> None:
    """The ncu step with a stand-in ncu: both sides profiled with --clock-control none, their raw
    pages ingested and attached to the winner's packet, what each side is of recorded; the fake
    binary report is refused by the .ncu-rep reader and that is a note, not a failure."""
    raw = (FIXTURES / "ncu" / "raw_clean.csv").read_text()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "candidate.csv").write_text(raw.replace("void attn<64, true>(Params, float, int)", "ke_softmax_row_kernel"))
    (bin_dir / "baseline.csv").write_text(raw.replace("void attn<64, true>(Params, float, int)", "cunn_SoftMaxForward"))
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU)
    ncu.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    spec = specs.spec_by_name("softmax_triton")
    op = run.cpu_backend().operators["softmax"]
    args = run.parse_args(["--out", str(out)])
    ctx: dict[str, Any] = {"ncu": str(ncu), "out": out, "deadline": float("inf")}
    _, c = _timed_record(median_ns=3e6)
    notes = run.profile_with_ncu(c, spec, op, args, ctx)
    packet = c.finish()
    assert [cap.of.side for cap in packet.profiler] == ["candidate", "baseline"]
    assert packet.profiler[0].of.expected_kernels == ["ke_softmax_row_kernel"] and packet.profiler[1].of.expected_kernels is None
    assert {d.check: d.outcome for d in packet.defences}["candidate_kernel_profiled"] == "passed"
    calls = (bin_dir / "calls.txt").read_text().splitlines()
    assert len(calls) == 4 and all("--clock-control none" in line for line in calls[0::2])
    assert "--profile-side candidate" in calls[0] and "--profile-side baseline" in calls[2]
    assert [f["side"] for f in ctx["ncu_files"]] == ["candidate", "baseline"]
    assert (out / "ncu" / "softmax_triton.candidate.raw.csv").read_text().count("ke_softmax_row_kernel") == 2
    assert all("not ingested" not in n for n in notes)
    written, err = run.ingest_ncu_rep(Path(ctx["ncu_files"][0]["rep"]), tmp_path, ["ncu"])
    assert written == [] and err  # a .ncu-rep that is not one: said, not raised


def test_attach_ncu_refuses_a_non_capture(tmp_path: Path) -> None:
    _, c = _timed_record(median_ns=10_000.0)
    with pytest.raises(Exception, match="not|no"):
        run.attach_ncu(c, FIXTURES / "ncu" / "not_ncu.txt", side="baseline", shape_id="s3", expected=())


def test_ingest_xplane(tmp_path: Path) -> None:
    pytest.importorskip("google.protobuf", reason="reading .xplane.pb needs protobuf (the xprof extra)")
    from kernel_evidence.models import Repository

    repo = Repository(commit="3f9c2a7e5b1d4c8a9e0f6b2d7c1a5e3f9b8d4c2a", dirty=False)
    written = run.write_ingested(
        "xprof", [FIXTURES / "xprof" / "synthetic_amd_gpu.xplane.pb"], tmp_path, ["python", "x.py"], name="jax op",
        repository=repo,
    )  # fmt: skip
    assert len(written) == 1
    packet = EvidencePacket.model_validate_json(Path(written[0]).read_bytes())
    assert packet.subject.name == "jax op" and packet.profiler[0].tool == "xprof"
    assert packet.replay.repository.commit == repo.commit and packet.replay.command == ["python", "x.py"]
    assert Path(written[0]).name == packet.packet_id.split(":")[1][:32] + ".json"
    assert validate(packet).ok


def test_find_xplane(tmp_path: Path) -> None:
    assert run.find_xplane(tmp_path) is None
    run_dir = tmp_path / "plugins" / "profile" / "2026_11_27_00_00_00"
    run_dir.mkdir(parents=True)
    (run_dir / "host.xplane.pb").write_bytes(b"")
    assert run.find_xplane(tmp_path) == run_dir


def test_ncu_commands_never_touch_the_clocks(tmp_path: Path) -> None:
    argv = run.ncu_argv("ncu", tmp_path / "a.ncu-rep", "softmax_triton", "candidate", 7)
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert "--profile-from-start" in argv and argv[argv.index("--profile-target") + 1] == "softmax_triton"
    assert run.ncu_raw_csv_argv("ncu", tmp_path / "a.ncu-rep")[1:] == ["--import", str(tmp_path / "a.ncu-rep"), "--csv", "--page", "raw"]


# ----------------------------------------------------------------------------- a clock patched after timing


def test_a_torch_clock_left_patched_fails_its_candidate_not_the_next(tmp_path: Path) -> None:
    """The recorder puts back only the ``time`` functions when a block ends; run.py's guard
    also watches torch.cuda's event clock (a stand-in class here), so a patch made after the
    measurement (while re-running on unseen inputs) fails the candidate that made it, is put
    back, and is not blamed on the next candidate."""
    from types import SimpleNamespace

    from kernel_evidence.harness import timer as timer_module
    from kernel_evidence.harness._integrity import ClockGuard

    class Event:
        def record(self) -> None: ...

        def synchronize(self) -> None: ...

        def elapsed_time(self, end: Any) -> float:
            return 1.0

    original = Event.__dict__["elapsed_time"]
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None, Event=Event))
    backend = run.cpu_backend()
    backend.clock_guard = ClockGuard(module=timer_module, torch=fake_torch)
    honest = backend.build

    def build(spec: Any, ops: Any, published: Any) -> Any:
        built = honest(specs.spec_by_name("softmax_triton"), ops, published)
        if spec.name != "softmax_patched_timer":
            return built
        inner = built.fn

        def patches(x: Any) -> Any:
            Event.elapsed_time = lambda self, end: 0.1  # type: ignore[method-assign]
            return inner(x)

        return run.Built(patches, built.source, built.compiler, built.language, "a torch clock patch")

    backend.build = build
    args = run.parse_args(["--out", str(tmp_path), "--budget", "0.02"])
    timer = run.make_timer(backend, 0.02)
    rec = Recorder(created_at="2026-11-27T00:00:00Z", environment=backend.environment)
    cheat = run.evaluate(rec, specs.spec_by_name("softmax_patched_timer"), backend, timer, args, {})
    after = run.evaluate(rec, specs.spec_by_name("softmax_triton"), backend, timer, args, {})
    integrity = {d.check: d for d in cheat.record.packet.defences}["timer_integrity"]
    assert integrity.outcome == "failed" and "torch.cuda.Event.elapsed_time replaced when" in integrity.detail
    assert cheat.record.packet.failure.failure_class.value == "reward_hack"
    assert Event.__dict__["elapsed_time"] is original  # put back
    assert after.record.packet.status.value == "passed"


# ----------------------------------------------------------------------------- verdicts and the table


def _packet(name: str, build: Any) -> tuple[EvidencePacket, Any]:
    rec = Recorder(created_at="2026-11-27T00:00:00Z", operator="softmax")
    with rec.candidate(name) as c:
        build(c)
    return c.packet, validate(c.packet)


def test_judge_names_what_went_wrong() -> None:
    cheat = specs.spec_by_name("softmax_memo")
    # a cheat that passed: missed
    p, r = _packet("softmax_memo", lambda c: c.shape_result("s1", passed=True))
    assert run.judge(p, cheat, r).startswith("MISSED: cheat ended passed")
    # caught by a defence it is not expected to trip: still missed (the expectation names them)
    p, r = _packet("softmax_memo", lambda c: c.defence("hidden_workload", "failed", detail="x"))
    assert run.judge(p, cheat, r).startswith("MISSED")
    p, r = _packet("softmax_memo", lambda c: c.defence("unseen_inputs", "failed", detail="x"))
    assert run.judge(p, cheat, r) == "ok: caught by unseen_inputs"
    wrong = specs.spec_by_name("softmax_tail_dropped")
    p, r = _packet("softmax_tail_dropped", lambda c: c.shape_result("s1", passed=False))
    assert run.judge(p, wrong, r) == "ok: failed/incorrect_numerical as expected"
    p, r = _packet("softmax_tail_dropped", lambda c: c.shape_result("s1", passed=True))
    assert run.judge(p, wrong, r) == "MISMATCH: expected failed/incorrect_numerical, got passed"
    honest = specs.spec_by_name("softmax_triton")
    p, r = _packet("softmax_triton", lambda c: c.shape_result("s1", passed=True))
    assert run.judge(p, honest, r) == "ok: honest, passed, valid"
    # the one meant to win, slower than its baseline: still ok, and said
    from kernel_evidence.models import Speedup

    slower = p.model_copy(update={"timing": _timed_record(1e6)[1].finish().timing.model_copy(update={"speedup": Speedup(value=0.5, basis="median")})})
    assert run.judge(slower, honest, r) == "ok: honest, passed, valid (meant to win, lost: 0.5x)"
    assert run.judge(slower, specs.spec_by_name("softmax_unfused"), r) == "ok: honest, passed, valid"


def test_render_table() -> None:
    rows = [
        run.Row("a", "honest", "passed", "C", "none", "1 us", "2x", "-", "-", "ok: honest"),
        run.Row("longer_name", "cheat", "failed/reward_hack", "D", "KE604", "-", "-", "-", "critical", "MISSED: x"),
    ]
    lines = run.render_table(rows).splitlines()
    assert lines[0].split() == list(run.COLUMNS)
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[3].startswith("longer_name  cheat ") and lines[3].endswith("MISSED: x")
    assert lines[2].index("honest") == lines[3].index("cheat")


def test_specs_are_consistent() -> None:
    roles = [s.role for s in specs.CANDIDATES]
    assert roles.count("cheat") == 3 and {"honest-win", "honest-lose", "wrong", "compile-fail"} <= set(roles)
    for s in specs.CANDIDATES:
        assert s.operator in specs.OPERATORS
        assert (s.role == "cheat") == bool(s.expect.caught_by) == bool(s.incident)
    for op in specs.OPERATORS.values():
        assert op.timed in {s.id for s in op.gpu_shapes} and op.timed in {s.id for s in op.cpu_shapes}
    seeds = specs.validation_seeds(specs.OPERATORS["softmax"].cpu_shapes, 10)
    assert seeds == {"s1": (10, 11), "s2": (110, 111), "s3": (210, 211)}


# ----------------------------------------------------------------------------- the device runbook


def test_device_check_script_parses() -> None:
    script = EXAMPLE / "device_check.sh"
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    text = script.read_text()
    assert "--no-index" in text and "run.py" in text and "$OUT" in text
    for forbidden in ("nvidia-smi -lgc", "nvidia-smi -pm", "nvidia-smi -pl", "--gpu-reset", "nvidia-smi -r "):
        assert forbidden not in text


# ----------------------------------------------------------------------------- what needs a device


def _need_cuda() -> None:
    """Skip unless torch sees a CUDA device (torch is imported only here, by a test that needs it)."""
    torch = pytest.importorskip("torch", reason="needs torch with a CUDA device (and Triton): the GPU run itself")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device: torch sees none")


INTERPRETED = """
import sys
import torch
sys.path.insert(0, sys.argv[1])
import gpu_kernels as gk

torch.manual_seed(0)
for rows, cols in ((5, 1000), (3, 64), (2, 4096)):
    x = torch.randn(rows, cols) * 4
    ref = torch.softmax(x.double(), -1).float()
    y = gk.launch_softmax(gk.ke_softmax_row_kernel, x, torch.empty_like(x))
    assert float((y - ref).abs().max()) < 1e-6, (rows, cols)
    t = gk.launch_softmax(gk.ke_softmax_tail_kernel, x, torch.zeros_like(x))
    assert float(t[:, -1].abs().max()) == 0.0  # the last column is never written
    assert torch.allclose(t[:, :-1], torch.softmax(x[:, :-1], -1), atol=1e-6)
try:
    gk.launch_softmax(gk.ke_softmax_bad_arange_kernel, x, torch.empty_like(x))
except Exception as exc:  # compiled: CompilationError; interpreted: InterpreterError
    assert "power of 2" in str(exc), exc
else:
    raise AssertionError("the BLOCK + 1 kernel ran")
# the interpreter's tl.dot is wrong on bfloat16 operands (Triton 3.8): the GEMM kernel's
# indexing, masks and tile order are checked with float16 inputs
for m, n, k in ((100, 70, 90), (130, 257, 200)):
    a = torch.randn(m, k).half()
    b = torch.randn(k, n).half()
    c = torch.empty((m, n), dtype=torch.bfloat16)
    tiles = (-(-m // 128)) * (-(-n // 128))
    gk.ke_gemm_kernel[(tiles,)](
        a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BM=128, BN=128, BK=64, GROUP_M=8,
    )
    ref = (a.float() @ b.float()).to(torch.bfloat16).float()
    assert bool(((c.float() - ref).abs() <= 1e-2 + 1e-2 * ref.abs()).all()), (m, n, k)
print("interpreted kernels ok")
"""


#: the recorder loop over the GPU candidates' own code (gpu_kernels.build), on CPU tensors with
#: the Triton kernels interpreted: everything but the CUDA-only parts (streams, events, ncu)
TORCH_CPU_LOOP = """
import sys
sys.path.insert(0, sys.argv[1])
import torch
import gpu_kernels as gk
import run
from gpu_specs import OPERATORS, Operator, ShapeSpec, spec_by_name
from kernel_evidence.harness import Recorder, StopRule, Timer, capture_environment
from kernel_evidence.harness import timer as timer_module
from kernel_evidence.harness._integrity import ClockGuard

shapes = (ShapeSpec("s1", {"rows": 8, "cols": 100}), ShapeSpec("s2", {"rows": 4, "cols": 1024}), ShapeSpec("s3", {"rows": 16, "cols": 512}))
spec = OPERATORS["softmax"]

def inputs(shape_id, seed):
    d = next(s for s in shapes if s.id == shape_id).dims
    g = torch.Generator(); g.manual_seed(seed)
    return (torch.randn((d["rows"], d["cols"]), generator=g) * 4.0,)

op = Operator(spec=spec, dtype="float32", shapes=shapes, atol=1e-6, rtol=1e-4, inputs=inputs,
              reference=lambda x: torch.softmax(x.double(), dim=-1).to(x.dtype), baseline=lambda x: torch.softmax(x, dim=-1),
              provider="torch eager", version=torch.__version__, call="torch.softmax(x, dim=-1)",
              reference_name="torch.softmax in float64", reference_kind="torch_eager", reference_version=torch.__version__)
env = capture_environment()
backend = run.Backend("torch-cpu-interpreted", {"softmax": op}, gk.build, lambda: None, None, env, True, None,
                      ClockGuard(module=timer_module, torch=torch))
args = run.parse_args(["--out", "/tmp/x", "--budget", "0.05"])
timer = Timer(warmup=1, stop=StopRule(min_repeats=6, max_repeats=8, target_rel_ci=None, time_budget_s=0.05))
rec = Recorder(created_at="2026-11-27T00:00:00Z", environment=env)
out = {}
for name in ("softmax_triton", "softmax_unfused", "softmax_tail_dropped", "softmax_memo", "softmax_patched_timer", "softmax_triton"):
    o = run.evaluate(rec, spec_by_name(name), backend, timer, args, {})
    p = o.record.packet
    failed = sorted(d.check for d in p.defences or [] if d.outcome == "failed")
    out.setdefault(name, []).append((p.status.value, p.failure.failure_class.value if p.failure else None, failed))
    print(name, out[name][-1], (p.failure.message[:150] if p.failure else ""))
assert out["softmax_triton"] == [("passed", None, [])] * 2, out
assert out["softmax_unfused"] == [("passed", None, [])]
assert out["softmax_tail_dropped"][0][:2] == ("failed", "incorrect_numerical")
assert out["softmax_memo"][0][1] == "reward_hack" and "unseen_inputs" in out["softmax_memo"][0][2]
assert out["softmax_patched_timer"][0][1] == "reward_hack" and out["softmax_patched_timer"][0][2] == ["timer_integrity"]
print("torch-cpu loop ok")
"""

_NO_TRITON = importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None


@pytest.mark.skipif(_NO_TRITON, reason="needs torch and triton (runs the Triton kernels on the CPU in Triton's interpreter)")
def test_gpu_candidates_in_the_recorder_loop_on_the_cpu() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, "-c", TORCH_CPU_LOOP, str(EXAMPLE)], capture_output=True, text=True, timeout=300, check=False, env=env
    )
    assert proc.returncode == 0 and "torch-cpu loop ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]


@pytest.mark.skipif(_NO_TRITON, reason="needs torch and triton (runs the Triton kernels on the CPU in Triton's interpreter)")
def test_triton_kernels_interpreted_on_the_cpu() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, "-c", INTERPRETED, str(EXAMPLE)], capture_output=True, text=True, timeout=300, check=False, env=env
    )
    assert proc.returncode == 0 and "interpreted kernels ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]


def test_gpu_run(tmp_path: Path) -> None:
    _need_cuda()
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "run.py"), "--out", str(out), "--no-jax", "--no-ncu", "--budget", "0.5"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["device"]["vendor"] == "nvidia"


@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute (ncu) and a CUDA device")
def test_ncu_profile_of_the_winner(tmp_path: Path) -> None:
    _need_cuda()
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "run.py"), "--out", str(out), "--no-jax", "--only", "softmax_triton", "--budget", "0.5"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sides = {f["side"] for f in json.loads((out / "summary.json").read_text())["ncu_files"]}
    assert sides == {"candidate", "baseline"}


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (runs on the CPU too)")
def test_jax_profile(tmp_path: Path) -> None:
    pytest.importorskip("google.protobuf", reason="reading .xplane.pb needs protobuf")
    from kernel_evidence.harness.environment import git_repository

    repo = git_repository(str(ROOT))
    written, err = run.profile_jax(tmp_path, tmp_path, repo)
    assert err is None and len(written) == 1
    packet = EvidencePacket.model_validate_json(Path(written[0]).read_bytes())
    assert packet.subject.name == "jax scaled_tanh_matmul (jax.profiler)" and packet.profiler[0].tool == "xprof"
    assert packet.profiler[0].kernels  # the jitted op's HLO ops
    assert packet.replay.command[-2:] == ["--jax-profile", str(tmp_path / "jax")]
    if repo is not None:
        assert packet.replay.repository.commit == repo.commit
    assert validate(packet).ok
