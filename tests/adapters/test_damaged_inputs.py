"""Damaged real inputs found by byte-flip fuzzing: one-line errors or warnings, never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernel_evidence._ingest import ingest
from kernel_evidence.adapters import AdapterOptions, AdapterResult
from kernel_evidence.errors import AdapterError, KernelEvidenceError
from kernel_evidence.models import EvidencePacket

T0 = "2026-11-22T00:00:00Z"


def test_vllm_result_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    bad = tmp_path / "result.json"
    bad.write_bytes(b'{"model_id": "opt-\xad125m", "completed": 3, "duration": 1.0}')
    with pytest.raises(
        AdapterError, match=r"result\.json: not valid UTF-8 at byte 18; expected a benchmark result"
    ):
        ingest("vllm", [str(bad)], created_at=T0)


def test_rocprof_workload_with_an_unreadable_sysinfo(corpus: Path, tmp_path: Path) -> None:
    src = corpus / "rocprof" / "rocprof-compute-3.x_vcopy_MI300X_A1_rocpd"
    if not src.is_dir():
        pytest.skip("workload not in the corpus")
    work = tmp_path / "wl"
    shutil.copytree(src, work)
    for sysinfo in work.rglob("sysinfo.csv"):
        sysinfo.write_text("a,b\n1,2\n", encoding="utf-8")
    try:
        result = ingest("rocprof", [str(work)], created_at=T0)
    except KernelEvidenceError:
        return  # a one-line refusal is acceptable too
    assert result.packets
    for p in result.packets:
        EvidencePacket.model_validate(p.to_dict())


class _Refused:
    """An adapter whose source text is not Unicode (a lone surrogate, as from a damaged report)."""

    name = "damaged"
    aliases: tuple[str, ...] = ()
    description = "test adapter"

    def read(self, inputs: list[str], options: AdapterOptions) -> AdapterResult:
        from kernel_evidence.models import KernelRecord

        KernelRecord(name="kernel\udcff")  # raises pydantic.ValidationError
        raise AssertionError("unreachable")


def test_a_model_refusal_inside_an_adapter_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import kernel_evidence._ingest as ing

    monkeypatch.setattr(ing, "get_adapter", lambda name: _Refused())
    with pytest.raises(AdapterError) as info:
        ingest("damaged", ["report.bin"], created_at=T0)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(
        "report.bin: the damaged adapter read a value the packet model refuses (KernelRecord.name:"
    )
    assert msg.endswith("is the input damaged?")
