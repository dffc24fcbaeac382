"""The adapter registry: built-in adapters by a table, plug-ins through the entry-point group
(looked up once), a name claimed twice an error naming both; the fake adapter of ``_fake``
stands for a plug-in. Also the structured warnings and the exit codes by error type."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

import kernel_evidence.adapters as registry
from kernel_evidence import cli
from kernel_evidence.adapters import (
    ENTRY_POINT_GROUP,
    Adapter,
    AdapterOptions,
    AdapterWarning,
    adapter_sources,
    available_adapters,
    get_adapter,
    missing_fields,
)
from kernel_evidence.errors import (
    AdapterError,
    AdapterOptionError,
    KernelEvidenceError,
    UnknownAdapter,
    UsageError,
)


def _plugins(monkeypatch: pytest.MonkeyPatch, *values: str) -> list[int]:
    """Install entry points ``name=value`` (``_fake:ADAPTER``) for the test; the returned
    list counts the lookups."""
    calls: list[int] = []

    def fake_entry_points(*, group: str) -> list[EntryPoint]:
        assert group == ENTRY_POINT_GROUP
        calls.append(1)
        return [EntryPoint(v.split("=")[0], v.split("=")[1], group) for v in values]

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    registry._reset_registry()
    return calls


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    registry._reset_registry()
    yield
    registry._reset_registry()


def test_the_fake_adapter_offers_the_interface() -> None:
    from _fake import ADAPTER

    assert isinstance(ADAPTER, Adapter)


def test_builtin_table_keeps_its_shape() -> None:
    # other adapters are added by one line each: "name": ".module"
    assert registry._BUILTIN["ncu"] == ".ncu"
    assert all(isinstance(v, str) and v.startswith(".") for v in registry._BUILTIN.values())


def test_a_plugin_is_found_by_name_and_alias(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = _plugins(monkeypatch, "fake=_fake:ADAPTER")
    ad = get_adapter("fake")
    assert ad.name == "fake" and get_adapter("fake-alias") is ad
    assert available_adapters()["fake"] is ad and "ncu" in available_adapters()
    assert "plug-in `fake` (_fake:ADAPTER" in adapter_sources()["fake-alias"]
    assert "built-in adapter `ncu`" in adapter_sources()["nsight-compute"]
    src = tmp_path / "k.json"
    src.write_text(json.dumps({"name": "gemm", "mean_us": 12.5}))
    res = ad.read([str(src)], AdapterOptions(created_at="2026-11-22T01:02:03Z"))
    assert res.packets[0].subject.name == "gemm" and res.packets[0].timing.stats.mean == 12.5  # type: ignore[union-attr]
    # the entry points are looked up once, whatever is asked for afterwards
    get_adapter("ncu"), get_adapter("fake"), available_adapters()
    assert len(calls) == 1


def test_two_plugins_claiming_one_name_is_an_error_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, "fake=_fake:ADAPTER", "other=_fake:CLASHING")
    with pytest.raises(AdapterError) as info:
        available_adapters()
    msg = str(info.value)
    assert "`fake`" in msg and "_fake:ADAPTER" in msg and "_fake:CLASHING" in msg


def test_a_plugin_claiming_a_builtin_alias_is_an_error_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, "fake3=_fake:CLAIMS_BUILTIN")
    with pytest.raises(AdapterError) as info:
        get_adapter("ncu")  # even a built-in asked for by its own name: the clash is not hidden
    msg = str(info.value)
    assert "`nsight-compute`" in msg and "built-in adapter `ncu`" in msg and "_fake:CLAIMS_BUILTIN" in msg


def test_a_broken_plugin_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch, "nope=_fake_does_not_exist:ADAPTER")
    with pytest.raises(AdapterError, match=r"plug-in `nope` .* failed to load"):
        available_adapters()
    _plugins(monkeypatch, "bad=json:loads")
    with pytest.raises(AdapterError, match="does not offer name/aliases/read"):
        available_adapters()


def test_an_unknown_name_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _plugins(monkeypatch)
    with pytest.raises(UnknownAdapter, match="no adapter named `nope`") as info:
        get_adapter("nope")
    assert isinstance(info.value, AdapterError) and isinstance(info.value, UsageError)


def test_adapter_warning_is_a_string_with_missing_fields() -> None:
    w = AdapterWarning("a.csv: no device", {"hardware.device": "<GPU model>"})
    assert w == "a.csv: no device" and "no device" in w and w.split()[0] == "a.csv:"
    assert w.message == "a.csv: no device" and type(w.message) is str
    assert missing_fields(w) == {"hardware.device": "<GPU model>"} and missing_fields("plain") == {}
    back = pickle.loads(pickle.dumps(w))
    assert back == w and back.missing == w.missing
    assert "--" not in w


def test_error_tree() -> None:
    assert issubclass(UsageError, KernelEvidenceError) and issubclass(UsageError, ValueError)
    assert issubclass(AdapterOptionError, AdapterError) and issubclass(AdapterOptionError, UsageError)
    from kernel_evidence._ingest import OptionError

    assert issubclass(OptionError, UsageError)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code or 0, out, err


def test_cli_phrases_the_advice_and_drops_it_once_followed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _plugins(monkeypatch, "fake=_fake:ADAPTER")
    src = tmp_path / "k.json"
    src.write_text(json.dumps({"name": "gemm", "mean_us": 3}))
    code, out, err = _run(capsys, "ingest", "fake", str(src))
    assert code == 0 and json.loads(out)["subject"]["name"] == "gemm"
    assert "add --set hardware.vendor=nvidia --set 'hardware.device=<GPU model>'" in err
    assert "no command recorded; add --replay-cmd" in err
    code, _, err = _run(
        capsys,
        "ingest",
        "fake",
        str(src),
        "--set",
        "hardware.vendor=nvidia",
        "--set",
        "hardware.device=H100",
        "--replay-cmd",
        "python bench.py",
    )
    assert code == 0 and "warning" not in err


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["ingest", "no-such-tool", "x.json"], 2),  # UnknownAdapter
        (["ingest", "fake", "{k}", "--opt", "subject=3"], 2),  # AdapterOptionError from the adapter
        (["ingest", "fake", "{k}", "--opt", "nope=1"], 2),  # OptionError: not an option of the adapter
        (["ingest", "fake", "{bad}"], 1),  # AdapterError
    ],
)
def test_cli_exit_codes_follow_the_error_type(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
    code: int,
) -> None:
    _plugins(monkeypatch, "fake=_fake:ADAPTER")
    (tmp_path / "k.json").write_text("{}")
    (tmp_path / "bad.json").write_text("not json")
    names: dict[str, Any] = {"k": tmp_path / "k.json", "bad": tmp_path / "bad.json"}
    got, _, err = _run(capsys, *(a.format(**names) for a in args))
    assert got == code, err
    assert err.startswith("kevidence: error: ")
