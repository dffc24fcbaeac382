"""Nsight Compute adapter on layouts first met in real exports from public repositories (not
in the test corpus). The fixtures are small synthetic files written here with the same
layout: made-up kernel names and numbers, only the column names, section names, rule names,
metric names and unit spellings are ncu's."""

from __future__ import annotations

from pathlib import Path

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.ncu import ADAPTER
from kernel_evidence.models import EvidencePacket

T0 = "2026-11-22T00:00:00Z"


def one(path: Path) -> EvidencePacket:
    packets = ADAPTER.read([str(path)], AdapterOptions(created_at=T0)).packets
    assert len(packets) == 1
    again = EvidencePacket.model_validate(packets[0].to_dict())
    assert again.compute_id() == packets[0].packet_id
    return packets[0]


def quoted(*cells: str) -> str:
    return ",".join(f'"{c}"' for c in cells)


# --------------------------------------------------------- details page: repeated rule results

_HEADER_2025 = quoted(
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit",
    "Metric Value", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
    "Estimated Speedup",
)  # fmt: skip
_LAUNCH = ("0", "7001", "demo", "127.0.0.1", "blur_rows", "1", "7", "(128, 1, 1)", "(40, 2, 1)", "0", "9.0")


def _metric_row(section: str, name: str, unit: str, value: str) -> str:
    # ncu 2025 ends metric rows after the value with a trailing comma (ragged rows)
    return quoted(*_LAUNCH, section, name, unit, value) + ","


def _rule_row(section: str, rule: str, text: str, kind: str, speedup: str) -> str:
    return quoted(*_LAUNCH, section, "", "", "", rule, "OPT", text, kind, speedup)


def test_details_rule_giving_several_results_keeps_each(tmp_path: Path) -> None:
    # ncu 2025 `--set full`: WorkloadImbalance reports once per unit (SMs, SMSPs, L1, L2)
    # and LaunchConfiguration twice, the first without an estimated speedup. Each result
    # is kept (the N-th as `#N`), with its own speedup; none overwrites another.
    rows = [
        _HEADER_2025,
        _metric_row("GPU Speed Of Light Throughput", "Duration", "ns", "20480"),
        _rule_row("LaunchStats", "LaunchConfiguration", "first advice", "", ""),
        _rule_row("LaunchStats", "LaunchConfiguration", "second advice", "global", "12.5"),
        _metric_row("GPU and Memory Workload Distribution", "Average SM Active Cycles", "cycle", "900"),
        _rule_row("WorkloadDistribution", "WorkloadImbalance", "SMs are uneven", "global", "3.5"),
        _rule_row("WorkloadDistribution", "WorkloadImbalance", "SMSPs are uneven", "global", "4"),
        _rule_row("WorkloadDistribution", "WorkloadImbalance", "L2 slices are uneven", "local", "7.25"),
    ]
    path = tmp_path / "details_repeated_rules.csv"
    path.write_text("\n".join(rows) + "\n")
    cap = one(path).profiler[0]
    cols, units = cap.raw_columns or {}, cap.raw_units or {}
    rules = {k: v[0] for k, v in cols.items() if k.startswith("rule:")}
    assert rules == {
        "rule:LaunchStats/LaunchConfiguration": "first advice",
        "rule:LaunchStats/LaunchConfiguration#2": "second advice",
        "rule:LaunchStats/LaunchConfiguration#2:estimated_speedup": 12.5,
        "rule:WorkloadDistribution/WorkloadImbalance": "SMs are uneven",
        "rule:WorkloadDistribution/WorkloadImbalance:estimated_speedup": 3.5,
        "rule:WorkloadDistribution/WorkloadImbalance#2": "SMSPs are uneven",
        "rule:WorkloadDistribution/WorkloadImbalance#2:estimated_speedup": 4.0,
        "rule:WorkloadDistribution/WorkloadImbalance#3": "L2 slices are uneven",
        "rule:WorkloadDistribution/WorkloadImbalance#3:estimated_speedup": 7.25,
    }
    assert units["rule:WorkloadDistribution/WorkloadImbalance#3"] == "OPT"
    assert units["rule:WorkloadDistribution/WorkloadImbalance#3:estimated_speedup"] == "% (local)"
    assert cap.kernels[0].metrics["duration"].value == 20480.0  # type: ignore[index]
    assert not any("repeat" in w for w in cap.warnings or [])  # rule results are not repeats


# ------------------------------------------ details page 2020.x: `Memory Throughput` is a bandwidth

_HEADER_2020 = quoted(
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
    "Section Name", "Metric Name", "Metric Unit", "Metric Value",
)  # fmt: skip


def test_details_2020_memory_throughput_bandwidth_label_gives_no_unit_warning(tmp_path: Path) -> None:
    # ncu 2020.x names the speed-of-light percentage `Memory [%]` and uses the label
    # `Memory Throughput` for the Memory Workload Analysis bandwidth (byte/second); 2021+
    # uses `Memory Throughput` (%) for the former. The percentage is read, and the bandwidth
    # is not reported as a unit that cannot be a percentage.
    def row(launch: str, section: str, name: str, unit: str, value: str) -> str:
        return quoted(launch, "5120", "app", "127.0.0.1", f"k{launch}", "2020-Jan-02 10:00:00", "1", "7",
                      section, name, unit, value)  # fmt: skip

    rows = [_HEADER_2020]
    for launch, pct in (("0", "31.50"), ("1", "62.25")):
        rows += [
            row(launch, "GPU Speed Of Light", "Memory [%]", "%", pct),
            row(launch, "GPU Speed Of Light", "Duration", "nsecond", "4096"),
            row(launch, "Memory Workload Analysis", "Memory Throughput", "byte/second", "123456789012.50"),
        ]
    path = tmp_path / "details_2020_labels.csv"
    path.write_text("\n".join(rows) + "\n")
    cap = one(path).profiler[0]
    kernels = cap.kernels or []
    assert [k.metrics["memory_throughput"].value for k in kernels] == [31.5, 62.25]  # type: ignore[index]
    assert [k.metrics["duration"].value for k in kernels] == [4096.0, 4096.0]  # type: ignore[index]
    assert (cap.raw_units or {})["Memory Throughput"] == "byte/second"  # kept raw
    assert not any("Memory Throughput" in w for w in cap.warnings or []), cap.warnings


def test_rep_rule_giving_several_results_keeps_each() -> None:
    # the .ncu-rep reader numbers a rule's results as the details page does; the action
    # here stands in for ncu_report's only to hand over its rule results as it gives them
    from kernel_evidence.adapters._ncu_rep import _rule_results

    class Action:
        def rule_results_as_dicts(self) -> list[dict[str, object]]:
            def result(rule: str, text: str) -> dict[str, object]:
                return {
                    "section_identifier": "WorkloadDistribution",
                    "rule_identifier": rule,
                    "rule_message": {"message": text, "type": 2},
                }

            return [
                result("WorkloadImbalance", "SMs are uneven"),
                result("WorkloadImbalance", "L2 slices are uneven"),
                result("Other", "fine"),
            ]

    raw: dict[str, object] = {}
    _rule_results(Action(), raw)
    assert raw == {
        "rule:WorkloadDistribution/WorkloadImbalance": ("SMs are uneven", "msg_type 2"),
        "rule:WorkloadDistribution/WorkloadImbalance#2": ("L2 slices are uneven", "msg_type 2"),
        "rule:WorkloadDistribution/Other": ("fine", "msg_type 2"),
    }
