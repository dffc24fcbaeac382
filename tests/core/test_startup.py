"""Start-up: the generated structs stay in step with the models, a plain ``validate`` needs
neither pydantic nor typer, and the shortcuts change nothing a user sees.

Speed itself is measured by ``benchmarks/bench_startup.py``, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from kernel_evidence._codec import _generate, structs
from kernel_evidence.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
VALID = ROOT / "examples" / "packets" / "valid"
INVALID = ROOT / "examples" / "packets" / "invalid"


def test_generated_structs_match_the_models() -> None:
    text = _generate.generate()
    if os.environ.get("KEVIDENCE_REGENERATE_STRUCTS"):
        _generate.TARGET.write_text(text, encoding="utf-8")
    assert _generate.TARGET.read_text(encoding="utf-8") == text, (
        "src/kernel_evidence/_codec/_structs_gen.py is stale: run "
        "`python -m kernel_evidence._codec._generate` (or KEVIDENCE_REGENERATE_STRUCTS=1)"
    )


def test_struct_for_gives_the_generated_struct_of_a_packet_model() -> None:
    from kernel_evidence.models import EvidencePacket, Stats, Task

    assert structs.struct_for(EvidencePacket) is structs.PacketStruct
    assert structs.struct_for(EvidencePacket, patterns=False) is structs.PacketStructNoPatterns
    assert structs.struct_for(Task)().__struct_fields__ == tuple(sorted(Task.model_fields))
    # a struct built at run time from the model decodes exactly as the generated one
    built = structs._build(Stats, True)  # the run-time translation, not the generated one
    generated = structs.struct_for(Stats)
    assert built is not generated
    for doc in (
        b'{"unit": "ms", "median": 1.5, "percentiles": {"p99": 2.0}}',
        b'{"unit": "ms", "median": -1}',
    ):
        outcomes = []
        for tp in (built, generated):
            try:
                outcomes.append(msgspec.to_builtins(msgspec.json.decode(doc, type=tp)))
            except msgspec.ValidationError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_plain_validate_loads_neither_pydantic_nor_typer() -> None:
    packet = VALID / "nvidia_h100_gemm_vs_cublaslt.json"
    code = (
        "import sys\n"
        "from kernel_evidence.cli import main\n"
        f"rc = main(['validate', {str(packet)!r}])\n"
        "heavy = sorted(m for m in ('pydantic', 'typer', 'kernel_evidence.models', 'rich') if m in sys.modules)\n"
        "print(rc, heavy)\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "0 []"


def test_plain_output_is_what_rich_prints_off_a_terminal(tmp_path: Path) -> None:
    """Off a terminal, validate prints without rich: the same lines rich's console gives,
    a packet's own brackets (`[dim]`, `[/]`) kept as written."""
    d = json.loads((VALID / "nvidia_h100_gemm_vs_cublaslt.json").read_text())
    d.pop("packet_id")
    d["subject"]["name"] = "gemm [dim]x[/] [bold red]y"
    d["timing"]["speedup"]["value"] = 9.0  # KE301, its message quoting numbers
    (tmp_path / "a [b].json").write_text(json.dumps(d))
    args = ["validate", "-v", str(tmp_path)]
    code = (
        "import sys\n"
        "from rich.console import Console\n"
        "from kernel_evidence.cli import main, validate\n"
        "validate._output = lambda: Console(file=sys.stdout, soft_wrap=True, highlight=False)\n"
        f"main({args!r})\n"
    )
    plain = subprocess.run([sys.executable, "-m", "kernel_evidence", *args], capture_output=True, text=True)
    rich = _python(code)
    strip = lambda out: [line.rsplit(" (", 1)[0] if line.startswith("FAILED") else line for line in out.splitlines()]  # noqa: E731
    assert strip(plain.stdout) == strip(rich.stdout)
    assert "a [b].json" in plain.stdout and "KE301" in plain.stdout


