"""The public API is curated: nothing appears in or disappears from it by accident."""

import kernel_evidence

EXPECTED = {
    "SCHEMA_VERSION", "AdapterError", "ArchiveError", "EvidencePacket", "FailureClass", "Finding",
    "Grade", "InputError", "KernelEvidenceError", "LimitExceeded", "Limits", "MissingExtra",
    "PacketInvalid", "Report", "SchemaVersion", "Status", "__version__", "load_schema", "models",
    "read_packets", "strategies", "validate", "validate_paths", "write_packets", "migrate", "MigrationError",
    "harness", "Recorder", "reward", "archive", "archive_packets", "devices", "export_packets", "ingest", "read_raw_table",
}  # fmt: skip


def test_all_is_exactly_the_curated_set() -> None:
    assert set(kernel_evidence.__all__) == EXPECTED


def test_all_is_sorted_and_resolvable() -> None:
    names = kernel_evidence.__all__
    assert names == sorted(names)
    for name in names:
        assert hasattr(kernel_evidence, name), name


def test_no_accidental_public_modules() -> None:
    public = {n for n in vars(kernel_evidence) if not n.startswith("_")}
    # submodules imported as a side effect are allowed; anything else must be in __all__
    submodules = {
        "adapters",
        "cli",
        "errors",
        "io",
        "models",
        "rules",
        "schema",
        "strategies",
        "units",
        "harness",
        "archive",
        "rawtable",
        "audit",
        "devices",
    }
    assert public - set(kernel_evidence.__all__) <= submodules


def test_strategies_without_hypothesis_name_the_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "try:\n    import kernel_evidence.strategies\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == (
        "MissingExtra kernel_evidence.strategies needs the `hypothesis` package: "
        "pip install 'kernel-evidence[test]'"
    )


def test_the_package_says_it_is_typed() -> None:
    """PEP 561: a harness that type-checks its own code sees our annotations."""
    from importlib.resources import files

    assert (files("kernel_evidence") / "py.typed").is_file()


def test_errors_survive_pickling() -> None:
    # an error raised in a worker process (``validate --jobs``, a damaged .ncu-rep read in a
    # child) reaches the caller pickled: it must come back the same, not as a TypeError
    import pickle

    from kernel_evidence.errors import (
        AdapterError,
        InputError,
        LimitExceeded,
        MissingExtra,
        PacketInvalid,
    )

    for exc in (
        InputError("run.ncu-rep", "line 3", "expected a report"),
        LimitExceeded("big.json", None, "larger than the cap"),
        AdapterError("run.json: not a result"),
        MissingExtra("ncu-report", "ncu", "run.ncu-rep: reading .ncu-rep reports"),
        PacketInvalid({"errors": 1}, "packet.json: 1 error"),
    ):
        again = pickle.loads(pickle.dumps(exc))
        assert type(again) is type(exc) and str(again) == str(exc) and vars(again) == vars(exc)
