"""``kevidence metrics [--format text|markdown|json]``: the cross-vendor canonical-metric table.

Joined from every ``adapters/<tool>.toml`` present (see docs/adapters/README.md for the
layout); the work is :func:`kernel_evidence._ingest.render_metric_table`.
"""

from __future__ import annotations

import sys

import typer

from ._common import EXIT_USAGE, fail


def register(app: typer.Typer) -> None:
    @app.command("metrics")
    def metrics_cmd(
        fmt: str = typer.Option("text", "--format", "-f", help="text, markdown or json."),
    ) -> None:
        """Print which source metric each tool maps to each canonical kernel metric."""
        from .._ingest import OptionError, render_metric_table

        try:
            text = render_metric_table(fmt)
        except OptionError as exc:
            fail(str(exc), EXIT_USAGE)
        sys.stdout.write(text)
