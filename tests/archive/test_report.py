"""The HTML report: self-contained, with its charts and tables; rendered in headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kernel_evidence.archive import archive_packets, build_report, write_report
from kernel_evidence.cli import main

ARTIFACTS = Path(os.environ.get("KEV_ARTIFACTS", tempfile.gettempdir()))


class _Refs(HTMLParser):
    """Every URL-bearing attribute and element the page holds."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: dict[str, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href", "action", "poster", "srcset", "xlink:href") and v:
                self.refs.append(v)


def test_report_is_self_contained(archive: Path) -> None:
    html, n = build_report(archive, generated_at="2026-11-22T00:00:00Z")
    assert n == 120
    p = _Refs()
    p.feed(html)
    assert p.refs == []
    assert not re.search(r"url\(|@import|https?://(?!www\.w3\.org/2000/svg)", html)
    assert p.tags["svg"] == 5  # kernel times, speedup, speed of light, failure classes, pass rate
    assert "default-src 'none'" in html
    for heading in (
        "Speedup against the named baseline",
        "Speed-of-light fraction",
        "Failure classes",
        "Pass rate over time",
        "Strongest evidence",
        "Weakest evidence",
    ):
        assert f"<h2>{heading}</h2>" in html
    # speedup rows name the device, the operator and the baseline with its version
    assert "AMD Instinct MI300X · gemm vs hipBLASLt 0.10.0" in html
    # the failure classes of the data, and both runs of the pass-rate chart
    for name in ("incorrect_numerical", "nan_inf", "compile_error", "timeout", "rl-a", "rl-b"):
        assert name in html
    # grade reasons appear in the evidence tables
    assert '<ul class="r"><li>' in html


def test_report_escapes_packet_text(tmp_path: Path) -> None:
    from kernel_evidence.io import write_packets

    from ._factory import make_packet

    p = make_packet(0, run="<script>alert(1)</script>")
    write_packets(tmp_path / "x.jsonl", [p])
    archive_packets([tmp_path / "x.jsonl"], tmp_path / "a")
    html, _ = build_report(tmp_path / "a")
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html


def test_report_on_an_empty_archive(tmp_path: Path) -> None:
    archive_packets([], tmp_path / "a")
    html, n = build_report(tmp_path / "a")
    assert n == 0 and "No valid packet claims a speedup." in html


def test_cli_report(archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(archive), "-o", str(out), "--where", "vendor=amd"]) == 0
    assert capsys.readouterr().err == f"{out}: report on 40 packets\n"
    assert main(["report", str(archive), "-o", str(out)]) == 1
    assert "already exists" in capsys.readouterr().err


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _browser(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="kev-chromium-") as profile:
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args,
        ]  # fmt: skip
        return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


@pytest.mark.browser
def test_report_renders_in_headless_chromium(archive: Path, tmp_path: Path) -> None:
    binary = _chromium()
    if binary is None:
        if os.environ.get("CI"):
            # .ci/run installs Chromium: in CI a missing browser is a failure, not a skip
            pytest.fail("CI: no chromium binary; scripts/install-chromium.sh should have installed it")
        pytest.skip("no chromium binary (scripts/install-chromium.sh installs it)")
    page = tmp_path / "report.html"
    write_report(archive, page, generated_at="2026-11-22T00:00:00Z")
    url = page.resolve().as_uri()
    dom = _browser(binary, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    marker = re.search(r'<span id="kev-render"([^>]*)>([^<]*)</span>', dom.stdout)
    assert marker is not None, dom.stdout[-2000:]
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', marker.group(1)))
    assert attrs["data-rendered"] == "ok"  # the page's script ran to its end
    assert attrs["data-errors"] == "0"  # no script error was raised
    assert attrs["data-charts"] == "5"
    assert int(attrs["data-min-area"]) > 10_000  # every chart has a real laid-out size
    assert marker.group(2) == "rendered 5 charts"
    assert "Uncaught" not in dom.stderr and "CONSOLE" not in dom.stderr
    shot = ARTIFACTS / "kevidence-report.png"
    res = _browser(binary, "--hide-scrollbars", "--window-size=1100,2600", f"--screenshot={shot}", url)
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
