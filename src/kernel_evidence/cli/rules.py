"""``kevidence rules``: list the validation rules, the baseline registry and the peak table."""

from __future__ import annotations

import json

import typer

from ..rules import iter_rules
from ..rules._tables import all_devices, baseline_entry, baseline_names
from ._common import EXIT_USAGE, fail, out_console


def register(app: typer.Typer) -> None:
    @app.command("rules")
    def rules_cmd(
        fmt: str = typer.Option("text", "--format", "-f", help="text, json or markdown."),
        baselines: bool = typer.Option(False, "--baselines", help="List the baseline registry instead."),
        peaks: bool = typer.Option(False, "--peaks", help="List the device peak table instead."),
    ) -> None:
        """List every validation rule with its id, severity and documentation."""
        if fmt not in ("text", "json", "markdown"):
            fail(f"--format must be text, json or markdown, got `{fmt}`", EXIT_USAGE)
        if baselines and peaks:
            fail("--baselines and --peaks list different tables: give one of them", EXIT_USAGE)
        out = out_console()
        if baselines:
            rows = [(n, baseline_entry(n).kind) for n in baseline_names()]  # type: ignore[union-attr]
            if fmt == "json":
                print(json.dumps([{"name": n, "kind": k} for n, k in rows], indent=2))
            elif fmt == "markdown":
                print("| baseline | kind |\n|---|---|")
                for n, k in rows:
                    print(f"| {_cell(n)} | {k} |")
            else:
                for n, k in rows:
                    out.print(f"{n:<28} {k}", markup=False)
            return
        if peaks:
            devs = all_devices()
            if fmt == "json":
                print(
                    json.dumps(
                        [
                            {
                                "key": d.key,
                                "vendor": d.vendor,
                                "bandwidth_GBps": d.bandwidth / 1e9,
                                "TFLOPs": {k: v / 1e12 for k, v in d.flops.items()},
                                "source": d.source,
                            }
                            for d in devs
                        ],
                        indent=2,
                    )
                )
            elif fmt == "markdown":
                print(
                    "| device | vendor | HBM GB/s | peak TFLOP/s by dtype | source |\n|---|---|---|---|---|"
                )
                for d in devs:
                    fl = ", ".join(f"{k} {v / 1e12:g}" for k, v in d.flops.items())
                    print(f"| {d.key} | {d.vendor} | {d.bandwidth / 1e9:g} | {fl} | {_cell(d.source)} |")
            else:
                for d in devs:
                    fl = ", ".join(f"{k} {v / 1e12:g}" for k, v in d.flops.items())
                    out.print(
                        f"{d.key:<10} {d.vendor:<7} {d.bandwidth / 1e9:>7g} GB/s  TFLOP/s: {fl}", markup=False
                    )
            return
        rules = list(iter_rules())
        if fmt == "json":
            print(
                json.dumps(
                    [
                        {"id": r.id, "severity": r.severity, "title": r.title, "hint": r.hint, "doc": r.doc}
                        for r in rules
                    ],
                    indent=2,
                )
            )
        elif fmt == "markdown":
            print("| id | severity | rule | what to do |\n|---|---|---|---|")
            for r in rules:
                print(f"| {r.id} | {r.severity} | {_cell(r.title)} | {_cell(r.hint)} |")
        else:
            for r in rules:
                out.print(f"{r.id} {r.severity:<7} {r.title}", markup=False)
                out.print("    " + " ".join(r.doc.split()), markup=False)
                out.print(f"    hint: {r.hint}", markup=False)


def _cell(text: str) -> str:
    """Text for a markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")
