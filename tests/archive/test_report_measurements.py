"""The report shows the measurements: kernel times per device and operator, serving
latencies and throughput per engine, version and device, throughput against concurrency,
verdicts and grades beside them, replays under their originals, disjoint strongest and
weakest lists, a readable time axis for one short run, long names cut in the page only,
and a Content-Security-Policy that names the page's own style and scripts by hash.
Rendered in headless Chromium, with a screenshot kept in the test run."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import statistics
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kernel_evidence.archive import archive_packets, build_report, read_table, write_report

from ._factory import make_packets
from .test_report import ARTIFACTS, _browser, _chromium

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "packets" / "valid"
LONG_MODEL = "org/" + "very-long-model-name-" * 12 + "instruct"


def _serving() -> list[dict[str, Any]]:
    base = json.loads((EXAMPLES / "serving_vllm_llama8b_h100.json").read_text())
    out = []
    for i, (version, concurrency, tok) in enumerate(
        [("0.11.0", 64, 4076.4), ("0.11.0", 128, 5210.0), ("0.11.0", 256, 5900.5), ("0.10.1", 64, 3520.1), ("0.10.1", 128, 4410.7)]
    ):  # fmt: skip
        p = copy.deepcopy(base)
        p.pop("packet_id", None)
        p["task"]["serving"]["engine"]["version"] = version
        p["task"]["serving"]["max_concurrency"] = concurrency
        cmd = p["replay"]["command"]  # the replay runs what the packet records (KE106)
        cmd[cmd.index("--max-concurrency") + 1] = str(concurrency)
        serving = p["timing"]["serving"]
        duration = serving["total_output_tokens"] / tok  # the figures agree with each other
        serving["output_throughput"]["value"] = tok
        serving["duration"]["value"] = round(duration, 6)
        serving["request_throughput"]["value"] = round(serving["completed"] / duration, 6)
        total = serving["total_input_tokens"] + serving["total_output_tokens"]
        serving["total_token_throughput"]["value"] = round(total / duration, 6)
        p["timing"]["speedup"]["value"] = round(tok / 3520.1, 4)
        p["timing"]["serving"]["ttft"]["percentiles"]["p99"] = 150.0 + 10 * i
        p["created_at"] = f"2026-11-2{i}T09:30:00Z"
        if i == 4:
            p["task"]["serving"]["model"] = LONG_MODEL
            p["replay"]["command"][p["replay"]["command"].index("--model") + 1] = LONG_MODEL
        out.append(p)
    return out


def _kernels() -> list[dict[str, Any]]:
    return [p.to_dict() for p in make_packets(12)]


def _replay_of(original: dict[str, Any]) -> dict[str, Any]:
    p = copy.deepcopy(original)
    p.pop("packet_id")
    p["created_at"] = "2026-11-28T10:00:00Z"
    p["subject"]["name"] = original["subject"]["name"] + "_replayed"
    p["lineage"] = {"parent_packet_id": original["packet_id"], "relation": "replay", "run_id": "replays"}
    return p


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    kernels = _kernels()
    return [*kernels, *_serving(), _replay_of(kernels[0])]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory, corpus: list[dict[str, Any]]) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    src = tmp / "in.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in corpus))
    summary = archive_packets([src], tmp / "archive")
    assert summary.refused_count == 0, [r.line() for r in summary.refused]
    return tmp / "archive"


@pytest.fixture(scope="module")
def page(archive: Path) -> str:
    return build_report(archive, generated_at="2026-11-28T00:00:00Z")[0]


class _Page(HTMLParser):
    """Table rows as lists of cell texts (per table), titles, style and script texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[tuple[str, list[str]]]] = []
        self.titles: list[str] = []
        self.inline: dict[str, list[str]] = {"style": [], "script": []}
        self._tag: str | None = None
        self._row: tuple[str, list[str]] | None = None
        self._cell: list[str] | None = None
        self.style_attrs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if "style" in a:
            self.style_attrs += 1
        if "title" in a and a["title"] is not None:
            self.titles.append(a["title"])
        if tag in ("style", "script"):
            self._tag = tag
            self.inline[tag].append("")
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = (a.get("class") or "", [])
            self.tables[-1].append(self._row)
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script"):
            self._tag = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row[1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._tag is not None:
            self.inline[self._tag][-1] += data
        elif self._cell is not None:
            self._cell.append(data)


def _parse(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    return p


def _table(p: _Page, first_header: str, second: str) -> list[tuple[str, list[str]]]:
    for t in p.tables:
        if t and t[0][1][:2] == [first_header, second]:
            return t
    raise AssertionError(f"no table headed {first_header}, {second}")


def _section(html: str, heading: str) -> str:
    start = html.index(f"<h2>{heading}</h2>")
    end = html.find("<h2>", start + 1)
    return html[start : end if end > 0 else len(html)]


def _us(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"ns": 1e-3, "µs": 1.0, "ms": 1e3, "s": 1e6}[unit]


def test_kernel_times_per_device_and_operator(page: str, archive: Path) -> None:
    rows = read_table(archive, ["device_id", "device", "operator", "kernel_median_us"]).to_pylist()
    want: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if r["kernel_median_us"] is not None:
            want.setdefault((r["device_id"] or r["device"], r["operator"]), []).append(r["kernel_median_us"])
    table = _table(_parse(page), "device", "operator")
    got = {(cells[0], cells[1]): cells for _, cells in table[1:]}
    assert got.keys() == want.keys()
    for key, values in want.items():
        cells = got[key]
        assert int(cells[3]) == len(values)
        # an approximate median (t-digest), shown to three digits
        assert _us(cells[4]) == pytest.approx(statistics.median(values), rel=0.01)
        assert _us(cells[6]) == pytest.approx(min(values), rel=0.01)
        assert re.search(r"passed\xa0×\d", cells[8]) or re.search(r"failed\xa0×\d", cells[8])  # verdicts
        assert re.search(r"[A-F]\xa0×\d", cells[9])  # grades
    assert "<h2>Kernel time per device and operator</h2>" in page
    assert 'aria-label="median kernel time per device and operator"' in page


def test_serving_latency_and_throughput_per_engine_version_device(page: str, corpus: list[Any]) -> None:
    table = _table(_parse(page), "engine", "version")
    header = table[0][1]
    got = {(c[0], c[1], c[2]): dict(zip(header, c, strict=True)) for _, c in table[1:]}
    for version in ("0.11.0", "0.10.1"):
        runs = [
            p for p in corpus
            if p["subject"]["kind"] == "serving" and p["task"]["serving"]["engine"]["version"] == version
        ]  # fmt: skip
        row = got[("vLLM", version, "nvidia-h100-sxm5-80gb")]
        assert int(row["runs"]) == len(runs)
        ttft_median, ttft_p99 = row["TTFT p50 / p99 (ms)"].split(" / ")
        assert float(ttft_median) == pytest.approx(88.1, rel=0.01)
        e2e_median = row["end-to-end p50 / p99 (ms)"].split(" / ")[0]
        assert e2e_median == "1,912"
        p99s = [p["timing"]["serving"]["ttft"]["percentiles"]["p99"] for p in runs]
        assert float(ttft_p99) == pytest.approx(statistics.median(p99s), rel=0.01)
        toks = [p["timing"]["serving"]["output_throughput"]["value"] for p in runs]
        assert float(row["output tok/s"].replace(",", "")) == pytest.approx(
            statistics.median(toks), rel=0.001
        )
        assert row["requests done / failed"] == f"{1000 * len(runs):,} / 0"
        assert re.search(r"[A-F]\xa0×\d", row["grades"])


def test_throughput_against_concurrency(page: str) -> None:
    chart = _section(page, "Throughput against concurrency")
    points = re.findall(
        r"<title>vLLM (\S+) · nvidia-h100-sxm5-80gb: ([\d,]+) tok/s at concurrency (\d+)", chart
    )
    assert sorted(points) == sorted(
        [("0.11.0", "4,076", "64"), ("0.11.0", "5,210", "128"), ("0.11.0", "5,900", "256"),
         ("0.10.1", "3,520", "64"), ("0.10.1", "4,411", "128")]
    )  # fmt: skip
    assert chart.count("<polyline") == 2  # one line per engine version and device


def test_replay_is_the_child_of_its_original(page: str, corpus: list[Any]) -> None:
    original = corpus[0]
    table = _table(_parse(page), "packet", "device · operator")
    classes = [cls for cls, _ in table[1:]]
    texts = [cells[0] for _, cells in table[1:]]
    assert classes == ["orig", "child"]
    assert texts[0].startswith(original["subject"]["name"]) and original["packet_id"][:19] in texts[0]
    assert texts[1].startswith("↳ replay " + original["subject"]["name"] + "_replayed")
    assert table[2][1][-1] == "1× the original's time"  # the same median as its original


def test_third_party_verdicts_beside_the_packets(tmp_path: Path, corpus: list[Any]) -> None:
    from kernel_evidence.archive.verdicts import add_verdict

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in corpus))
    archive_packets([src], tmp_path / "a")
    target = corpus[0]
    add_verdict(tmp_path / "a", target["packet_id"], "hacked", by="jo", why="caches its outputs")
    html = build_report(tmp_path / "a")[0]
    # in the replay table, beside the original's own validation verdict
    replays = _section(html, "Replays under their originals")
    assert '<b class="tp tp-hacked" title="jo ' in replays and "caches its outputs" in replays
    # and counted in its device and operator's row
    kernel = _table(_parse(html), "device", "operator")
    counted = [cells[8] for _, cells in kernel[1:] if "hacked" in cells[8]]
    assert len(counted) == 1 and counted[0].endswith("hacked\xa0×1")
    assert 'class="tp tp-hacked"' not in build_report(tmp_path / "a", verdicts={})[0]


