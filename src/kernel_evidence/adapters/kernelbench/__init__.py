"""KernelBench: eval results joined with baseline timing files, or baseline files alone.

Reads ``runs/<run>/eval_results.json`` (one packet per evaluated sample) with the kernels
generated beside it (``level_<L>_problem_<P>_sample_<S>_kernel.py``, digested) and joins
each sample with the PyTorch reference's entry in a baseline timing file
(``results/timing/<HW>/baseline_time_<config>.json``) given in the same call. A baseline file
given without eval results gives one packet per timed reference problem instead. See
``docs/adapters/kernelbench.md`` for the mapping (data: ``adapters/kernelbench.toml``).

Options (``AdapterOptions.extra``), all optional:

``device``
    the GPU, when the files do not name it (it wins over the files and the folder name)
``level``
    the KernelBench level of the eval results, when no kernel file beside them says it
``baseline``
    which baseline file to join when several are given: its config (``torch``,
    ``torch_compile_inductor_default``, ...); default: eager (``torch``)
``method``
    the timing method, when it was not KernelBench's default (CUDA events)
``torch_version``
    the PyTorch version of the reference (the files do not record it)
``max_bytes`` (default 2 GiB)
    refuse larger input files
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import msgspec

from ..._gc import paused_gc
from ...devices import canonical_id
from ...errors import AdapterError
from ...models import EvidencePacket
from .. import AdapterOptions, AdapterResult
from .._envelope import utc_now
from .._read import max_bytes_option, walk_inputs
from ..flashinfer._io import read_maybe_gzip
from ._build import Builder
from ._files import BaselineFile, EvalResults, kernel_sources, parse_baseline, parse_eval_results, what_is

__all__ = ["ADAPTER", "KernelBenchAdapter"]

_WHAT = "a KernelBench eval_results.json or baseline_time_*.json"
_METHODS = (
    "cuda_events", "hip_events", "cupti", "host_clock", "profiler", "torch_profiler", "triton_do_bench", "other",
)  # fmt: skip


def _opt_int(extra: dict[str, object], name: str) -> int | None:
    v = extra.get(name)
    if v is None:
        return None
    try:
        out = int(str(v))
    except ValueError:
        raise AdapterError(f"option `{name}`: expected a positive integer, got {v!r}") from None
    if out < 1:
        raise AdapterError(f"option `{name}`: expected a positive integer, got {out}")
    return out


def _decode(data: bytes) -> Any:
    """The JSON document; KernelBench writes with Python's ``json.dump``, so a NaN or an
    infinity is a bare ``NaN``/``Infinity``, which msgspec refuses and :mod:`json` reads."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        if b"NaN" not in data and b"Infinity" not in data:
            raise
        try:
            return json.loads(data, parse_constant=_non_finite)
        except ValueError:
            pass
        raise


def _non_finite(word: str) -> str:
    # kept as the word the file wrote: a float NaN could not be written back as JSON
    return word


