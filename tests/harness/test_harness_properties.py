"""Properties over any valid packet (the shipped Hypothesis strategies)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel_evidence.harness import compare_packets, reward
from kernel_evidence.harness.recorder import identify
from kernel_evidence.models import EvidencePacket
from kernel_evidence.strategies import kernel_claim_packets, packets

_settings = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(packets())
def test_recorder_ids_equal_the_reference_ids(packet: EvidencePacket) -> None:
    fast, raw = identify(packet)
    assert fast.packet_id == packet.compute_id()
    assert EvidencePacket.model_validate_json(raw).packet_id == fast.packet_id


@_settings
@given(packets())
def test_reward_is_bounded_and_gated(packet: EvidencePacket) -> None:
    r = reward(packet)
    assert -1.0 <= r <= 5.0
    if packet.status.value != "passed":
        assert r <= 0.0
    else:
        assert r >= 0.1


@_settings
@given(kernel_claim_packets(), kernel_claim_packets(), st.booleans())
def test_compare_always_answers(a: EvidencePacket, b: EvidencePacket, force: bool) -> None:
    result = compare_packets(a, b, force=force, resamples=200)
    assert result.verdict in ("improved", "no_change", "regressed", "inconclusive", "incomparable")
    if result.verdict == "incomparable":
        assert result.problems and not force
    elif result.speedup is not None and result.ci_low is not None and result.ci_high is not None:
        assert result.ci_low <= result.ci_high
