"""`kevidence ingest` / `kevidence metrics` and the library function behind them (tested with ncu)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import zstandard

from kernel_evidence._ingest import (
    OptionError,
    ingest,
    metric_table,
    parse_baseline,
    parse_opt,
    parse_opts,
    parse_set,
    render_metric_table,
)
from kernel_evidence.cli import main
from kernel_evidence.io import read_packets
from kernel_evidence.models import EvidencePacket
from kernel_evidence.rules import validate

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"
ROOT = Path(__file__).resolve().parents[2]
T0 = "2026-11-22T00:00:00Z"
RAW = FIX / "raw_clean.csv"
DETAILS = FIX / "details_rules_ragged_two_processes.csv"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------ library


def test_options_parsing() -> None:
    assert parse_set("timing.warmup=10") == (("timing", "warmup"), 10)
    assert parse_set("replay.env.CUDA_VISIBLE_DEVICES=0") == (("replay", "env", "CUDA_VISIBLE_DEVICES"), 0)
    assert parse_set('profiler.0.version="2025.1"') == (("profiler", "0", "version"), "2025.1")
    assert parse_set("subject.name=gemm = fast") == (("subject", "name"), "gemm = fast")
    assert parse_set(r"extensions.org\.example:x={}") == (("extensions", "org.example:x"), {})
    assert parse_baseline("cuBLASLt:12.4.5:cublasLtMatmul(a, b)") == {
        "provider": "cuBLASLt", "version": "12.4.5", "call": "cublasLtMatmul(a, b)"
    }  # fmt: skip
    assert parse_baseline("torch eager::torch.matmul") == {"provider": "torch eager", "call": "torch.matmul"}
    with pytest.raises(
        OptionError, match=r"^--set expects key=value \(a dotted path into the packet\), got `status`$"
    ):
        parse_set("status")
    with pytest.raises(OptionError, match=r"^--baseline expects PROVIDER:VERSION:CALL"):
        parse_baseline("cuBLAS")


def test_opt_parsing() -> None:
    assert parse_opt("tensor_parallel_size=4") == ("tensor_parallel_size", 4)
    assert parse_opt("device=NVIDIA H100 80GB HBM3") == ("device", "NVIDIA H100 80GB HBM3")
    assert parse_opt("engine_version=0.6.3.post1") == ("engine_version", "0.6.3.post1")  # not JSON: text
    assert parse_opt('engine_version="1.0"') == ("engine_version", "1.0")  # quoted: JSON text
    assert parse_opt("use_numpy=false") == ("use_numpy", False)
    assert parse_opt("samples_dir=") == ("samples_dir", "")
    assert parse_opts(["a=1", "b=x=y"]) == {"a": 1, "b": "x=y"}
    with pytest.raises(OptionError, match=r"^--opt expects KEY=VALUE \(an adapter option\), got `device`$"):
        parse_opt("device")
    with pytest.raises(OptionError, match=r"^--opt `a` is given twice; give each adapter option once$"):
        parse_opts(["a=1", "a=2"])


def test_ingest_fills_options_and_validates(corpus: Path) -> None:
    """Done criterion: an ingested ncu report plus --replay-cmd and --baseline validates."""
    result = ingest(
        "ncu",
        [str(corpus / "ncu" / "raw_b200_cc100_flashattn_prof_prefix.csv")],
        replay_cmd="python decodebench/profile_ncu.py --case 'torch sdpa' --ctx 4096",
        baseline="FlashAttention:2.6.3:flash_attn_func(q, k, v, causal=False)",
        created_at=T0,
    )
    (p,) = result.packets
    assert p.replay is not None and p.replay.command == [
        "python", "decodebench/profile_ncu.py", "--case", "torch sdpa", "--ctx", "4096"
    ]  # fmt: skip
    assert p.timing is not None and p.timing.baseline is not None
    assert (p.timing.baseline.provider, p.timing.baseline.version) == ("FlashAttention", "2.6.3")
    assert p.created_at == T0 and p.packet_id == p.compute_id()
    report = validate(p)
    assert report.ok, [f.line() for f in report.findings]


def test_ingest_without_replay_lacks_it() -> None:
    from kernel_evidence._ingest import missing_for_validation

    result = ingest("ncu", [str(RAW)], created_at=T0)
    lines = missing_for_validation(result.packets)
    assert any(line.startswith("KE101 at /replay:") for line in lines)


@pytest.mark.parametrize("edits", [False, True])
def test_ingest_json_gives_the_ids_and_bytes_of_ingest(edits: bool) -> None:
    """What `kevidence ingest` writes (one encoding per packet) is what the library gives."""
    from kernel_evidence._ingest import ingest_json

    kw = {"replay_cmd": "python bench.py", "sets": ["task.operator=gemm"]} if edits else {}
    ref = ingest("ncu", [str(DETAILS)], created_at=T0, **kw)
    got, encoded = ingest_json("ncu", [str(DETAILS)], created_at=T0, **kw)
    assert len(ref.packets) == len(got.packets) == len(encoded) >= 1
    assert [p.packet_id for p in got.packets] == [p.packet_id for p in ref.packets]
    assert encoded == [p.to_json() for p in ref.packets]
    assert all(p.packet_id == p.compute_id() for p in got.packets)
    assert got.warnings == ref.warnings


def test_sets_apply_last_and_are_checked() -> None:
    result = ingest(
        "ncu",
        [str(DETAILS)],
        created_at=T0,
        replay_cmd=["./bench", "--n", "3"],
        sets=[
            "hardware.vendor=nvidia",
            "hardware.device=NVIDIA B200",
            "timing.warmup=5",
            'profiler.0.version="2025.2.1"',
            "subject.name=gemm",
        ],
    )
    (p,) = result.packets
    assert p.hardware is not None and p.hardware.device == "NVIDIA B200"
    assert p.timing is not None and p.timing.warmup == 5
    assert p.profiler is not None and p.profiler[0].version == "2025.2.1"
    assert p.subject.name == "gemm"
    assert validate(p).ok
    with pytest.raises(
        OptionError, match=r"^--set: the packet is not valid after the options were applied: /status: "
    ):
        ingest("ncu", [str(RAW)], created_at=T0, sets=["status=great"])
    with pytest.raises(OptionError, match=r"index 3 is out of range \(the list has 1 items\)"):
        ingest("ncu", [str(RAW)], created_at=T0, sets=["profiler.3.version=x"])
    with pytest.raises(OptionError, match=r"^--created-at expects an RFC 3339 UTC time"):
        ingest("ncu", [str(RAW)], created_at="yesterday")


def test_into_keeps_base_fields_and_appends_capture(tmp_path: Path) -> None:
    base = {
        "schema_version": "0.2",
        "created_at": "2026-01-01T00:00:00Z",
        "producer": {"name": "my-harness", "version": "3.1"},
        "subject": {"kind": "kernel", "name": "flash_attn_candidate_7"},
        "status": "passed",
        "hardware": {"vendor": "nvidia", "device": "NVIDIA H100 SXM5 80GB"},
        "replay": {"command": ["python", "run.py"]},
        "profiler": [{"tool": "torch_profiler"}],
    }
    path = tmp_path / "base.json"
    path.write_bytes(msgspec.json.encode(base))
    (p,) = ingest("ncu", [str(RAW)], into=str(path)).packets
    assert p.subject.name == "flash_attn_candidate_7"
    assert p.producer.name == "my-harness" and p.created_at == "2026-01-01T00:00:00Z"
    assert p.hardware is not None and p.hardware.device == "NVIDIA H100 SXM5 80GB"
    assert p.hardware.arch == "sm_90" and p.hardware.compute_units == 132  # filled by the adapter
    assert p.profiler is not None and [c.tool for c in p.profiler] == ["torch_profiler", "ncu"]
    assert p.replay is not None and p.replay.command == ["python", "run.py"]


# ---------------------------------------------------------------------------------- CLI


def test_cli_stdout_one_packet_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "ingest", "ncu", str(RAW), "--created-at", T0)
    assert code == 0
    data = json.loads(out)
    assert EvidencePacket.model_validate(data).profiler[0].kernels[2].name == "elementwise_add"  # type: ignore[index]
    assert "kevidence: to pass `kevidence validate`, the packet still needs:\n  KE101 at /replay:" in err


def test_cli_several_packets_jsonl_zst(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_path = tmp_path / "packets.jsonl.zst"
    code, out, err = run(
        capsys, "ingest", "ncu", str(RAW), str(DETAILS), "-o", str(out_path), "--created-at", T0,
        "--replay-cmd", "make bench", "--baseline", "cuBLASLt:12.4.5:cublasLtMatmul",
    )  # fmt: skip
    assert code == 0 and out == ""
    assert f"kevidence: wrote 2 packet(s) to {out_path}" in err
    # the details page names no device (its compute capability gives the arch): device `unknown`
    assert "KE801 at /hardware/device (1 of 2 packets):" in err
    lines = (
        zstandard.ZstdDecompressor().decompress(out_path.read_bytes(), max_output_size=1 << 26).splitlines()
    )
    assert len(lines) == 2
    packets = list(read_packets([out_path]))
    assert [p.replay.command for p in packets] == [["make", "bench"]] * 2  # type: ignore[union-attr]


def test_cli_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "p.json"
    target.write_text("keep me")
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), "-o", str(target))
    assert code == 1
    assert err == f"kevidence: error: {target}: already exists; refusing to overwrite it (use --force)\n"
    assert target.read_text() == "keep me"
    code, _, _ = run(capsys, "ingest", "ncu", str(RAW), "-o", str(target), "--force", "--created-at", T0)
    assert code == 0 and json.loads(target.read_text())["created_at"] == T0


def test_cli_never_writes_over_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "raw.csv"
    src.write_bytes(RAW.read_bytes())
    link = tmp_path / "link.csv"
    link.symlink_to(src.name)
    for out in (src, link):
        code, _, err = run(capsys, "ingest", "ncu", str(src), "-o", str(out), "--force")
        assert code == 2 and "is one of the inputs" in err
    assert src.read_bytes() == RAW.read_bytes()


def test_cli_json_name_for_several_packets_is_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "p.json"
    code, _, err = run(capsys, "ingest", "ncu", str(RAW), str(DETAILS), "-o", str(target))
    assert code == 2
    assert (
        err
        == f"kevidence: error: {target}: 2 packets need a .jsonl (or .jsonl.zst) output name; a .json file holds one\n"
    )
    assert not target.exists()


def test_cli_bad_input_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIX / "prof_only_warning.log"
    code, out, err = run(capsys, "ingest", "ncu", str(path))
    assert code == 1 and out == ""
    assert err == (
        f"kevidence: error: {path}:line 2: no Nsight Compute table found (expected a CSV header "
        'starting "ID","Process ID", a text page or a summary); last profiler error: '
        "==WARNING== No kernels were profiled.\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ingest", "nope", "x.csv"], "kevidence: error: no adapter named `nope`; available: "),
        (["ingest", "ncu", str(RAW), "--set", "status"], "kevidence: error: --set expects key=value"),
        (
            ["ingest", "ncu", str(RAW), "--replay-cmd", "python 'unclosed"],
            "kevidence: error: --replay-cmd could not be split into arguments (No closing quotation)",
        ),
        (
            ["ingest", "ncu", str(RAW), "--baseline", "cuBLAS"],
            "kevidence: error: --baseline expects PROVIDER:VERSION:CALL",
        ),
        (
            ["ingest", "ncu", str(RAW), "--opt", "device"],
            "kevidence: error: --opt expects KEY=VALUE (an adapter option), got `device`",
        ),
        (
            ["ingest", "ncu", str(RAW), "--opt", "device=H100"],
            "kevidence: error: --opt `device` is not an option of the ncu adapter; it takes: `max_bytes`",
        ),
        (
            ["ingest", "vllm", str(RAW), "--opt", "devcie=A100"],
            "kevidence: error: --opt `devcie` is not an option of the vllm adapter; it takes: `count`, `dataset`",
        ),
        (
            ["metrics", "--format", "yaml"],
            "kevidence: error: --format must be text, markdown or json, got `yaml`",
        ),
    ],
)
def test_cli_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith(message) and err.count("\n") == 1


def test_cli_validate_accepts_ingested_packet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], corpus: Path
) -> None:
    target = tmp_path / "b200.json"
    code, _, err = run(
        capsys, "ingest", "ncu", str(corpus / "ncu" / "raw_b200_cc100_flashattn_prof_prefix.csv"), "-o", str(target),
        "--replay-cmd", "python profile_ncu.py", "--baseline", "FlashAttention:2.6.3:flash_attn_func", "--created-at", T0,
    )  # fmt: skip
    assert code == 0 and "still need" not in err
    code, out, _ = run(capsys, "validate", str(target))
    assert code == 0, out


def test_cli_opt_feeds_the_vllm_adapter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], corpus: Path
) -> None:
    """A vLLM sweep run file names neither the GPU nor the engine: --opt supplies them."""
    run_file = corpus / "vllm" / "sweep-serve_opt-125m_conc2_maxseqs4_vllm0.25.1_run0.json"
    code, _, err = run(
        capsys, "ingest", "vllm", str(run_file), "--created-at", T0, "-o", str(tmp_path / "bare.json")
    )
    assert code == 0 and "KE801 at /hardware" in err and "KE101 at /replay" in err
    target = tmp_path / "opts.json"
    code, _, err = run(
        capsys, "ingest", "vllm", str(run_file), "-o", str(target), "--created-at", T0,
        "--opt", "device=NVIDIA L4", "--opt", "vendor=nvidia", "--opt", "gpu_count=1",
        "--opt", "engine=vllm", "--opt", "engine_version=0.25.1", "--opt", "tensor_parallel_size=1",
        "--replay-cmd", "vllm bench sweep serve --model facebook/opt-125m --max-num-seqs 4",
    )  # fmt: skip
    assert code == 0 and "still need" not in err and "not recorded in the file" not in err, err
    packet = EvidencePacket.model_validate_json(target.read_bytes())
    assert packet.hardware is not None
    assert (packet.hardware.vendor, packet.hardware.device, packet.hardware.count) == (
        "nvidia",
        "NVIDIA L4",
        1,
    )
    serving = packet.task.serving  # type: ignore[union-attr]
    assert serving is not None and serving.tensor_parallel_size == 1
    assert serving.engine is not None and (serving.engine.name, serving.engine.version) == ("vllm", "0.25.1")
    assert packet.replay is not None and packet.replay.command[:4] == ["vllm", "bench", "sweep", "serve"]
    assert packet.packet_id == packet.compute_id()
    code, out, _ = run(capsys, "validate", str(target))
    assert code == 0, out


# ------------------------------------------------------------------------------ metrics


def test_metric_table_joins_tools(capsys: pytest.CaptureFixture[str]) -> None:
    table = metric_table()
    tools = [t["tool"] for t in table["tools"]]
    assert "ncu" in tools
    duration = next(m for m in table["metrics"] if m["name"] == "duration")
    assert duration["unit"] == "ns"
    assert duration["tools"]["ncu"]["equivalence"] == "exact"
    assert duration["tools"]["ncu"]["sources"][0]["text"] == "gpu__time_duration.sum"
    code, out, _ = run(capsys, "metrics")
    assert code == 0 and "  ncu" in out and "gpu__time_duration.sum | gpu__time_duration | Duration" in out
    code, out, _ = run(capsys, "metrics", "--format", "json")
    assert code == 0 and json.loads(out) == json.loads(json.dumps(table))
    code, out, _ = run(capsys, "metrics", "--format", "markdown")
    assert code == 0 and out.startswith("| canonical metric | unit |")


def test_docs_table_is_current() -> None:
    """docs/adapters/README.md embeds `kevidence metrics --format markdown`; regenerate it with
    KEV_REGEN_DOCS=1 after changing any adapters/*.toml."""
    import os

    doc = ROOT / "docs" / "adapters" / "README.md"
    text = doc.read_text()
    begin, end = "<!-- BEGIN GENERATED: kevidence metrics --format markdown -->\n", "<!-- END GENERATED -->"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    fresh = head + begin + render_metric_table("markdown") + end + tail
    if os.environ.get("KEV_REGEN_DOCS"):
        doc.write_text(fresh)
        return
    assert text == fresh, "docs/adapters/README.md is stale: run with KEV_REGEN_DOCS=1"


def test_docs_index_links_every_adapter_page() -> None:
    from kernel_evidence.adapters import available_adapters

    doc = ROOT / "docs" / "adapters" / "README.md"
    rows = [line for line in doc.read_text().splitlines() if line.startswith("| `") and line.count("|") == 4]
    linked = {}
    for row in rows:
        name = row.split("`")[1]
        page = row.rstrip(" |").rsplit("|", 1)[1].strip()
        linked[name] = page
    for name in available_adapters():
        if name not in ("ncu", "vllm", "rocprof", "xprof"):
            continue  # third-party adapters document themselves
        assert linked.get(name) == f"[{name}.md]({name}.md)", f"the adapter table does not link {name}.md"
        assert (doc.parent / f"{name}.md").is_file()


def test_raw_column_packets_serialise_like_their_json_data(corpus: Path) -> None:
    # EvidencePacket.to_json/compute_id splice raw-column tables in as pre-encoded JSON; the
    # reference is the packet's plain JSON data, sorted, and the id computed from it
    import msgspec

    from kernel_evidence._codec.canonical import packet_id_for

    paths = [
        RAW,
        DETAILS,
        FIX / "text_new_style.txt",
        corpus / "ncu" / "raw_b200_cc100_flashattn_prof_prefix.csv",
    ]
    (with_nulls,) = ingest(
        "ncu",
        [str(RAW)],
        created_at=T0,
        replay_cmd="x",
        sets=['extensions.org\\.example:run={"a": null, "b": [1, null]}'],
    ).packets
    packets = [p for path in paths for p in ingest("ncu", [str(path)], created_at=T0).packets] + [with_nulls]
    assert all(p.profiler and p.profiler[0].raw_columns for p in packets)  # the fast path is taken
    for p in packets:
        assert p.to_json() == msgspec.json.encode(p.to_dict(), order="sorted")
        assert packet_id_for(p.to_dict()) == p.compute_id() == p.packet_id
    # an empty table is not the same as no table
    empty = packets[0].model_copy(
        update={"profiler": [packets[0].profiler[0].model_copy(update={"raw_columns": {}})]}  # type: ignore[index]
    )
    assert empty.to_json() == msgspec.json.encode(empty.to_dict(), order="sorted")
    assert packet_id_for(empty.to_dict()) == empty.compute_id() != packets[0].compute_id()


def test_advice_to_set_fields_is_not_repeated_once_they_are_set(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A details page names no device: the adapter's warning says, as data, that the packet
    lacks hardware.vendor and hardware.device; the CLI advises `--set hardware.vendor=...
    --set hardware.device=...`; given both, the warning is not printed any more."""
    src = str(FIX / "details_old_nvtx_units.csv")
    out = str(tmp_path / "p.jsonl")
    code, _, err = run(capsys, "ingest", "ncu", src, "-o", out)
    assert code == 0 and "--set hardware.vendor=nvidia" in err
    sets = ["--set", "hardware.vendor=nvidia", "--set", "hardware.device=NVIDIA GeForce RTX 3070"]
    code, _, err = run(capsys, "ingest", "ncu", src, "-o", out, "--force", *sets)
    assert code == 0 and "hardware left empty" not in err


def test_a_bad_option_value_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = str(FIX / "raw_clean.csv")
    code, _, err = run(capsys, "ingest", "ncu", src, "--opt", "max_bytes=-3", "-o", str(tmp_path / "p.json"))
    assert code == 2 and "option `max_bytes`" in err
