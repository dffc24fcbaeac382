"""Red team 5s, classes 9 and 10: cost and energy figures cut down past the checks (a window
longer than the run, a `dynamic` source, one device's energy on a multi-device run, a price
no accelerator is rented for), and forged members of the project's own extension namespace.
Each beside an honest twin that must still pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from kernel_evidence import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adversarial"))
from _adv_kit import control, found, grade, rules  # noqa: E402

GEMM = "h100_bf16_gemm_vs_cublaslt"
SERV = "serving_vllm_llama8b_h100"
MOE = "serving_mixtral_moe_low_concurrency_tp2"
TP8 = "serving_sglang_tp8_llama70b"
CPU = "cpu_epyc_sgemm_vs_openblas"


# ---------------------------------------------------------------- KE1203: the energy window


def test_an_energy_window_longer_than_the_run_is_not_the_runs() -> None:
    p = control(SERV)
    e = p["cost"]["energy"]
    e["window"]["value"], e["energy"]["value"] = 700.0, 20000.0  # 28.6 W: above the idle floor
    assert ("KE1203", "/cost/energy/window") in found(p)
    assert grade(p) == "C"
    # the window of the whole run (a little longer than gpu_time, within wall_time + 10%)
    p = control(SERV)
    p["cost"]["energy"]["window"]["value"] = 140.0
    p["cost"]["energy"]["energy"]["value"] = 72800.0
    assert "KE1203" not in rules(p)
    assert grade(p) == grade(control(SERV))


# ---------------------------------------------------------------- KE1203: above idle


def test_dynamic_alone_does_not_lift_the_idle_floor() -> None:
    for source in ("nvml (dynamic)", "nvml incremental counter"):
        p = control(SERV)
        p["cost"]["energy"]["source"] = source
        p["cost"]["energy"]["energy"]["value"] = 1278.0  # 10 W at full serving load
        assert ("KE1203", "/cost/energy/energy") in found(p), source
        assert grade(p) == "C"


def test_a_source_that_says_above_idle_is_not_bounded() -> None:
    for source in ("nvml, energy above idle", "nvml (idle-subtracted)", "nvml net of idle draw"):
        p = control(SERV)
        p["cost"]["energy"]["source"] = source
        p["cost"]["energy"]["energy"]["value"] = 1278.0
        assert "KE1203" not in rules(p), source


# ---------------------------------------------------------------- KE1203: one device of several


def test_one_devices_energy_on_a_multi_device_run() -> None:
    for source in ("nvml (GPU 0)", "nvml device 0", "rank 0 nvml", "nvml cuda:0"):
        p = control(MOE)
        e = p["cost"]["energy"]
        e["energy"]["value"] = round(e["energy"]["value"] / 2, 1)
        e["source"] = source
        assert ("KE1203", "/cost/energy/energy") in found(p), source
        assert grade(p) == "C"


def test_sources_that_name_every_device_or_a_toolkit_version_pass() -> None:
    for source in ("nvml GPUs 0,1", "nvml gpu 0-1", "nvml, summed over GPU 0 and GPU 1", "nvml (CUDA 12.4)"):
        p = control(MOE)
        p["cost"]["energy"]["source"] = source
        assert "KE1203" not in rules(p), source
        assert grade(p) == grade(control(MOE))
    # one device named on a one-device run is that run's energy
    p = control(SERV)
    p["cost"]["energy"]["source"] = "nvml (GPU 0)"
    assert "KE1203" not in rules(p)
    p = control(TP8)
    p["cost"]["energy"]["source"] = "rocm-smi (ROCm 6.2)"
    assert "KE1203" not in rules(p)


# ---------------------------------------------------------------- KE1204: money


def _money(
    p: dict[str, Any], amount: float, source: str | None = "on-demand list price", currency: str = "USD"
) -> None:
    m: dict[str, Any] = {"amount": amount, "currency": currency, "price_date": "2026-11-01"}
    if source is not None:
        m["price_source"] = source
    p["cost"]["money"] = m


def test_a_price_no_accelerator_is_rented_for() -> None:
    p = control(SERV)
    _money(p, 0.0004)  # 127.8 GPU-seconds: 0.011 USD per H100-hour
    assert ("KE1204", "/cost/money/amount") in found(p)
    assert grade(p) == "C"
    p = control(SERV)
    _money(p, 0.0004, source=None, currency="EUR")
    assert ("KE1204", "/cost/money/amount") in found(p)
    # the TP8 run's 2484 GPU-seconds
    p = control(TP8)
    _money(p, 0.02)
    assert ("KE1204", "/cost/money/amount") in found(p)


def test_honest_prices_and_the_ones_not_bounded() -> None:
    p = control(SERV)
    _money(p, 0.35)  # about 9.9 USD per device-hour with the node
    assert "KE1204" not in rules(p)
    assert grade(p) == grade(control(SERV))
    p = control(TP8)
    _money(p, 2.07, "reserved price, 8x H100 at 3.00 USD/h")
    assert "KE1204" not in rules(p)
    # electricity only, or a free allocation, is not a price of device time
    for source in ("electricity at 0.03 USD/kWh", "power cost only", "free research allocation"):
        p = control(SERV)
        _money(p, 0.0004, source)
        assert "KE1204" not in rules(p), source
    # a currency worth much less than a dollar, and a CPU, are not bounded
    p = control(SERV)
    _money(p, 0.9, currency="JPY")
    assert "KE1204" not in rules(p)
    p = control(CPU)
    _money(p, 0.0001)
    assert "KE1204" not in rules(p)


# ---------------------------------------------------------------- KE009: the project's namespace


VERDICT = {"verdict": "reproduced", "reason": "speedup within 2%", "tolerance": 0.05, "returncode": 0}
PARENT = "sha256:" + "3f" * 32


def test_a_replay_verdict_on_a_packet_that_was_not_replayed() -> None:
    p = control()
    p["extensions"] = {"kevidence:replay": dict(VERDICT)}
    assert ("KE009", "/extensions/kevidence:replay") in found(p)
    assert grade(p) == "C"
    # a replay relation without the parent it replays
    p = control()
    p["lineage"] = {"relation": "replay"}
    p["extensions"] = {"kevidence:replay": dict(VERDICT)}
    assert ("KE009", "/extensions/kevidence:replay") in found(p)


def test_a_replay_verdict_the_harness_does_not_write() -> None:
    p = control()
    p["lineage"] = {"relation": "replay", "parent_packet_id": PARENT}
    p["extensions"] = {"kevidence:replay": {"verdict": "verified", "reason": "ok"}}
    assert ("KE009", "/extensions/kevidence:replay") in found(p)
    assert grade(p) == "C"


def test_a_replay_verdict_on_a_replay_of_a_parent_passes() -> None:
    for relation in ("replay", "rerun"):
        for verdict in ("reproduced", "drifted"):
            p = control()
            p["lineage"] = {"relation": relation, "parent_packet_id": PARENT}
            p["extensions"] = {"kevidence:replay": dict(VERDICT, verdict=verdict)}
            assert "KE009" not in rules(p), (relation, verdict)
            assert grade(p) == "A"


def test_any_other_member_of_the_projects_namespace() -> None:
    for ns, body in (
        ("kevidence:grade", {"grade": "A", "verified": True}),
        ("kevidence:audit", {"reviewer": "ci", "notes": "looked fine"}),
    ):
        p = control()
        p["extensions"] = {ns: body}
        assert ("KE009", f"/extensions/{ns}") in found(p), ns
        assert grade(p) == "C"
    # another producer's namespace with its own data is not a claim
    p = control()
    p["extensions"] = {"https://acme.example/ci": {"pipeline": "nightly", "job": 77}}
    assert "KE009" not in rules(p)
    assert grade(p) == "A"


BENCH = textwrap.dedent(
    """
    import random, sys
    from kernel_evidence.harness import Recorder
    from kernel_evidence.harness.timer import Measurement
    rng = random.Random(1)
    samples = [100_000 * rng.lognormvariate(0, 0.03) for _ in range(40)]
    m = Measurement(samples_ns=samples, method="host_clock", warmup=2, stop_rule="fixed 40",
                    stop_reason="fixed", cache_policy="warm", synchronized=True)
    with Recorder(operator="softmax") as rec:
        with rec.candidate("softmax_v1") as c:
            c.timing(m, shape_id="s1")
    """
)


def test_the_harness_replay_writes_a_verdict_ke009_accepts(tmp_path: Path) -> None:
    from kernel_evidence.cli import main
    from kernel_evidence.harness._load import load_packet

    bench = tmp_path / "bench.py"
    bench.write_text(BENCH)
    parent = tmp_path / "parent.json"
    env = dict(os.environ, KEVIDENCE_OUT=str(parent))
    subprocess.run([sys.executable, str(bench)], env=env, check=True, cwd=tmp_path)
    child = tmp_path / "child.json"
    assert main(["replay", str(parent), "--execute", "--out", str(child)]) == 0
    c = load_packet(child)
    assert c.extensions is not None and "kevidence:replay" in c.extensions
    assert json.loads(child.read_bytes())["lineage"]["relation"] == "replay"
    assert "KE009" not in {f.rule_id for f in validate(c).findings}
    # the same verdict copied onto the parent, which replays nothing
    data = json.loads(parent.read_bytes().splitlines()[0])
    data["extensions"] = {"kevidence:replay": c.extensions["kevidence:replay"]}
    data.pop("packet_id", None)
    assert "KE009" in {f.rule_id for f in validate(data).findings}
