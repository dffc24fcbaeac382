"""vLLM / SGLang serving-benchmark adapter: one packet per benchmark run.

Reads ``vllm bench serve`` / ``benchmark_serving.py --save-result`` JSON of every version
(old and new key spellings, ``request_goodput:``, ``request_rate: "inf"``, ``--metadata``
keys), ``--append-result`` JSONL, ``vllm bench sweep serve`` run files, summaries
(``summary.json`` and ``summary.csv``) and failure files, ``vllm bench latency`` / ``vllm bench throughput --output-json``, SGLang
``bench_serving`` JSONL, InferenceX processed results and AIPerf/GenAI-Perf profile exports.
See ``docs/adapters/vllm.md`` for the key mapping (data: ``adapters/vllm.toml``).

Options (``AdapterOptions.extra``), all optional:

``device``/``hardware``, ``vendor``, ``gpu_count``
    the hardware, when the file's metadata does not name it (never guessed)
``engine``, ``engine_version``, ``tensor_parallel_size``, ``pipeline_parallel_size``,
``model``, ``dataset``
    workload facts the file may lack; options win over the file's metadata
``samples_dir``
    write per-request samples of large runs to a Parquet sidecar there (without it, a large
    run's packet references its source file by sha256; ``AdapterOptions.side_dir`` does not
    apply: the source file holds the samples already)
``inline_samples_max`` (default 10000)
    runs with at most this many sample values keep them inline in ``Stats.samples``
``max_bytes`` (default 2 GiB)
    refuse larger input files (read under the cap whatever they are: a link to a device or a
    pipe stops at the cap)
``goodput`` (e.g. ``ttft:200,tpot:50,e2el:1000``, milliseconds)
    recompute goodput from the per-request arrays with these SLOs (vLLM's ``--goodput``
    semantics) and check the file's ``request_goodput`` against it
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from ...errors import AdapterError, AdapterOptionError
from .. import AdapterOptions, AdapterResult
from .._envelope import utc_now
from .._read import is_junk_entry, max_bytes_option
from ._build import BuildContext, build_packet, classify
from ._csv import parse_csv_runs
from ._goodput import parse_goodput_option
from ._runs import GC_PAUSE_BYTES, duplicate_runs, gc_paused, parse_runs, read_bytes

__all__ = ["ADAPTER", "VllmAdapter"]

_SUFFIXES = (".json", ".jsonl", ".ndjson")
DEFAULT_INLINE_MAX = 10_000


def _int_option(extra: dict[str, object], name: str, default: int) -> int:
    value = extra.get(name)
    if value is None:
        return default
    try:
        out = int(str(value))
    except ValueError:
        raise AdapterOptionError(f"option `{name}`: expected an integer, got {value!r}") from None
    if out < 0:
        raise AdapterOptionError(f"option `{name}`: expected a non-negative integer, got {out}")
    return out


def _expand(inputs: Sequence[str], warnings: list[str]) -> Iterator[tuple[str, bool]]:
    """(path, named explicitly) for each input; directories are walked (sorted)."""
    for item in inputs:
        path = Path(item)
        if not path.is_dir():
            yield str(item), True
            continue
        files = sorted(
            p
            for p in path.rglob("*")
            if p.is_file()
            and (p.name.lower().endswith(_SUFFIXES) or p.name.lower() == "summary.csv")
            and not is_junk_entry(p, path)
        )
        for f in files:
            name = f.name.lower()
            if name == "summary.csv" and (
                any(f.parent.rglob("run=*.json")) or any(f.parent.rglob("summary.json"))
            ):
                warnings.append(
                    f"{f}: skipped: sweep summary table of runs already read from the JSON files below it"
                )
                continue
            if name.endswith(".pytorch.json"):
                warnings.append(f"{f}: skipped: PyTorch benchmark-database sidecar, not a result")
                continue
            if name == "warmup.json" and any(s.name.startswith("run=") for s in f.parent.glob("run=*.json")):
                warnings.append(f"{f}: skipped: sweep warm-up run (name it explicitly to ingest it)")
                continue
            if name.startswith("sla--") and name.endswith(".json") and any(f.parent.rglob("run=*.json")):
                warnings.append(
                    f"{f}: skipped: SLA search summary of runs already read from the run=N.json files"
                )
                continue
            if name == "summary.json" and any(s.name.startswith("run=") for s in f.parent.glob("run=*.json")):
                warnings.append(f"{f}: skipped: sweep summary of runs already read from the run=N.json files")
                continue
            yield str(f), False


def _undecodable(err: Exception, data: bytes) -> str:
    """What made the JSON unreadable below the parser: nesting depth or bytes that are not UTF-8."""
    if isinstance(err, RecursionError):
        return "JSON nested too deeply"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 at byte {exc.start}"
    return "not valid UTF-8"


class VllmAdapter:
    """Serving-benchmark results (vLLM, SGLang, InferenceX, AIPerf) -> serving packets."""

    name = "vllm"
    aliases: tuple[str, ...] = ("sglang", "vllm-bench")
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = (
        "dataset",
        "device",
        "device_count",
        "count",
        "engine",
        "engine_version",
        "goodput",
        "gpu",
        "gpu_count",
        "hardware",
        "inline_samples_max",
        "max_bytes",
        "model",
        "pipeline_parallel_size",
        "pp",
        "samples_dir",
        "tensor_parallel_size",
        "tp",
        "use_numpy",
        "vendor",
    )
    description = (
        "vLLM bench serve/latency/throughput and sweep results, SGLang bench_serving JSONL, "
        "InferenceX results, AIPerf profile exports: one serving packet per run"
    )

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        """One packet per run found in ``inputs`` (files or directories)."""
        extra = dict(options.extra or {})
        use_numpy = extra.get("use_numpy")
        ctx = BuildContext(
            created_at=options.created_at or utc_now(),
            extra=extra,
            inline_max=_int_option(extra, "inline_samples_max", DEFAULT_INLINE_MAX),
            samples_dir=str(extra["samples_dir"]) if extra.get("samples_dir") else None,
            use_numpy=None if use_numpy is None else str(use_numpy).lower() not in ("0", "false", "no"),
            goodput=parse_goodput_option(extra.get("goodput")),
            side_base=options.side_base,
        )
        max_bytes = max_bytes_option(extra)
        ctx.max_bytes = max_bytes
        try:
            return self._read(inputs, ctx, max_bytes)
        finally:
            options.side_files.extend(ctx.side_files)

    def _read(self, inputs: Sequence[str], ctx: BuildContext, max_bytes: int) -> AdapterResult:
        packets = []
        for path, explicit in _expand(inputs, ctx.warnings):
            data = b""
            try:
                data = read_bytes(path, max_bytes=max_bytes)
                # decoding millions of per-request values: pause the cyclic GC meanwhile
                with gc_paused(len(data) > GC_PAUSE_BYTES):
                    runs = (
                        parse_csv_runs(path, data)
                        if path.lower().endswith(".csv")
                        else parse_runs(path, data)
                    )
                    ctx.current = (path, data)
                    built = [build_packet(rec, classify(rec), ctx) for rec in runs]
                repeated = duplicate_runs(runs)
                if repeated is not None:
                    ctx.warn(f"{path}: {repeated}")
            except (RecursionError, UnicodeDecodeError) as err:
                exc = AdapterError(f"{path}: {_undecodable(err, data)}; expected a benchmark result")
                if explicit:
                    raise exc from None
                ctx.warn(f"skipped: {exc}")
                continue
            except AdapterError as exc:
                if explicit:
                    raise
                ctx.warn(f"skipped: {exc}")
                continue
            finally:
                ctx.current = None
            packets.extend(built)
        if not packets:
            raise AdapterError(
                f"{', '.join(os.fspath(i) for i in inputs) or '(no inputs)'}: "
                "no serving benchmark results found"
            )
        return AdapterResult(packets=packets, warnings=ctx.warnings)


ADAPTER = VllmAdapter()