def test_strongest_and_weakest_never_share_a_packet(page: str, tmp_path: Path) -> None:
    def listed(html: str, heading: str) -> list[str]:
        # each packet's own id (not the id of the original a replay names)
        return re.findall(
            r"(?<!replay of</span> )<code>(sha256:[0-9a-f]{12})…</code>", _section(html, heading)
        )

    best, worst = listed(page, "Strongest evidence"), listed(page, "Weakest evidence")
    assert best and worst and not set(best) & set(worst)
    # three graded packets: two strongest, the other weakest; one packet: in one list only
    for n in (3, 1):
        src = tmp_path / f"in{n}.jsonl"
        src.write_bytes(b"".join(p.to_json() + b"\n" for p in make_packets(n)))
        archive_packets([src], tmp_path / f"a{n}")
        html = build_report(tmp_path / f"a{n}")[0]
        best, worst = listed(html, "Strongest evidence"), listed(html, "Weakest evidence")
        assert len(best) == (n + 1) // 2 and len(worst) == n - len(best)
        assert not set(best) & set(worst)
        if n == 1:
            assert "No other graded packets: each is in the list above." in html


def test_one_short_run_has_a_readable_time_axis(tmp_path: Path) -> None:
    packets = []
    for i, p in enumerate(make_packets(6)):
        d = p.to_dict()
        d.pop("packet_id")
        d["created_at"] = f"2026-11-20T09:30:{5 + 4 * i:02d}Z"  # 20 seconds in all
        d["lineage"]["run_id"] = "short"
        packets.append(d)
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(d) + "\n" for d in packets))
    archive_packets([tmp_path / "in.jsonl"], tmp_path / "a")
    chart = _section(build_report(tmp_path / "a")[0], "Pass rate over time")
    ticks = re.findall(
        r'<text class="kev-tick"[^>]*text-anchor="(?:start|middle|end)">(\d\d:\d\d:\d\d)</text>', chart
    )
    assert ticks == ["09:30:05", "09:30:10", "09:30:15", "09:30:20", "09:30:25"]
    assert "time measured (UTC, 2026-11-20)" in chart
    assert len(re.findall(r"<circle ", chart)) == 6  # six distinct times: six points


