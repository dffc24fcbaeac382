"""The rule bands remember short strings they see again and again (versions, program and
kernel names, tensor names, dimension names): a hostile packet's long strings are checked
but never held by those caches, and no cache grows without bound."""

from __future__ import annotations

import json
from typing import Any

from kernel_evidence import validate
from kernel_evidence.rules import _checks, _common
from kernel_evidence.rules._common import CACHED_CHARS
from kernel_evidence.strategies import example_packet

#: memoising dicts whose names do not say CACHE
_OTHERS = ("_OUTPUT_NAMES", "_FOLD_CLASH", "_LEVEL_ORDER")


def _caches() -> list[tuple[str, dict[Any, Any]]]:
    """Every module-level dict of the rule bands that memoises what packets hold."""
    out = []
    for module in (*_checks.BANDS, _common):
        for name, value in vars(module).items():
            if isinstance(value, dict) and name.isupper() and ("CACHE" in name or name in _OTHERS):
                out.append((f"{module.__name__}.{name}", value))
    return out


def _strings(key: Any) -> list[str]:
    if isinstance(key, str):
        return [key]
    if isinstance(key, tuple):
        return [s for k in key for s in _strings(k)]
    return []


def test_long_strings_are_not_held() -> None:
    long = "x" * 5000
    d = example_packet().to_dict()
    del d["packet_id"]
    b = d["timing"]["baseline"]
    b["version"] = "12." + long
    b["call"] = "cublasLtMatmul(" + long + ")"
    d["replay"]["command"] = ["python" + long, "-c", "pass"]
    d["task"]["shapes"][0]["dims"] = {"M" + long: 1, "m" + long: 2}
    d["task"]["shapes"][0]["tensors"] = [{"name": "out" + long, "shape": [4, 4], "dtype": "bf16"}]
    d["profiler"] = [
        {"tool": "ncu", "of": {"side": "candidate"}, "kernels": [{"name": "memset" + long, "metrics": {}}]}
    ]
    assert validate(json.dumps(d).encode()).findings  # checked (the odd values are reported)
    caches = _caches()
    assert len(caches) >= 8, [n for n, _ in caches]
    for name, cache in caches:
        assert len(cache) <= 4096, name
        held = [s for k in cache for s in _strings(k) if len(s) > CACHED_CHARS]
        assert not held, f"{name} holds a string of {len(held[0])} characters"


def test_a_long_serving_model_name_is_not_held() -> None:
    """The serving floors remember a model per device and settings: not a hostile name."""
    d = json.loads(
        (
            __import__("pathlib").Path(__file__).resolve().parents[2]
            / "examples/packets/valid/serving_vllm_llama8b_h100.json"
        ).read_text()
    )
    del d["packet_id"]
    d["task"]["serving"]["model"] = "org/" + "very-long-model-name-" * 12 + "8b-instruct"
    validate(json.dumps(d).encode())
    for name, cache in _caches():
        held = [s for k in cache for s in _strings(k) if len(s) > CACHED_CHARS]
        assert not held, f"{name} holds a string of {len(held[0])} characters"
