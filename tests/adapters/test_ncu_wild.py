"""Nsight Compute adapter on layouts first met in real exports from public repositories (not
in the test corpus). The fixtures are small synthetic files written here with the same
layout: made-up kernel names and numbers, only the column names, section names, rule names,
metric names and unit spellings are ncu's."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_evidence.adapters import AdapterOptions
from kernel_evidence.adapters.ncu import ADAPTER
from kernel_evidence.errors import InputError
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
    from kernel_evidence.adapters.ncu._rep import _rule_results

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


# ------------------------------------------ ncu 2025 progress lines: `"name" - 3 (4/10):` are counted


def _text_launch(name: str, duration: str) -> list[str]:
    # the 2025 text page layout: kernel line with Device/CC, Metric Name header between rulers
    return [
        f"  {name}(float *, int) (4, 1, 1)x(128, 1, 1), Context 1, Stream 7, Device 0, CC 7.5",
        "    Section: GPU Speed Of Light Throughput",
        "    ----------------------- ----------- ------------",
        "    Metric Name             Metric Unit Metric Value",
        "    ----------------------- ----------- ------------",
        f"    Duration                         us {duration:>12}",
        "    ----------------------- ----------- ------------",
        "",
    ]


def test_text_page_2025_progress_lines_count_launches(tmp_path: Path) -> None:
    # ncu 2025 announces each launch as `==PROF== Profiling "name" - N (i/n): 0%...`; a page
    # that holds fewer launches than announced lost some (a file cut between two launches)
    lines = [
        "==PROF== Connected to process 4242 (/opt/demo/app)",
        '==PROF== Profiling "scale_rows" - 0 (1/2): 0%....50%....100% - 9 passes',
        '==PROF== Profiling "scale_rows" - 1 (2/2): 0%....50%....100% - 9 passes',
        "==PROF== Disconnected from process 4242",
        "[4242] app@127.0.0.1",
        *_text_launch("void scale_rows", "3.50"),
    ]
    path = tmp_path / "text_2025_cut.log"
    path.write_text("\n".join(lines) + "\n")
    cap = one(path).profiler[0]
    assert [k.metrics["duration"].value for k in cap.kernels or []] == [3500.0]  # type: ignore[index]
    assert any("announces 2 profiled kernel launches" in w for w in cap.warnings or []), cap.warnings
    # both launches present: no warning
    lines += _text_launch("void scale_rows", "3.75")
    path.write_text("\n".join(lines) + "\n")
    cap = one(path).profiler[0]
    assert len(cap.kernels or []) == 2
    assert not any("announces" in w for w in cap.warnings or []), cap.warnings


# ------------------------------------------------- a failed run: the first ==ERROR== is the cause


def test_failed_run_error_quotes_the_first_error_line(tmp_path: Path) -> None:
    # ncu prints the cause first and a generic hint after it; quoting only the last line
    # would hide why nothing was profiled
    path = tmp_path / "failed.csv"
    path.write_text(
        "==ERROR== Option '--section NoSuchSection' did not match any section.\n"
        "==ERROR== Use --list-sections to see the list of available sections.\n"
    )
    with pytest.raises(InputError) as exc:
        ADAPTER.read([str(path)], AdapterOptions(created_at=T0))
    message = str(exc.value)
    assert message.startswith(f"{path}:line 2: no Nsight Compute table found")
    assert "last profiler error: ==ERROR== Use --list-sections" in message
    assert "(the first of 2 ==ERROR== lines, line 1: ==ERROR== Option '--section NoSuchSection'" in message
    assert "\n" not in message


def test_prof_lines_only_names_the_report_ncu_wrote(tmp_path: Path) -> None:
    path = tmp_path / "session.log"
    path.write_text(
        "==PROF== Connected to process 77 (/opt/demo/app)\n"
        '==PROF== Profiling "k" - 0: 0%....50%....100% - 9 passes\n'
        "done\n"
        "==PROF== Disconnected from process 77\n"
        "==PROF== Report: /data/run7.ncu-rep\n"
    )
    with pytest.raises(InputError) as exc:
        ADAPTER.read([str(path)], AdapterOptions(created_at=T0))
    assert str(exc.value).endswith(
        "the file holds only profiler status lines (ncu wrote the results to /data/run7.ncu-rep: read that file)"
    )


# ------------------------------------ outputs that are no report: refused naming what they are

_RULER2 = "-" * 30 + " " + "-" * 40


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        (  # ncu --query-metrics, 2023+: name, type, unit, description
            "Device Demo GPU (GX100)\n"
            f"{_RULER2}\n"
            "Metric Name                    Metric Type     Metric Unit     Metric Description\n"
            f"{_RULER2}\n"
            "dram__bytes                    Counter         byte            bytes moved\n",
            3,
            "an ncu `--query-metrics` listing",
        ),
        (  # ncu --query-metrics, 2021-2022: name and description only
            f"Device Demo GPU (GX100)\n{_RULER2}\n"
            "Metric Name                    Metric Description\n"
            f"{_RULER2}\ndram__bytes                    bytes moved\n",
            3,
            "an ncu `--query-metrics` listing",
        ),
        (  # a piece of a --query-metrics listing without its header
            "gpu__time_duration.sum         Counter         ns              time spent\n"
            "dram__bytes.sum                Counter         byte            bytes moved\n"
            "lts__t_sector_hit_rate.pct     Ratio           %               hits per lookup\n",
            3,
            "an ncu `--query-metrics` listing",
        ),
        (  # ncu --list-sections
            f"{_RULER2}\n"
            "Identifier                     Display Name          Enabled Filename\n"
            f"{_RULER2}\n"
            "SpeedOfLight                   GPU Speed Of Light    yes     .../SpeedOfLight.section\n",
            2,
            "an ncu `--list-sections` listing",
        ),
        (  # nvprof --csv
            "==31337== NVPROF is profiling process 31337, command: ./demo\n"
            "==31337== Profiling application: ./demo\n"
            "==31337== Profiling result:\n"
            '"Device","Context","Stream","Kernel","Correlation_ID","achieved_occupancy"\n'
            ',,,,,\n"Demo GPU (0)","1","7","k",1,0.5\n',
            1,
            "nvprof output",
        ),
        (  # nsys stats --format csv
            "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
            "60.0,1200,2,600.0,600.0,500,700,141.4,k1\n",
            1,
            "an Nsight Systems `nsys stats` table",
        ),
    ],
    ids=[
        "query-metrics",
        "query-metrics-2021",
        "query-metrics-rows",
        "list-sections",
        "nvprof",
        "nsys-stats",
    ],
)
def test_outputs_that_are_no_report_are_named(tmp_path: Path, text: str, line: int, what: str) -> None:
    path = tmp_path / "out.txt"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        ADAPTER.read([str(path)], AdapterOptions(created_at=T0))
    message = str(exc.value)
    assert message.startswith(f"{path}:line {line}: {what}"), message
    assert "not an Nsight Compute report; expected ncu --csv output" in message
    assert "\n" not in message