def test_version_and_help_import_no_command_module() -> None:
    code = (
        "import sys\n"
        "from kernel_evidence.cli import main\n"
        "rc = main(['--version'])\n"
        "print(rc, sorted(m for m in sys.modules if m.startswith('kernel_evidence.cli.')))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    version, loaded = proc.stdout.splitlines()
    assert version == "kevidence " + _version() and loaded.startswith("0 [")
    names = {m.rsplit(".", 1)[1] for m in eval(loaded[2:])}  # noqa: S307 - a list we printed
    # only a module that registers a group (not one command) is imported to be listed
    from kernel_evidence.cli import _listing

    assert names - {"_common"} == {n for n in COMMANDS if n in names and _listing(n) is None}
    assert "validate" not in names and "archive" not in names


def _version() -> str:
    from kernel_evidence import __version__

    return __version__


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("inputs", "exit_code"),
    [
        ([VALID / "nvidia_h100_gemm_vs_cublaslt.json"], 0),
        ([VALID / "serving_vllm_llama8b_h100.json", VALID / "failed_nan_inf.json"], 0),
        ([next(INVALID.glob("KE*.json"))], 1),
        ([VALID], 0),
        ([Path("no/such/file.json")], 1),
    ],
    ids=["one", "two", "invalid", "folder", "missing"],
)
def test_plain_validate_equals_the_parsed_command(
    inputs: list[Path], exit_code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(p) for p in inputs]
    plain = _run(capsys, "validate", *paths)
    parsed = _run(capsys, "validate", "--jobs", "0", *paths)  # an option it does not take: the parser runs

    def same(r: tuple[int, str, str]) -> tuple[int, str, str]:  # the elapsed time differs
        return r[0], r[1].rsplit("(", 1)[0], r[2]

    assert same(plain) == same(parsed)
    assert plain[0] == exit_code


def test_help_lists_every_command_with_its_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--help")
    assert code == 0
    section = out.split("Commands:", 1)[1]
    listed = [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.split()]
    commands = [c for c in COMMANDS if (ROOT / "src" / "kernel_evidence" / "cli" / f"{c}.py").exists()]
    assert [c for c in listed if c in COMMANDS] == commands
    assert "Validate packets: exit 0 when all are valid" in out
    assert "<bool>" not in out


def test_flags_show_as_flags(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("validate", "archive", "export", "report"):
        code, out, _ = _run(capsys, command, "--help")
        assert code == 0, command
        assert "<bool>" not in out, command
    code, out, _ = _run(capsys, "validate", "--help")
    strict = next(line for line in out.splitlines() if "--strict" in line)
    assert "Warnings fail" in strict


def test_a_mistyped_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "valdiate", "x.json")
    assert code == 2 and "No such command" in err


def test_validate_json_output_unchanged_by_the_shortcut(capsys: pytest.CaptureFixture[str]) -> None:
    packet = str(VALID / "nvidia_h100_gemm_vs_cublaslt.json")
    code, out, _ = _run(capsys, "validate", "--format", "json", packet)
    assert code == 0 and json.loads(out)["summary"]["valid"] == 1


@pytest.mark.parametrize(
    "options",
    [["--strict"], ["--format", "json"], ["-f", "json", "--strict"], ["--format=json"], ["-q"],
     ["--verbose"], ["--no-progress", "--strict"]],
)  # fmt: skip
@pytest.mark.parametrize("packet", ["KE501_inconsistent_statistics.json", "KE101_no_replay.json"])
def test_plain_validate_with_a_harness_s_options_equals_the_parsed_command(
    options: list[str], packet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_evidence.cli import _plain_validate

    paths = [str(VALID / "serving_vllm_llama8b_h100.json"), str(INVALID / packet)]
    assert _plain_validate(["validate", *options, *paths]) is not None
    plain = _run(capsys, "validate", *options, *paths)
    parsed = _run(capsys, "validate", "--jobs", "0", *options, *paths)

    def same(r: tuple[int, str, str]) -> tuple[int, str, str]:  # the elapsed time differs
        out = r[1]
        if out.startswith("{"):
            data = json.loads(out)
            data["summary"].pop("seconds", None)
            out = json.dumps(data, sort_keys=True)
        return r[0], out.rsplit("(", 1)[0], r[2]

    assert same(plain) == same(parsed)


@pytest.mark.parametrize(
    "argv",
    [["validate", "--format", "xml", "a.json"], ["validate", "--strict", "--strict", "a.json"],
     ["validate", "--jobs", "2", "a.json"], ["validate", "--strict"], ["validate", "-f"],
     ["validate", "--", "a.json"], ["validate", "--side-files-from", "d", "a.json"]],
)  # fmt: skip
def test_other_validate_command_lines_go_through_the_parser(argv: list[str]) -> None:
    from kernel_evidence.cli import _plain_validate

    assert _plain_validate(argv) is None


def test_validate_strict_loads_neither_pydantic_nor_typer() -> None:
    packet = VALID / "nvidia_h100_gemm_vs_cublaslt.json"
    code = (
        "import sys\n"
        "from kernel_evidence.cli import main\n"
        f"rc = main(['validate', '--strict', '-f', 'json', {str(packet)!r}])\n"
        "heavy = sorted(m for m in ('pydantic', 'typer', 'kernel_evidence.models') if m in sys.modules)\n"
        "print(rc, heavy)\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "0 []"