def test_long_names_are_cut_in_the_page_not_in_the_archive(page: str, archive: Path) -> None:
    assert LONG_MODEL in read_table(archive, ["model"]).column("model").to_pylist()
    p = _parse(page)
    assert LONG_MODEL in p.titles  # the whole name, on hover
    assert f'<span class="cut" title="{LONG_MODEL}">{LONG_MODEL}</span>' in page
    assert re.search(r"\.cut\{[^}]*text-overflow:ellipsis", page)


def test_content_security_policy_names_the_inline_code_by_hash(page: str) -> None:
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None
    policy = dict(d.strip().split(" ", 1) for d in csp.group(1).split(";"))
    assert policy["default-src"] == "'none'"
    assert "unsafe-inline" not in csp.group(1) and "nonce" not in csp.group(1)
    p = _parse(page)

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["style-src"].split() == [digest(t) for t in p.inline["style"]]
    assert policy["script-src"].split() == [digest(t) for t in p.inline["script"]]
    assert p.style_attrs == 0  # a style attribute would need 'unsafe-hashes'
    assert not re.search(r"\son[a-z]+=", page)  # no inline event handler


@pytest.mark.browser
def test_measurements_render_in_headless_chromium(archive: Path, tmp_path: Path) -> None:
    binary = _chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("CI: no chromium binary; scripts/install-chromium.sh should have installed it")
        pytest.skip("no chromium binary (scripts/install-chromium.sh installs it)")
    out = tmp_path / "report.html"
    write_report(archive, out, generated_at="2026-11-28T00:00:00Z")
    url = out.resolve().as_uri()
    dom = _browser(binary, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    marker = re.search(r'<span id="kev-render"([^>]*)>([^<]*)</span>', dom.stdout)
    assert marker is not None, dom.stdout[-2000:]
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', marker.group(1)))
    # the hashed scripts ran under the policy (a wrong hash blocks them: "no" stays)
    assert attrs["data-rendered"] == "ok" and attrs["data-errors"] == "0"
    assert attrs["data-charts"] == "6"  # kernel times, concurrency, speedup, SoL, failures, pass rate
    assert int(attrs["data-min-area"]) > 10_000
    assert "Content Security Policy" not in dom.stderr and "Refused" not in dom.stderr
    shot = ARTIFACTS / "kevidence-report-measurements.png"
    res = _browser(binary, "--hide-scrollbars", "--window-size=1100,5600", f"--screenshot={shot}", url)
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
