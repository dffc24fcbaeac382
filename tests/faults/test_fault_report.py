"""Fault suite: HTML injection into every text the report shows.

Every free-text field of a packet that reaches the report (names, device, operator,
providers, versions, run and candidate ids, commands, failure messages, the grade reasons
and findings quoting them, the status of a packet kept with --allow-invalid), the
report's title and the archive folder's name carry a payload. The page must hold none of
it as markup: no element, attribute or script the report did not write itself.
(``tests/archive/test_report.py::test_report_escapes_packet_text`` holds the run id alone.)
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _faults import GOOD, run, write

PAYLOADS = [
    '"><img src=x onerror=alert(1)>',
    "<script>alert(2)</script>",
    "</title><svg onload=alert(3)>",
    "';alert(4)//</style><iframe src=javascript:alert(5)>",
]


def _evil(i: int, payload: str) -> dict[str, object]:
    d = json.loads(GOOD)
    d.pop("packet_id")
    d["subject"]["name"] = f"k{i}{payload}"
    d["hardware"]["device"] = f"GPU{payload}"
    d["hardware"]["arch"] = f"sm{payload}"
    d["task"]["operator"] = f"op{payload}"
    d["task"]["dtypes"] = [f"bf16{payload}"]
    d["timing"]["baseline"]["provider"] = f"lib{payload}"
    d["timing"]["baseline"]["version"] = f"1{payload}"
    d["timing"]["baseline"]["call"] = f"call{payload}"
    d["replay"]["command"] = ["python", f"b{payload}.py"]
    d["lineage"] = {"run_id": f"run{payload}", "candidate_id": f"c{payload}"}
    d["producer"]["name"] = f"tool{payload}"
    if i % 2:
        d["status"] = f"passed{payload}"  # invalid: kept with --allow-invalid, quoted in findings
        d["failure"] = {"failure_class": "runtime_error", "message": f"boom{payload}"}
    return d


class _Markup(HTMLParser):
    """The elements of a page, with their attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))


def _markup(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Markup()
    parser.feed(html)
    return parser.elements


def test_no_packet_text_becomes_markup(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "in"
    for i, payload in enumerate(PAYLOADS * 2):
        write(folder / f"p{i}.json", json.dumps(_evil(i, payload)).encode())
    write(folder / "clean.json", GOOD)
    archive = tmp_path / "arch<script>alert(6)</script>"
    code, _, err = run(capsys, "archive", str(folder), "--to", str(archive), "--allow-invalid")
    assert code == 0, err
    out = tmp_path / "r.html"
    title = "<script>alert(7)</script>"
    code, _, err = run(capsys, "report", str(archive), "-o", str(out), "--title", title)
    assert code == 0, err
    html = out.read_text()
    for payload in [*PAYLOADS, title, "<script>alert(6)</script>"]:
        assert payload not in html, payload
    elements = _markup(html)
    clean_html = _clean_report(capsys, folder / "clean.json", tmp_path)
    # no element the report of a clean archive lacks, no handler, no script or URL injected
    assert {tag for tag, _ in elements} <= {tag for tag, _ in _markup(clean_html)}
    for tag, attrs in elements:
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name, value)
            # text kept whole in an attribute that is neither a URL nor code (a chart's label,
            # a cut name's title) is inert
            inert = name in ("aria-label", "title")
            assert "javascript:" not in (value or "").lower() or inert, (tag, name, value)
            assert "alert(" not in (value or "") or inert, (tag, name, value)
    assert sum(tag == "script" for tag, _ in elements) == sum(
        tag == "script" for tag, _ in _markup(clean_html)
    )


def _clean_report(capsys: pytest.CaptureFixture[str], packet: Path, tmp_path: Path) -> str:
    clean = tmp_path / "clean"
    code, _, err = run(capsys, "archive", str(packet), "--to", str(clean))
    assert code == 0, err
    code, _, err = run(capsys, "report", str(clean), "-o", str(tmp_path / "c.html"))
    assert code == 0, err
    return (tmp_path / "c.html").read_text()