class KernelBenchAdapter:
    """KernelBench eval results and baseline timing files -> kernel packets."""

    name = "kernelbench"
    aliases: tuple[str, ...] = ("kernel-bench", "kbench")
    #: the keys ``--opt KEY=VALUE`` may set (any other is a usage error)
    options: tuple[str, ...] = ("baseline", "device", "level", "max_bytes", "method", "torch_version")
    description = (
        "KernelBench runs/<run>/eval_results.json joined with results/timing/<HW>/baseline_time_*.json "
        "(one packet per sample), or baseline timing files alone (one packet per problem)"
    )

    def read(self, inputs: Sequence[str], options: AdapterOptions) -> AdapterResult:
        extra = dict(options.extra or {})
        cap = max_bytes_option(extra)
        method = extra.get("method")
        if method is not None and str(method) not in _METHODS:
            raise AdapterError(f"option `method`: expected one of {', '.join(_METHODS)}, got {method!r}")
        warnings: list[str] = []
        evals: list[EvalResults] = []
        baselines: list[BaselineFile] = []
        for path, explicit in walk_inputs(inputs, (".json", ".json.gz")):
            try:
                got = self._read_one(path, cap)
            except AdapterError as exc:
                if explicit:
                    raise
                warnings.append(f"skipped: {exc}")
                continue
            if isinstance(got, EvalResults):
                evals.append(got)
            elif isinstance(got, BaselineFile):
                baselines.append(got)
            elif explicit:
                raise AdapterError(f"{path}: a JSON document of another kind; expected {_WHAT}")
        note = (
            f"timing method `{method}` given by the `method` option"
            if method
            else "KernelBench's default timer (CUDA events, HIP events on a ROCm build; L2 flushed between "
            "trials); the file does not record it"
        )
        builder = Builder(
            created_at=options.created_at or utc_now(),
            method=str(method) if method else "cuda_events",
            method_given=bool(method),
            method_note=note + "; all times in milliseconds (KernelBench's timing functions return ms)",
            device_option=str(extra["device"]) if extra.get("device") else None,
            torch_version=str(extra["torch_version"]) if extra.get("torch_version") else None,
            warnings=warnings,
        )
        with paused_gc():
            if evals:
                packets = self._evals(evals, baselines, builder, extra)
            else:
                packets = self._baselines(baselines, builder)
        if not packets:
            where = ", ".join(os.fspath(i) for i in inputs) or "(no inputs)"
            raise AdapterError(f"{where}: no KernelBench results found; expected {_WHAT}")
        ids = extra.get("packet_ids", True) is not False
        return AdapterResult(packets=[p.with_id() for p in packets] if ids else packets, warnings=warnings)

    @staticmethod
    def _read_one(path: str, cap: int) -> EvalResults | BaselineFile | None:
        data = read_maybe_gzip(path, cap, _WHAT)
        try:
            doc = _decode(data)
        except msgspec.DecodeError as exc:
            why = str(exc).replace("JSON is malformed: ", "")
            raise AdapterError(f"{path}: not JSON ({why}); expected {_WHAT}") from None
        except RecursionError:
            raise AdapterError(f"{path}: JSON nested too deeply; expected {_WHAT}") from None
        kind = what_is(doc)
        if kind == "eval":
            return parse_eval_results(path, doc)
        if kind == "baseline":
            return parse_baseline(path, doc)
        return None

    def _baselines(self, baselines: list[BaselineFile], builder: Builder) -> list[EvidencePacket]:
        packets: list[EvidencePacket] = []
        for b in baselines:
            packets.extend(builder.baseline_packets(b))
            self._baseline_device_warnings(b, builder)
            if b.untimed:
                builder.warnings.append(
                    f"{b.path}: {len(b.untimed)} entries without timing statistics skipped "
                    f"(first: {b.untimed[0]})"
                )
        return packets

    @staticmethod
    def _baseline_device_warnings(b: BaselineFile, builder: Builder) -> None:
        """Say where the devices of ``b``'s entries came from when not from the entries."""
        if builder.device_option:
            return
        used = builder.folder_used.pop(b.path, None)
        if used is not None:
            folder, generic = used
            why = f"`hardware: {generic}` names no device model" if generic else "entries without `hardware`"
            builder.warnings.append(
                f"{b.path}: {why}: the device is taken from the folder name `{folder}` "
                "(results/timing/<HW>/); pass the `device` option to state it"
            )
        if any(e.stats.hardware is None for e in b.entries) and b.folder_device is None:
            builder.warnings.append(
                f"{b.path}: entries without `hardware` and no results/timing/<HW>/ folder: the device is "
                "not recorded (pass the `device` option)"
            )

    def _evals(
        self,
        evals: list[EvalResults],
        baselines: list[BaselineFile],
        builder: Builder,
        extra: dict[str, object],
    ) -> list[EvidencePacket]:
        packets: list[EvidencePacket] = []
        used: list[BaselineFile] = []
        for ev in evals:
            base = self._pick_baseline(baselines, extra, builder, ev)
            if base is not None and base not in used:
                used.append(base)
            sources = kernel_sources(os.path.dirname(os.path.abspath(ev.path)))
            level = _opt_int(extra, "level")
            levels = {s.level for s in sources.values()}
            if level is None and len(levels) == 1:
                level = levels.pop()
            if level is None and base is not None:
                builder.warnings.append(
                    f"{ev.path}: the KernelBench level is not known (no level_<L>_problem_..._kernel.py "
                    "beside it): not joined with the baseline (pass the `level` option)"
                )
            made = builder.eval_packets(ev, level, base, sources)
            packets.extend(made)
            self._eval_warnings(ev, base, level, made, builder.warnings)
        for base in used:
            self._baseline_device_warnings(base, builder)
        for device, bdev, path in sorted(builder.mismatched):
            builder.warnings.append(
                f"{path}: baseline measured on `{bdev}`, samples on `{device}`: the two sides ran on "
                "different devices"
            )
        return packets

    @staticmethod
    def _pick_baseline(
        baselines: list[BaselineFile], extra: dict[str, object], builder: Builder, ev: EvalResults
    ) -> BaselineFile | None:
        """The baseline file to join ``ev`` with: the one the `baseline` option names, else
        the only one, else among those measured on the samples' device (when the files tell)
        the eager one, with a warning saying which."""
        if not baselines:
            return None
        want = extra.get("baseline")
        if want is not None:
            named = [b for b in baselines if b.config == str(want)]
            if not named:
                have = ", ".join(sorted({b.config for b in baselines}))
                raise AdapterError(
                    f"option `baseline`: no baseline file of config `{want}` among the inputs ({have})"
                )
            baselines = named
        if len(baselines) == 1:
            return baselines[0]
        pool = baselines
        device = builder.sample_device(ev)
        if device is not None and (want_id := canonical_id(device)) is not None:
            same = [b for b in baselines if builder.baseline_device_id(b) == want_id]
            pool = same or baselines
        eager = [b for b in pool if not b.compiled]
        pick = eager[0] if eager else pool[0]
        why = ", the samples' device" if pool is not baselines else ""
        builder.warnings.append(
            f"{ev.path}: {len(baselines)} baseline files given: joined with {pick.path} (`{pick.config}`"
            f"{why}); the `baseline` option picks another"
        )
        return pick

    @staticmethod
    def _eval_warnings(
        ev: EvalResults,
        base: BaselineFile | None,
        level: int | None,
        made: list[EvidencePacket],
        warnings: list[str],
    ) -> None:
        for where, why in ev.skipped[:10]:
            warnings.append(f"{ev.path}: entry {where} skipped: {why}")
        flagged = sum(1 for s in ev.samples if s.metadata.get("excessive_speedup") is True)
        if flagged:
            warnings.append(
                f"{ev.path}: {flagged} samples KernelBench itself flagged `excessive_speedup` (faster than "
                "its threshold, 10x by default, over the reference timed in the same evaluation)"
            )
        untimed = sum(1 for p in made if p.status.value == "passed" and p.timing is None)
        if untimed:
            warnings.append(
                f"{ev.path}: {untimed} correct samples without a runtime (-1: not measured): no timing"
            )
        if base is not None and level is not None:
            missing = sum(1 for p in made if p.timing is not None and p.timing.baseline is None)
            if missing:
                warnings.append(f"{ev.path}: {missing} timed samples whose problem is not in {base.path}")
        warnings.append(
            f"{ev.path}: no replay command (eval_results.json does not record the evaluation settings)"
        )


ADAPTER = KernelBenchAdapter()
