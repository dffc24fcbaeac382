"""KE506 and numbers rounded for a report."""


def test_ke506_allows_for_min_and_max_rounded_for_a_report() -> None:
    """KernelBench writes 3 significant digits: min == max == 0.0123 with std 0.00004 is a
    rounded spread, not a lie; the same std with full-precision min == max is one, and so is
    a std far beyond one unit of the last digit."""
    from kernel_evidence.rules.statistics import _std

    class S:
        def __init__(self, lo: float, hi: float, std: float) -> None:
            self.min, self.max, self.std, self.samples = lo, hi, std, None
            self.n, self.dropped = None, None  # (no count: the lower bound on std is not read)

    def fired(lo: float, hi: float, std: float) -> bool:
        out: list[tuple[str, str, str]] = []
        _std("/timing/stats", S(lo, hi, std), out.append)
        return any(f[0] == "KE506" for f in out)

    assert not fired(0.0123, 0.0123, 0.00004)
    assert not fired(2.65, 2.65, 0.004)
    assert fired(0.0123, 0.0123, 0.001)  # ten units of the last digit
    assert fired(0.012345678901, 0.012345678901, 0.00004)  # written in full: no rounding
    assert fired(2.65, 2.66, 0.5)
