"""KE1xx: the replay reproduces the run."""

from __future__ import annotations

import ipaddress
import itertools
import operator
import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from ._common import CACHED_CHARS, lazy_re
from ._context import Add, Ctx
from ._engine import declare

declare(
    "KE101",
    "error",
    "replay command present",
    "record the exact argv that reproduces the run in /replay/command",
    "Every packet, whatever its status, MUST carry `replay.command`: a non-empty argv whose "
    "first element names the program. Without it the packet is not evidence.",
)
declare(
    "KE102",
    "warning",
    "replay pins the code",
    "record /replay/repository/commit or /replay/container/digest",
    "A replay SHOULD pin the code it runs: a repository commit or a container digest.",
)
declare(
    "KE103",
    "error",
    "the replay runs something",
    "record the command that ran the benchmark, not one that prints it or does nothing",
    "`replay.command` MUST run the measurement: a program that does nothing or only prints "
    "(`true`, `:`, `echo ...`, `exit 0`, `sleep`, `sh -c 'exit 0'`, `bash -lc :`, `python -c "
    "pass`), alone or behind `env`, `time`, `nice`, `timeout`, `srun`/`salloc`, `mpirun` "
    "(their options read with their values: `timeout -s KILL 60 true`, `srun -p q --gres gpu:1 "
    "true`), `sbatch --wrap SCRIPT`, or a container (`docker run IMAGE true`, every option "
    "of `docker`/`podman run` read with its value, an `--entrypoint` that replaces what runs, "
    "`docker compose run SERVICE true`), a shell script that runs none of it (only comments, "
    "`exit` first, `true || CMD`, `false && CMD`), a `python -c` whose code never runs what it "
    "names (`if False:`, `subprocess.run(['true'])`), a system query (`nvidia-smi`, "
    "`rocm-smi`, `uname`), a viewer of a stored "
    "result (`cat`, `jq`, `head`, a `python -c` that only loads a file and prints or writes it "
    "out, `python -m json.tool`, `ncu --import REPORT`, `nsys stats`/`export`, `git show`/`log`/"
    "`cat-file`/`diff`, `docker logs`/`inspect`/`ps`/`cp`, an `awk` program of BEGIN blocks "
    "only), or a run that only lists or prints what it would do (`make -n`/`-t`/`-q`, "
    "`pytest --collect-only`/`--setup-plan`/`--setup-only`/`--fixtures`/`--markers`, "
    "`--help` or `--version` given to the program that runs, behind wrappers, `python -m` "
    "or inside `bash -c`), or is told to do no work (`--num-prompts 0`, `--iters 0`, "
    "`--repeats 0`), reproduces nothing. Nor can a replay run under a `timeout` shorter than "
    "the run it reproduces took (`timing.serving.duration`, else the candidate's timed work "
    "per device): it was stopped first. A packet that records a measurement (`timing.stats` "
    "or `timing.serving`) MUST NOT be replayed by a benchmark told not to measure: one that "
    "loads stored results (`--load-results FILE`, `--results-from`, `--reuse-results`, "
    "`--load-timings`...; not `--results FILE`, `--from-json`, `--cached` or `--use-cache`, as "
    "often where results go, a config or a compile cache), runs nothing (`--no-run`, "
    "`--skip-bench`, `--print-only`, `--no-timing`...), or runs dry (`--dry-run`, `--dryrun`) "
    "on the accelerator the packet measured (a dry run on the CPU the packet names, as a "
    "harness runs CPU stand-ins, is let through); a script that also runs the same program "
    "without the flag (`bench --dry-run && bench`), or another program after it (a preflight: "
    "`hf download M --dry-run && vllm bench ...`), measures.",
)
declare(
    "KE104",
    "error",
    "a pinned commit is a commit",
    "record the full commit hash (`git rev-parse HEAD`), not a branch, tag or `HEAD`",
    "`replay.repository.commit`, when given, MUST be a commit hash (7 to 64 hexadecimal "
    "digits): a branch (`main`), a tag (`v1.4.0`) or `HEAD` moves, and pins nothing; one "
    "digit repeated, the id of git's empty tree or empty blob "
    "(`4b825dc642cb6eb9a060e54bf8d69288fbee4904`, or its SHA-256 form), or the SHA-1, SHA-256 "
    "or MD5 of empty input or of a single newline (`da39a3ee5e6b...`, `adc83b19e793...`, "
    "`e3b0c44298fc...`, `01ba4719c80b...`; an id sharing the first 12 digits of any of these), "
    "is a hash of nothing; nor MAY it be a placeholder over its whole length: one digit "
    "repeated but at one or two positions (`000...0001`, 16 digits or more), a counting run "
    "(`0123456789abcdef0123...`, `fedcba98...`) or a unit repeated at least twice that counts, "
    "in hexadecimal order or in the order people write the digits (`abcd` x 10, `abcdef...`, "
    "`1234567890abcdef` x 4, `1234567890` x 4, `fedcba0987654321...`), is a hexspeak word "
    "(`deadbeef` x 5, `cafebabe...`) or two digits (`ab` x 20).",
)
declare("KE105", "warning", "a container is pinned by its digest",
     "record /replay/container/digest (`docker inspect --format '{{.RepoDigests}}'`)",
     "A container image SHOULD carry its digest: a tag, moving (`latest`, none, `nightly`, "
     "`main`...) or versioned (`24.05-py3`, rebuilt in place), may name other bits tomorrow; "
     "a digest of one repeated digit (`sha256:000...`), a placeholder (as KE104's: one digit "
     "repeated but at two positions or fewer, a counting run, `sha256:` + `deadbeef` x 8, "
     "`abcd` x 16, `1234567890abcdef` x 4), or the hash of empty input or of a single newline "
     "(`sha256:e3b0c442...b855`, `sha256:01ba4719...546b`), in `digest` or in the image "
     "reference (`image@sha256:...`), names no image; a digest in the image reference other "
     "than `digest` names a second image (pointer `/replay/container`); and a `docker`/"
     "`podman`/`nerdctl run` in `replay.command` of another image than `replay.container."
     "image` (by name and tag; `docker.io/`, `library/` aside) that does not carry its digest "
     "runs a container no pin names (pointer `/replay/command`).", caps="C")  # fmt: skip
declare(
    "KE106",
    "error",
    "the replay runs what the packet records",
    "record the replay command that ran this workload, or the workload this command runs",
    "A workload flag that `replay.command` gives the benchmark it runs (found behind wrappers, "
    "containers, `python -m` and inside `sh -c`/`bash -lc` scripts) MUST NOT contradict the "
    "packet. A serving client (`vllm bench serve`, `benchmark_serving.py`, SGLang "
    "`bench_serving`, guidellm) or server (`vllm serve`, SGLang `launch_server`): `--model` "
    "against `task.serving.model` (hub ids compared by their last component, so a quantized "
    "`...-FP8` is another model; a local path or an alias only when the parameter counts they "
    "name differ; a `--served-model-name` alias is no model), `--num-prompts`, "
    "`--random-input-len`/`--input-len`/`--sonnet-input-len` (a `--random-prefix-len` added or "
    "not), `--random-output-len`/`--output-len`, `--max-concurrency`, `--request-rate` and "
    "`--tensor-parallel-size`/`-tp` against `num_prompts`, `input_len`, `output_len`, "
    "`max_concurrency`, `request_rate` and `tensor_parallel_size` (pointer: that field); a "
    "server's (or offline engine's) `--quantization` (vLLM's `-q`) naming a weight format "
    "narrower than 16 bits (fp8, int8, int4, AWQ, GPTQ, bitsandbytes, marlin, w8a8...) MUST NOT "
    "run beside dtypes (`task.dtypes` and `timing.conditions.dtypes`, those recorded) that are "
    "all 16-bit or wider: it serves another precision (pointer `/replay/command`; "
    "`--kv-cache-dtype` and `--dtype` are no weight format). A "
    "kernel benchmark: `--m`/`--n`/`--k` (or `-m -n -k`, `--M --N --K`, all three given) and "
    "`--shape 8192x8192x8192` (or a shape id) against the dims of the timed shape "
    "(`timing.shape_id`), `--dtype` against `task.dtypes` (pointer: `/replay/command`). A flag "
    "given several values (repeated, or `--request-rate 1 2 4`: a sweep) needs the packet's "
    "among them, but a serving flag given again in one program's argv counts by its last "
    "value (argparse keeps it: `--num-prompts 1000 ... --num-prompts 100` runs 100), and a "
    "serving flag's unique prefix is that flag (`--max-conc 256`, as argparse reads it; a "
    "prefix of two flags is none); a `$NAME` is read as `replay.env` gives it, or as a plain "
    "`NAME=value` or `export NAME=value` before it in a `sh -c` script of simple commands sets "
    "it (not a `NAME=value CMD` prefix, nor inside `if`, a loop, or after `read`/`source`/"
    "`eval`); a value the shell fills in otherwise (`$N`, `$(...)`) and a replay with no such "
    "flag (a suite, `--shapes all`) contradict nothing. The run's own flags (pointer: `/replay/command`): a "
    "check turned off (`--no-verify`, `--skip-verify`, `--no-check`, `--skip-correctness`, "
    "`--no-validate`, `--verify false`...) MUST NOT run beside a passed `validation.verdict`; a "
    "`--baseline` (`--baseline-provider`, `--baseline-impl`...) MUST NOT name another baseline "
    "than a vendor library's `timing.baseline.provider` (case and punctuation aside): a "
    "reference (`torch_naive`, `eager`, `numpy`, `torch`, a reference of the registry) or "
    "another vendor library (`cuDNN` for cuBLASLt; cuBLAS and cuBLASLt, hipBLAS, rocBLAS and "
    "hipBLASLt, oneMKL and oneDNN are one family; a name it cannot place, `best`, says "
    "nothing); a count of timed repeats (`--repeats`, `--num-repeats`, `--reps`; `--iters`, "
    "`--n-iter`, `--iterations` only without one: beside it they are per repeat) MUST NOT be "
    "fewer than `timing.repeats` (else `timing.conditions.repeats`): a larger one may be a cap "
    "a stop rule ended under; a count of warm-up runs (`--warmup-iters`, `--num-warmup`, "
    "`--warmup-runs`...) MUST NOT be fewer than `timing.warmup`, and a bare `--warmup` (often "
    "milliseconds, as Triton's `do_bench` reads it; Triton's `--rep` is not read) not 0. And "
    "a replay MUST run the code `replay.repository` pins: with a commit and `dirty` not true, "
    "no command before the benchmark may change the checked-out code (`git apply`, `git am`, "
    "`patch`, `sed -i`/`perl -pi` on a source file of its folder (`.py`, `.cu`, `.cpp`...; "
    "not a configuration file, nor a path outside it), "
    "`git pull`/`merge`/`rebase`/`cherry-pick`/`revert`, `git stash pop`/`apply`, "
    "`git checkout`/`switch`/`reset --hard`/`restore --source` to a ref other than the pinned "
    "commit or a prefix of it); `git submodule update`, `git fetch`, a checkout of the pinned "
    "commit (in the replay's folder, or in a clone of `replay.repository.url` it `cd`s into), "
    "and git run in another folder (a dependency) are let through; a patched tree is recorded "
    "with `dirty: true`.",
)


declare(
    "KE107",
    "warning",
    "every recorded digest is a hash of something",
    "record the SHA-256 of the file itself (`sha256sum FILE`), or leave the digest out",
    "A SHA-256 digest the packet records beside the replay's container (`compile.source_digest`, "
    "`compile.artifacts[].sha256`, `replay.inputs[].sha256`, `task.reference.source.sha256`, "
    "`profiler[].source.sha256`, `profiler[].raw_table.sha256`, "
    "`timing.serving.samples_artifact.sha256` and the baseline's) SHOULD be the hash of "
    "content: one digit repeated, a placeholder (as KE104's: a counting run, a hexspeak word or "
    "a short unit repeated) or the SHA-256 of empty input names no file, and a packet that "
    "carries one fabricated its record. Nor SHOULD a digest recorded for one kind of artifact "
    "equal one recorded for another kind (code: `compile.source_digest`, `compile.artifacts`, "
    "`task.reference.source`; a profiler capture's `source` and `raw_table`; a serving "
    "`samples_artifact`; the container's digest; `replay.inputs` only against the container): "
    "a profiler report is never the source file, so one of the two is a copied hash, not the "
    "hash of its file (pointer: the later one, in that order).",
    caps="C",
)
declare(
    "KE108",
    "warning",
    "the replay runs fetchable, pinned code on the machine it records",
    "record the remote URL of the repository, install only pinned code, and run the client against "
    "the server on the recorded machine",
    "A replay SHOULD run code another machine can fetch, and only that, on the hardware the packet "
    "records: `replay.repository.url` names a remote repository (not a `file:` URL, a local path "
    "or `localhost`, nor a template: `<owner>/<repo>`, `{repo}`, `your-org/your-repo`, "
    "`user/repo`); no command before the benchmark fetches and runs code no pin names (`curl "
    "URL | bash`, `wget -O- URL | sh`, `... | python -`) or installs a repository at a moving "
    "ref (`pip install git+URL`, `git+URL@main`: a ref other than a commit hash); and a "
    "serving client (`vllm bench serve`, `benchmark_serving.py`, SGLang `bench_serving`, "
    "guidellm) is not pointed (`--base-url`, `--host`, guidellm's `--target`) at a public host "
    "(a domain name or a public address: not loopback, a private or link-local address, a "
    "bare name, `*.local`, `*.internal`, `*.svc`, `*.lan`...): that measures another "
    "machine than the one the packet records. Nor SHOULD `replay.container.image` name another "
    "vendor's GPU stack than `hardware.vendor`'s (pointer `/replay/container/image`): a ROCm "
    "image (a `rocm` or `rocmN` token in its repository path or tag: `rocm/pytorch`, "
    "`...:v0.4-rocm620`) on NVIDIA hardware, or a CUDA image (`nvcr.io/nvidia/...`, "
    "`nvidia/cuda`, a `cuda`, `cudaN`, `cudnnN` or `cu1NN` token) on an AMD GPU (arch `gfx...`, "
    "an Instinct or Radeon device), cannot have run the kernel there; an image naming both "
    "stacks, or neither (`python:3.11`, `vllm/vllm-openai`), says nothing.",
    caps="C",
)


def check(p: Any, ctx: Ctx, add: Add) -> None:
    seen = _digests(p, add)
    if seen:
        _copied_digests(p, seen, add)
    r = p.replay
    if r is not None:
        c = r.container
        if c is not None:
            # KE108: an image known to name no vendor's stack, or the hardware's (the common
            # case), says nothing; only an image not read yet, or a ROCm image on NVIDIA
            # hardware or a CUDA one on AMD's, can clash (_container_vendor reports no other)
            stack = _IMAGE_STACK.get(c.image)
            if stack != "":
                h = p.hardware
                if h is not None and (stack is None or _CLASH_VENDOR[stack] == h.vendor):
                    _container_vendor(c.image, h, add)
        cmd = r.command
        why = None
        key: tuple[Any, ...] = ()  # (set with the argv)
        reading = _NO_ARGV
        if cmd:
            # KE103 (and KE106's readings, where they do not hang on replay.env): the argv's
            # readings, cached per argv (the next packet runs the same command)
            key = tuple(cmd) if not r.shell else ("\0sh", *cmd)
            reading = _ARGV_CACHE.get(key) or _read_argv(cmd, r.shell, key)
            why, limits = reading[0], reading[1]
            if why:
                add(("KE103", "/replay/command", f"the replay command {why}: it reproduces nothing"))
            elif limits:
                _cut_short(p, limits, add)
        repo = r.repository
        commit = repo.commit if repo is not None else None
        # (a commit that passed every KE104 test before passes them again: they read the
        # string alone, and a placeholder verdict of None stays None)
        if commit is not None and commit not in _GOOD_COMMITS:
            # a hash: 7 to 64 hexadecimal digits (and one line end after them, as
            # `^[0-9a-fA-F]{7,64}$` allows), without a regular expression
            h = commit[:-1] if commit[-1:] == "\n" else commit
            if not (7 <= len(h) <= 64 and not h.strip(_HEX_DIGITS)):
                add(
                    (
                        "KE104",
                        "/replay/repository/commit",
                        f"commit `{_short(commit)}` is not a commit hash: a branch, tag or ref moves",
                    )
                )
            elif commit[0] == commit[-1] and commit.count(commit[0]) == len(commit):
                add(
                    (
                        "KE104",
                        "/replay/repository/commit",
                        f"commit `{commit}` is a hash of nothing (one digit repeated)",
                    )
                )
            elif h[0] in _GIT_EMPTY_FIRST and h[:12].lower() in _GIT_EMPTY:  # (their first digits)
                add(
                    (
                        "KE104",
                        "/replay/repository/commit",
                        f"commit `{commit}` is {_GIT_EMPTY[h[:12].lower()]}, not a commit: it pins no code",
                    )
                )
            else:
                fill = _HASH_VERDICTS.get(h, _MISS)  # (cached: the next packet pins the same commit)
                if fill is _MISS:
                    fill = _remember(h, _placeholder(h))
                if fill:
                    add(
                        (
                            "KE104",
                            "/replay/repository/commit",
                            f"commit `{commit}` is a placeholder ({fill}), not the hash of a commit: it pins no code",
                        )
                    )
                elif len(_GOOD_COMMITS) < 4096 and len(commit) <= CACHED_CHARS:
                    _GOOD_COMMITS.add(commit)
        c = r.container
        if c is not None and c.digest is None:
            at = c.image.find("@sha256:")
            if at < 0:
                tag = _moving_tag(c.image) or "has a tag (tags are rebuilt in place)"
                add(("KE105", "/replay/container", f"image `{_short(c.image)}` {tag} and no digest"))
            else:
                empty = _no_image(c.image[at + 1 :])
                if empty:
                    add(("KE105", "/replay/container", f"image `{_short(c.image)}` carries {empty}"))
        elif c is not None and c.digest is not None:
            empty = _HASH_VERDICTS.get(c.digest, _MISS)  # (cached, as the commit's)
            if empty is _MISS:
                empty = _remember(c.digest, _no_image(c.digest))
            if empty:
                add(("KE105", "/replay/container/digest", f"digest `{_short(c.digest)}` is {empty}"))
            at = c.image.find("@")
            if at >= 0 and c.image[at + 1 :].strip().casefold() != c.digest.strip().casefold():
                add(
                    (
                        "KE105",
                        "/replay/container",
                        f"image `{_short(c.image)}` carries the digest `{_short(c.image[at + 1 :])}`, but "
                        f"replay.container.digest is `{_short(c.digest)}`: two images, neither pinned",
                    )
                )
        if repo is not None and repo.url:
            local = _URL_VERDICTS.get(repo.url, _MISS)
            if local is _MISS:
                local = _unfetchable(repo.url)
                if len(_URL_VERDICTS) < 1024 and len(repo.url) <= CACHED_CHARS:
                    _URL_VERDICTS[repo.url] = local
            if local:
                add(
                    (
                        "KE108",
                        "/replay/repository/url",
                        f"replay.repository.url `{_short(repo.url)}` {local}: nobody else can fetch the "
                        "commit it pins",
                    )
                )
        # KE106: the workload flags the replay gives against the packet (cached per argv;
        # nothing to read in most replays)
        t = p.task
        if cmd and t is not None:
            got = reading[2]
            if got is None:
                got = _readings(cmd, r.shell, r.env, key)
                _settle(key, reading)
            w, run = got
            if w is not None:
                _runs_what_it_records(p, t, w, add)
            if run is not None:
                _run_flags(p, r, run, add, bool(why))
        # _replay re-checks in full; this guard (on the values read above) only skips it
        # when it has nothing to say (the common case)
        if reading[3] and ((repo is not None and repo.commit) or (c is not None and c.digest)):
            return
    _replay(r, add)


#: an argv's readings: KE103's (why it does nothing, or None; the ``timeout`` limits it runs
#: under), KE106's (:func:`_readings`, once it holds them for good: :func:`_settle`; None
#: until then, and where they hang on ``replay.env``), and whether it is well formed as
#: :func:`_replay` reads it (a program, and one string for a shell)
_ArgvReading = tuple["str | None", "list[tuple[float, str]]", "_Readings | None", bool]
#: each argv's readings, by the argv (with ``"\0sh"`` before a shell string)
_ARGV_CACHE: dict[tuple[Any, ...], _ArgvReading] = {}
_NO_ARGV: _ArgvReading = (None, [], None, False)
#: commits that passed every KE104 test (bounded)
_GOOD_COMMITS: set[str] = set()


def _read_argv(cmd: list[str], shell: bool | None, key: tuple[Any, ...]) -> _ArgvReading:
    """An argv's readings (:data:`_ArgvReading`; cached). KE103: only a program that can
    be a no-op (or a wrapper, shell or interpreter running one; an interpreter only when it
    runs code given with -c or a module with -m) is looked at in full."""
    prog = _base_name(cmd[0])
    limits: list[tuple[float, str]] = []
    why = None
    if shell or (prog in _LOOK and (prog not in _PYTHONS or "-c" in cmd or "-m" in cmd)):
        why = _noop(cmd, bool(shell), limits)
    elif not _QUIET.isdisjoint(cmd):
        why = _idle(prog, cmd, 1)
    reading = (why, limits, None, bool(cmd[0].strip()) and not (shell and len(cmd) != 1))
    if len(_ARGV_CACHE) < 4096 and sum(map(len, cmd)) <= CACHED_CHARS:
        _ARGV_CACHE[key] = reading
    return reading


def _settle(key: tuple[Any, ...], reading: _ArgvReading) -> None:
    """Keep an argv's KE106 readings beside its other ones once :func:`_readings` holds
    them for good (under the argv alone: not hanging on ``replay.env``); it returns them for
    the argv from then on, so reading them from here is the same."""
    final = _WORKLOAD_CACHE.get(key)
    if final is not None and final is not _BY_ENV and _ARGV_CACHE.get(key) is reading:
        _ARGV_CACHE[key] = (reading[0], reading[1], final, reading[3])


def _digests(p: Any, add: Add) -> tuple[str, ...]:
    """KE107: each SHA-256 the packet records outside the replay's container (that one is
    KE105's) against :func:`_no_content`. Cheap on the common path: the digests are few and
    their verdicts cached; a digest whose cached verdict is None (nothing wrong) is passed
    over before its pointer is formatted, and :func:`_digest` reads every other one in full.
    Returns the digests it read (for :func:`_copied_digests`)."""
    known = _HASH_VERDICTS.get
    seen: tuple[str, ...] = ()
    c = p.compile
    if c is not None:
        d = c.source_digest
        if d is not None:
            seen += (d,)
            if known(d, _MISS) is not None:
                _digest(d, "/compile/source_digest", add)
        arts = c.artifacts
        if arts:
            for i, a in enumerate(arts):
                d = a.sha256
                if d is not None:
                    seen += (d,)
                    if known(d, _MISS) is not None:
                        _digest(d, f"/compile/artifacts/{i}/sha256", add)
    r = p.replay
    if r is not None and r.inputs:
        for i, x in enumerate(r.inputs):
            d = x.sha256
            if d is not None:
                seen += (d,)
                if known(d, _MISS) is not None:
                    _digest(d, f"/replay/inputs/{i}/sha256", add)
    t = p.task
    ref = t.reference if t is not None else None
    if ref is not None and ref.source is not None:
        d = ref.source.sha256
        if d is not None:
            seen += (d,)
            if known(d, _MISS) is not None:
                _digest(d, "/task/reference/source/sha256", add)
    prof = p.profiler
    if prof:
        for i, cap in enumerate(prof):
            src = cap.source
            if src is not None:
                d = src.sha256
                if d is not None:
                    seen += (d,)
                    if known(d, _MISS) is not None:
                        _digest(d, f"/profiler/{i}/source/sha256", add)
            raw = cap.raw_table
            if raw is not None:
                d = raw.sha256
                if d is not None:
                    seen += (d,)
                    if known(d, _MISS) is not None:
                        _digest(d, f"/profiler/{i}/raw_table/sha256", add)
    tm = p.timing
    if tm is not None:
        sv = tm.serving
        art = sv.samples_artifact if sv is not None else None
        if art is not None:
            d = art.sha256
            if d is not None:
                seen += (d,)
                if known(d, _MISS) is not None:
                    _digest(d, "/timing/serving/samples_artifact/sha256", add)
        bl = tm.baseline
        sv = bl.serving if bl is not None else None
        art = sv.samples_artifact if sv is not None else None
        if art is not None:
            d = art.sha256
            if d is not None:
                seen += (d,)
                if known(d, _MISS) is not None:
                    _digest(d, "/timing/baseline/serving/samples_artifact/sha256", add)
    return seen


#: KE107: the kinds of artifact a digest may be recorded for, in the order a copy is
#: reported at the later one; an input of the replay may be any file (code, a report...), so
#: it is held against the container only
_CONTAINER, _CODE, _CAPTURE, _SAMPLES, _INPUT = range(5)
_KIND_WORDS = ("the container", "the code", "a profiler capture", "the serving samples", "a replay input")


def _copied_digests(p: Any, seen: tuple[str, ...], add: Add) -> None:
    """KE107: a digest recorded for one kind of artifact equal to one of another kind (a
    copied hash). ``seen``: the digests :func:`_digests` read, the container's added here;
    all distinct (the common case) says nothing. The schema's pattern writes every digest
    field as `sha256:` and lower-case hex, so equal digests are equal strings; only one in an
    image reference is free text, and folded."""
    r = p.replay
    c = r.container if r is not None else None
    if c is not None:
        d = c.digest
        if d is None:
            d = c.image.partition("@")[2].strip().casefold()
        if d:
            seen += (d,)
    if len(seen) > 1 and len(set(seen)) < len(seen):
        _copied_kinds(p, add)


def _copied_kinds(p: Any, add: Add) -> None:
    """KE107 in full (two digests equal as strings): by the kind of artifact each is for."""
    seen: list[tuple[str, int, str]] = []
    r = p.replay
    c = r.container if r is not None else None
    if c is not None:
        d = c.digest or c.image.partition("@")[2]
        if d:
            seen.append(
                (d, _CONTAINER, "/replay/container/digest" if c.digest else "/replay/container/image")
            )
    cp = p.compile
    if cp is not None:
        if cp.source_digest:
            seen.append((cp.source_digest, _CODE, "/compile/source_digest"))
        for i, a in enumerate(cp.artifacts or ()):
            if a.sha256:
                kind = (
                    _CAPTURE if a.kind in ("profile", "trace") else _CODE if a.kind in _CODE_KINDS else _INPUT
                )
                seen.append((a.sha256, kind, f"/compile/artifacts/{i}/sha256"))
    t = p.task
    ref = t.reference if t is not None else None
    if ref is not None and ref.source is not None and ref.source.sha256:
        seen.append((ref.source.sha256, _CODE, "/task/reference/source/sha256"))
    for i, cap in enumerate(p.profiler or ()):
        if cap.source is not None and cap.source.sha256:
            seen.append((cap.source.sha256, _CAPTURE, f"/profiler/{i}/source/sha256"))
        if cap.raw_table is not None and cap.raw_table.sha256:
            seen.append((cap.raw_table.sha256, _CAPTURE, f"/profiler/{i}/raw_table/sha256"))
    tm = p.timing
    if tm is not None:
        for sv, ptr in (
            (tm.serving, "/timing/serving/samples_artifact/sha256"),
            (
                tm.baseline.serving if tm.baseline is not None else None,
                "/timing/baseline/serving/samples_artifact/sha256",
            ),
        ):
            art = sv.samples_artifact if sv is not None else None
            if art is not None and art.sha256:
                seen.append((art.sha256, _SAMPLES, ptr))
    if r is not None:
        for i, x in enumerate(r.inputs or ()):
            if x.sha256:
                seen.append((x.sha256, _INPUT, f"/replay/inputs/{i}/sha256"))
    first: dict[str, tuple[int, str]] = {}
    for d, kind, ptr in seen:
        h = d.strip().casefold()
        if len(h) < 32 or _HASH_VERDICTS.get(d):
            continue  # not a full digest, or a placeholder (reported as such)
        had = first.get(h)
        if had is None:
            first[h] = (kind, ptr)
        elif had[0] != kind and (_INPUT not in (had[0], kind) or _CONTAINER in (had[0], kind)):
            add(
                (
                    "KE107",
                    ptr,
                    f"digest `{_short(d)}` recorded for {_KIND_WORDS[kind]} is the one {had[1]} records for "
                    f"{_KIND_WORDS[had[0]]}: two kinds of file never hash alike, so it is a copied hash, "
                    "not the hash of that file",
                )
            )


#: KE107: the kinds of `compile.artifacts` entry that are code (a source or what compiles
#: from it); profiles and traces are captures, the others (logs, data, outputs) any file
_CODE_KINDS = frozenset({"source", "ptx", "sass", "cubin", "hsaco", "isa", "llvm_ir", "hlo", "mlir"})


#: KE108: a container image's reading, by image (short ones only): "rocm", "cuda" or ""
_IMAGE_STACK: dict[str, str] = {}
_ROCM_TOKEN = lazy_re(r"rocm\d*")
_CUDA_TOKEN = lazy_re(r"(?:cuda|cudnn)\d*|cu1\d\d")
_AMD_GPU = lazy_re(r"instinct|radeon|\bmi\d{3}")
#: an image's stack and the one hardware vendor it clashes with
_CLASH_VENDOR = {"rocm": "nvidia", "cuda": "amd"}


def _image_stack(image: str) -> str:
    """The GPU stack an image reference's repository path and tag name by a clear token
    (``rocm`` or ``cuda``), "" for none or both."""
    ref = image.partition("@")[0].strip().casefold()
    tokens = [x for x in re.split(r"[/:._\-]+", ref) if x]
    rocm = any(_ROCM_TOKEN.fullmatch(x) for x in tokens)
    cuda = (
        ref.startswith("nvcr.io/nvidia/")
        or "nvidia/cuda" in ref
        or any(_CUDA_TOKEN.fullmatch(x) for x in tokens)
    )
    return "rocm" if rocm and not cuda else "cuda" if cuda and not rocm else ""


def _container_vendor(image: str, h: Any, add: Add) -> None:
    """KE108: a container image of another vendor's GPU stack than the hardware's."""
    vendor = h.vendor
    if vendor != "nvidia" and vendor != "amd":
        return
    stack = _IMAGE_STACK.get(image)
    if stack is None:
        stack = _image_stack(image[:1024])
        if len(_IMAGE_STACK) < 1024 and len(image) <= CACHED_CHARS:
            _IMAGE_STACK[image] = stack
    if not stack:
        return
    if vendor == "nvidia" and stack == "rocm":
        other = "AMD's ROCm"
    elif (
        vendor == "amd"
        and stack == "cuda"
        and ((h.arch or "").casefold().startswith("gfx") or _AMD_GPU.search(h.device[:256].casefold()))
    ):
        other = "NVIDIA's CUDA"
    else:
        return
    add(
        (
            "KE108",
            "/replay/container/image",
            f"container image `{_short(image)}` is built on {other} stack, but the run records "
            f"{_short(h.device)} (vendor {vendor}): that container cannot have run the kernel there",
        )
    )


def _digest(d: str, ptr: str, add: Add) -> None:
    why = _HASH_VERDICTS.get(d, _MISS)
    if why is _MISS:
        why = _remember(d, _no_image(d))
    if why:
        # the same reading as a container's, said of a file
        add(
            (
                "KE107",
                ptr,
                f"digest `{_short(d)}` is {why.replace('an image', 'a file').replace('no image', 'no file')}",
            )
        )


def _replay(r: Any, add: Add) -> None:
    if r is None:
        add(("KE101", "/replay", "no replay category; a packet without a replay command is not evidence"))
        return
    if not r.command:
        add(("KE101", "/replay/command", "replay command is missing or empty"))
        return
    if not r.command[0].strip():
        add(("KE101", "/replay/command/0", "replay command's program (argv[0]) is empty"))
    if r.shell and len(r.command) != 1:
        add(
            (
                "KE101",
                "/replay/command",
                f"replay.shell is true but the command holds {len(r.command)} strings; a shell "
                "command is one string",
            )
        )
    if not (r.repository is not None and r.repository.commit) and not (
        r.container is not None and r.container.digest
    ):
        add(("KE102", "/replay", "replay pins neither a repository commit nor a container digest"))


_HEX_DIGITS = "0123456789abcdefABCDEF"

#: the first 12 digits of git objects that hold nothing (SHA-1 and SHA-256 repositories):
#: a "commit" that is one of them (or shares their first 12 digits) pins no code
_GIT_EMPTY = {
    "4b825dc642cb": "git's empty tree object",  # 4b825dc642cb6eb9a060e54bf8d69288fbee4904
    "6ef19b41225c": "git's empty tree object",  # 6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321
    "e69de29bb2d1": "git's empty blob object",  # e69de29bb2d1d6434b8b29ae775ad8c2e48c5391
    "473a0f4c3be8": "git's empty blob object",  # 473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813
    "da39a3ee5e6b": "the SHA-1 of empty input",  # da39a3ee5e6b4b0d3255bfef95601890afd80709
    "adc83b19e793": "the SHA-1 of a single newline",  # adc83b19e793491b1c6ea0fd8b46cd9f32e592fc
    "e3b0c44298fc": "the SHA-256 of empty input",
    "01ba4719c80b": "the SHA-256 of a single newline",
    "d41d8cd98f00": "the MD5 of empty input",  # d41d8cd98f00b204e9800998ecf8427e
    "68b329da9893": "the MD5 of a single newline",  # 68b329da9893e34099c7d8ad5cb9c940
}
#: the first digits of those ids (the quick test before the look-up)
_GIT_EMPTY_FIRST = frozenset(c for k in _GIT_EMPTY for c in (k[0], k[0].upper()))
#: digests of empty input: they name no image
_EMPTY_DIGESTS = {
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855": "the SHA-256 of empty input",
    "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
    "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e": "the SHA-512 of empty input",
    "01ba4719c80b6fe911b091a7c05124b64eeece964e09c058ef8f9805daca546b": "the SHA-256 of a single newline",
    "da39a3ee5e6b4b0d3255bfef95601890afd80709": "the SHA-1 of empty input",
    "adc83b19e793491b1c6ea0fd8b46cd9f32e592fc": "the SHA-1 of a single newline",
}


#: what is wrong with a repository URL (None: nothing), by the URL (bounded)
_URL_VERDICTS: dict[str, str | None] = {}
#: an owner or repository name that a template leaves to fill in (``your-org``, ``yourname``)
_YOUR = lazy_re(
    r"your[-_.]?(?:org|organi[sz]ation|user(?:name)?|name|team|company|repo(?:sitory)?|project|account"
    r"|handle|fork|github|gh|namespace|group|id|login)s?"
)
#: ``owner/name`` pairs that templates hold (``github.com/user/repo``)
_TEMPLATE_PAIRS = frozenset({
    ("user", "repo"), ("owner", "repo"), ("org", "repo"), ("username", "repo"), ("username", "repository"),
    ("owner", "repository"), ("org", "project"), ("user", "project"), ("organization", "repository"),
    ("organisation", "repository"), ("namespace", "project"), ("group", "project"), ("owner", "name"),
    ("user", "repository"), ("org", "repository"),
})  # fmt: skip


def _unfetchable(url: str) -> str | None:
    """Why a repository URL names nothing another machine can fetch: a ``file:`` URL, a local
    path, ``localhost``, or a template; None otherwise."""
    u = url.strip()
    low = u.casefold()
    if low.startswith("file:"):
        return "is a `file:` URL on the producer's machine"
    if low[:1] in ("/", "~", ".", "\\") or (len(u) > 2 and u[0].isalpha() and u[1] == ":" and u[2] in "\\/"):
        return "is a local path"
    if any(ch in u for ch in "<>{}"):
        return "is a template (`<owner>`, `{repo}`)"
    key = _url_key(u)
    parts = [x for x in key.split("/") if x]
    host = parts[0].rsplit("@", 1)[-1].split(":", 1)[0] if parts else ""
    if host in ("localhost", "127.0.0.1", "[::1]", "::1") or host.startswith("127."):
        return "names this machine (`localhost`)"
    names = parts[1:]
    if any(_YOUR.fullmatch(x) for x in names):
        return "is a template (`your-org/your-repo`)"
    if len(names) >= 2 and (names[-2], names[-1]) in _TEMPLATE_PAIRS:
        return f"is a template (`{names[-2]}/{names[-1]}`)"
    return None


def _no_image(d: str) -> str | None:
    """Why a digest (``sha256:...``) names no image: one digit repeated, a placeholder
    (:func:`_placeholder`), or the hash of empty input; None otherwise."""
    k = d.rfind(":") + 1  # the digits after the algorithm (all of it without one)
    if k < len(d) and d[k] == d[-1] and d.count(d[k], k) == len(d) - k:
        return "a hash of nothing (one digit repeated)"
    what = _EMPTY_DIGESTS.get(d[k:].lower()) if d[-1] in "5eEbBcC9" else None
    if what:
        return f"{what}: it names no image"
    fill = _placeholder(d[k:])
    return f"a placeholder ({fill}), not the hash of an image" if fill else None


#: the value of each hexadecimal digit
_HEX_VALUE = {c: int(c, 16) for c in _HEX_DIGITS}
#: words people fill a hash with (hexspeak): a hash made of one of them repeated is made up
_HEXSPEAK = lazy_re(r"dead|beef|cafe|babe|face|feed|f00d|c0de|c0ffee|decaf|d00d|abad|1dea|b00b|0ff1ce")


def _placeholder(h: str) -> str | None:
    """How a string of hexadecimal digits is a placeholder rather than a hash, over its
    whole length: a counting run (``0123456789abcdef0123...``, ``fedcba98...``), or a short
    unit repeated (at least twice; the last repeat may be cut) that is itself a counting run
    of three digits or more (``abcd`` x 10, ``abcdef...``), a hexspeak word (``deadbeef`` x 8,
    ``cafebabe...``) or two digits (``ab`` x 32). None otherwise (a hash of something: its
    digits repeat no unit, nor count); a unit of other digits (``7d2f`` x 16) is let
    through. An id of 16 digits or more that is one digit repeated but at one or two
    positions (``000...0001``) is one too. Costs one substring search on a real hash."""
    n = len(h)
    if n < 7:
        return None
    if n >= 16:
        head = h[:4]
        for c in head:
            if head.count(c) >= 2 and h.count(c) >= n - 2:  # (2 of the first 4: the digit repeated)
                off = n - h.count(c)
                return f"`{c}` repeated" + (f" but at {off} position{'s' if off > 1 else ''}" if off else "")
    if h.find(h[:4], 1) < 0 and h[:3] not in _RUNS_OF_3:
        return None  # (a hash: its start neither comes back nor counts)
    return _find_placeholder(h)


#: what is wrong with a commit or a digest (None: nothing), by the string (bounded)
_HASH_VERDICTS: dict[str, str | None] = {}
_MISS: Any = object()


def _remember(h: str, verdict: str | None) -> str | None:
    if len(_HASH_VERDICTS) < 4096 and len(h) <= 160:
        _HASH_VERDICTS[h] = verdict
    return verdict


#: the three-digit counting runs (up and down, either case): where a counting run starts
_RUNS_OF_3 = frozenset(
    w
    for seq in ("0123456789abcdef" * 2, "fedcba9876543210" * 2)
    for i in range(16)
    for w in (seq[i : i + 3], seq[i : i + 3].upper())
)


def _find_placeholder(h: str) -> str | None:
    """:func:`_placeholder`'s reading, past its quick test."""
    n = len(h)
    s = h.lower()
    d0 = _HEX_VALUE.get(s[0])
    d1 = _HEX_VALUE.get(s[1])
    if d0 is not None and d1 is not None and (d1 - d0) % 16 in (1, 15):
        step = (d1 - d0) % 16
        v = d0
        for c in s[1:]:
            x = _HEX_VALUE.get(c)
            if x != (v + step) % 16:
                break
            v = x
        else:
            return f"`{s[:6]}...` counting {'up' if step == 1 else 'down'}"
    # a unit repeated over the whole string: its first four digits come back within its first half
    head = s[:4]
    k = s.find(head, 1)
    while 0 < k <= n // 2:
        if s[k:] == s[: n - k]:
            unit = s[:k]
            if k <= 2 or _HEXSPEAK.search(unit + unit) or _placeholder_run(unit):
                return f"`{unit}` repeated"
            return None
        k = s.find(head, k + 1)
    return None


#: the order people count hexadecimal digits in by hand (the digits, then the letters), up
#: and down, twice over (a run may wrap): a unit read in it is a placeholder
_HUMAN_ORDER = ("1234567890abcdef" * 2, "fedcba0987654321" * 2)


def _placeholder_run(unit: str) -> bool:
    """True for a unit of three digits or more counting up or down (``abcd``, ``3210``), or
    counting in the order people write the digits (``1234567890abcdef``, ``fedcba0987...``)."""
    if len(unit) < 3:
        return False
    if any(unit in o for o in _HUMAN_ORDER):
        return True
    vals = [_HEX_VALUE[c] for c in unit if c in _HEX_VALUE]
    if len(vals) != len(unit):
        return False
    steps = {(vals[i + 1] - vals[i]) % 16 for i in range(len(vals) - 1)}
    return steps == {1} or steps == {15}


#: programs that succeed doing nothing, or only print
_NOOPS = frozenset({
    "true", ":", "echo", "printf", "exit", "sleep", "yes", "false", "test", "[", "cat", "wait", "pwd",
    # viewers: they print a stored result
    "jq", "head", "tail", "less", "more", "ls", "stat", "wc", "grep", "column", "bat", "nl", "od",
    "xxd", "hexdump", "md5sum", "sha256sum", "diff", "cmp",
    # system queries: they describe the machine and run no benchmark
    "nvidia-smi", "rocm-smi", "amd-smi", "rocminfo", "lscpu", "uname", "hostname", "date",
    "whoami", "id", "df", "free", "nproc", "printenv",
})  # fmt: skip
#: options that make (almost) any program print its help or version and run nothing (not
#: `--dry-run`: some harnesses run stand-ins under it)
_NOTHING_FLAGS = frozenset({"--help", "--version"})
#: counts of work that, set to 0, leave a benchmark nothing to run or time (spelled with
#: `-` or `_`, one or two leading dashes)
_ZERO_COUNTS = frozenset({
    "num-prompts", "iters", "num-iters", "n-iters", "niters", "iterations", "num-iterations",
    "repeats", "num-repeats", "repetitions",
})  # fmt: skip
#: programs that run another: the command after them (and their options) is what runs
_WRAPPERS = frozenset({
    "env", "time", "nice", "nohup", "timeout", "exec", "command", "stdbuf", "taskset", "numactl", "sudo",
    "srun", "salloc", "sbatch", "mpirun", "mpiexec", "flock", "chrt", "ionice", "xvfb-run", "unbuffer",
})  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
#: container runners: ``docker run [options] IMAGE [command]`` runs the command in the image
_CONTAINERS = frozenset({
    "docker", "podman", "nerdctl", "apptainer", "singularity", "enroot", "docker-compose", "podman-compose",
})  # fmt: skip

#: How a program's options are read: (short options that take a value, options that take one
#: value whole (``--signal``, mpirun's ``-np``), long options that take none, or None when
#: every long option not listed as taking a value takes none). ``--opt=value`` is one
#: argument; a run of short options (``-it``, ``-sKILL``) ends at one that takes a value.
_Spec = tuple[str, frozenset[str], "frozenset[str] | None"]
_F = frozenset

#: Slurm's long options that take no value (every other one does: ``--gres gpu:1``)
_SLURM_FLAGS = _F({
    "--exclusive", "--pty", "--overlap", "--label", "--unbuffered", "--quiet", "--verbose", "--immediate",
    "--hold", "--no-kill", "--kill-on-bad-exit", "--overcommit", "--oversubscribe", "--contiguous",
    "--spread-job", "--use-min-nodes", "--disable-status", "--no-allocate", "--preserve-env", "--exact",
    "--whole", "--multi-prog", "--test-only", "--help", "--usage", "--version", "--requeue",
    "--no-requeue", "--reboot", "--x11", "--propagate", "--wait", "--parsable", "--ignore-pmi",
    "--get-user-env", "--nice", "--send-libs", "--no-shell", "--container-writable",
    "--container-readonly", "--container-remap-root", "--no-container-remap-root",
    "--container-mount-home", "--no-container-mount-home", "--container-entrypoint",
    "--no-container-entrypoint", "--no-container-entrypoint-log", "--hint", "--bb",
})  # fmt: skip
_NUMACTL_VALUED = _F({
    "--interleave", "--weighted-interleave", "--preferred", "--preferred-many", "--membind",
    "--cpunodebind", "--physcpubind", "--shm", "--file", "--length", "--shmmode", "--shmid",
    "--offset",
})  # fmt: skip
_SUDO_VALUED = _F({
    "--user", "--group", "--prompt", "--close-from", "--chdir", "--role", "--type",
    "--command-timeout", "--other-user", "--login-class", "--host",
})  # fmt: skip
_MPI_VALUED = _F({
    "-n", "-np", "--np", "-c", "-N", "--npernode", "-npernode", "--npersocket", "-npersocket",
    "-H", "--host", "-host", "-hosts", "--hostfile", "-hostfile", "--machinefile", "-machinefile",
    "-f", "--map-by", "-map-by", "--bind-to", "-bind-to", "--rank-by", "-rank-by", "-x", "--prefix",
    "-prefix", "--wdir", "-wdir", "--path", "-path", "-ppn", "--ppn", "--output-filename",
    "-output-filename", "--rankfile", "-rankfile", "-genvlist", "-launcher", "-bootstrap", "-iface",
    "--am", "-am", "--tune", "-tune", "--personality", "--preload-files", "--cpus-per-proc",
    "-cpus-per-proc", "--cpus-per-rank", "-cpus-per-rank", "--timeout", "-timeout",
})  # fmt: skip
_XVFB_VALUED = _F({
    "--server-num", "--server-args", "--error-file", "--auth-file", "--xauth-protocol", "--wait",
})  # fmt: skip
_WRAP_SPECS: dict[str, _Spec] = {
    "env": ("uCS", _F({"--unset", "--chdir", "--split-string"}), None),
    "time": ("fo", _F({"--format", "--output"}), None),
    "nice": ("n", _F({"--adjustment"}), None),
    "timeout": ("sk", _F({"--signal", "--kill-after"}), None),
    "exec": ("a", _F(), None),
    "stdbuf": ("ioe", _F({"--input", "--output", "--error"}), None),
    "numactl": ("iwpPmNCSfLMI", _NUMACTL_VALUED, None),
    "sudo": ("ugpCDrtTUc", _SUDO_VALUED, None),
    "srun": ("AbBcCdDeGiJLmMnNopqrStTwWx", _F(), _SLURM_FLAGS),
    "salloc": ("AbBcCdDeGiJLmMnNopqrStTwWx", _F(), _SLURM_FLAGS),
    "sbatch": ("aAbBcCdDeFGiJLmMnNopqStwx", _F(), _SLURM_FLAGS),
    "mpirun": ("", _MPI_VALUED, None),
    "flock": ("wEc", _F({"--wait", "--timeout", "--conflict-exit-code", "--command"}), None),
    "chrt": ("TPD", _F({"--sched-runtime", "--sched-period", "--sched-deadline"}), None),
    "ionice": ("cnpPu", _F({"--class", "--classdata", "--pid", "--pgid", "--uid"}), None),
    "xvfb-run": ("nsefpw", _XVFB_VALUED, None),
}
_WRAP_SPECS["mpiexec"] = _WRAP_SPECS["mpirun"]
_NO_SPEC: _Spec = ("", _F(), None)
#: mpirun's options that take two values (``--mca btl ^openib``, ``-genv NAME VALUE``)
_TWO_VALUED = _F({"--mca", "-mca", "--gmca", "-gmca", "-genv", "-env", "--prtemca", "--pmixmca"})
#: values before the program: timeout's duration, taskset's mask, chrt's priority, flock's file
_POSITIONAL = {"timeout": 1, "taskset": 1, "chrt": 1, "flock": 1}

#: docker/podman/nerdctl's own options, before the subcommand (the long ones not listed take a value)
_DOCKER_GLOBAL: _Spec = ("cHlna", _F(), _F({
    "--debug", "--tls", "--tlsverify", "--help", "--version", "--remote", "--syslog",
    "--transient-store", "--noout", "--debug-full", "--insecure-registry", "--experimental",
    "--kube-hide-warnings",
}))  # fmt: skip
#: ``docker``/``podman``/``nerdctl run``/``create``: every long option not listed here takes a value
#: (``--stop-signal SIGINT``, ``--entrypoint true``)
_DOCKER_RUN: _Spec = ("acehlmpuvw", _F(), _F({
    "--detach", "--interactive", "--tty", "--init", "--privileged", "--publish-all", "--quiet",
    "--read-only", "--rm", "--sig-proxy", "--no-healthcheck", "--oom-kill-disable",
    "--disable-content-trust", "--use-api-socket", "--help", "--rmi", "--replace", "--read-only-tmpfs",
    "--no-hosts", "--env-host", "--http-proxy", "--passwd", "--tls-verify", "--unsetenv-all", "--rootfs",
    "--insecure-registry", "--latest",
}))  # fmt: skip
_DOCKER_EXEC: _Spec = ("euw", _F(), _F({
    "--detach", "--interactive", "--tty", "--privileged", "--help", "--latest",
}))  # fmt: skip
_COMPOSE_GLOBAL: _Spec = ("fp", _F(), _F({
    "--all-resources", "--compatibility", "--dry-run", "--verbose", "--help", "--version",
}))  # fmt: skip
_COMPOSE_RUN: _Spec = ("elpuvw", _F(), _F({
    "--build", "--detach", "--interactive", "--no-deps", "--quiet-build", "--quiet-pull", "--quiet",
    "--remove-orphans", "--rm", "--service-ports", "--use-aliases", "--no-TTY", "--tty", "--privileged",
    "--help", "--dry-run",
}))  # fmt: skip
_COMPOSE_EXEC: _Spec = ("euw", _F(), _F({
    "--detach", "--privileged", "--no-TTY", "--interactive", "--tty", "--help", "--dry-run",
}))  # fmt: skip
#: apptainer/singularity exec/run: the long options not listed take no value
_APPTAINER: _Spec = ("BHoSW", _F({
    "--bind", "--env", "--env-file", "--home", "--pwd", "--overlay", "--scratch", "--workdir", "--app",
    "--mount", "--network", "--network-args", "--security", "--hostname", "--dns", "--cpus", "--memory",
    "--memory-reservation", "--memory-swap", "--cpu-shares", "--cpuset-cpus", "--cpuset-mems",
    "--blkio-weight", "--blkio-weight-device", "--apply-cgroups", "--pid-file", "--add-caps",
    "--drop-caps", "--containlibs", "--fusemount", "--no-mount", "--vm-cpu", "--vm-ip", "--vm-ram",
    "--pem-path", "--authfile", "--docker-host", "--library", "--cdi-dirs", "--device", "--cwd",
    "--config",
}), None)  # fmt: skip
_ENROOT: _Spec = ("cme", _F({"--conf", "--mount", "--env"}), None)

#: flags that make a build or test runner list or print what it would run, and run none of it
_DRY = {
    "make": frozenset({"-n", "--dry-run", "--just-print", "--recon", "-t", "--touch", "-q", "--question"}),
    "pytest": frozenset({
        "--collect-only", "--co", "--setup-plan", "--setup-only", "--fixtures", "--funcargs",
        "--fixtures-per-test", "--markers",
    }),
    "py.test": frozenset({"--collect-only", "--co", "--setup-plan", "--setup-only", "--fixtures", "--markers"}),
}  # fmt: skip
#: container runner subcommands that run no image: they print, list or copy what is there
_CONTAINER_VIEWS = frozenset({
    "logs", "inspect", "ps", "images", "cp", "top", "stats", "history", "port", "diff", "events",
    "info", "version", "ls", "list",
})  # fmt: skip
#: git subcommands that print what the repository holds (a committed result) and run nothing
_GIT_VIEWS = frozenset({
    "show", "log", "cat-file", "diff", "status", "blame", "annotate", "ls-files", "ls-tree",
    "rev-parse", "describe", "reflog", "shortlog", "whatchanged", "grep",
})  # fmt: skip
#: git's global options that take a value in the next argument
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})
#: nsys subcommands that read a stored report (or the session list) and run nothing
_NSYS_VIEWS = frozenset({"stats", "export", "analyze", "recipe", "sessions", "status"})
#: ncu options that list what it knows and profile nothing
_NCU_LISTS = frozenset({"--query-metrics", "--list-sets", "--list-sections", "--list-rules", "--list-chips"})
#: Python modules that, run with ``-m``, print a stored file or the interpreter's setup
_PY_VIEWERS = frozenset({
    "json.tool", "pydoc", "http.server", "site", "sysconfig", "platform", "pprint", "this",
    "tabnanny", "tokenize", "pickletools",
})  # fmt: skip
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
#: every program name worth a closer look (the rest run what they name)
_LOOK = (
    _NOOPS | _WRAPPERS | _SHELLS | _CONTAINERS | frozenset(_DRY) | _AWKS
    | frozenset({"python", "python3", "python2", "py", "pypy", "pypy3", "git", "ncu", "nsys"})
)  # fmt: skip


def _base_name(prog: str) -> str:
    """The program's name without its directory (``python`` for ``python3.11``), cached."""
    b = _BASE_CACHE.get(prog)
    if b is None:
        b = prog.rsplit("/", 1)[-1].strip()
        if b.startswith("python") and b[6:].replace(".", "").isdigit():
            b = "python"  # python3.11
        if len(_BASE_CACHE) < 4096 and len(prog) <= 256:
            _BASE_CACHE[prog] = b
    return b


_BASE_CACHE: dict[str, str] = {}
_PYTHONS = frozenset({"python", "python3", "python2", "py", "pypy", "pypy3"})


def _short(s: str) -> str:
    """``s`` on one line (a line end written ``\\n``), cut to 80 characters."""
    if "\n" in s or "\r" in s:
        s = s.replace("\r", "\\r").replace("\n", "\\n")
    return s if len(s) <= 80 else s[:77] + "..."


def _idle(prog: str, cmd: list[str], start: int) -> str | None:
    """Why the program that runs, with the arguments ``cmd[start:]``, does no work: it is
    asked for its help or version, or told to run zero prompts, iterations or repeats."""
    if _QUIET.isdisjoint(cmd):
        return None  # the common case, in one pass over the argv
    args = cmd[start:] if start > 1 else cmd  # (cmd[0], the program, is none of them)
    if not _NOTHING_FLAGS.isdisjoint(args):
        flag = next(a for a in args if a in _NOTHING_FLAGS)
        return f"asks `{_short(prog)}` for `{flag}`"
    if "0" in args:
        for k in range(1, len(args)):
            if args[k] == "0" and args[k - 1] in _COUNT_FLAGS:
                return f"tells `{_short(prog)}` `{args[k - 1]} 0`: it has nothing to run"
    if not _COUNT_ZERO.isdisjoint(args):
        a = next(a for a in args if a in _COUNT_ZERO)
        return f"tells `{_short(prog)}` `{a}`: it has nothing to run"
    return None


#: the spellings of the counts of work: ``--num-prompts``, ``--num_prompts``, ``-iters``
_COUNT_FLAGS = frozenset(d + x for n in _ZERO_COUNTS for x in (n, n.replace("-", "_")) for d in ("-", "--"))
#: ... set to 0 in one argument (``--num-prompts=0``)
_COUNT_ZERO = frozenset(f + "=0" for f in _COUNT_FLAGS)
#: every argument that may make a program idle
_QUIET = _NOTHING_FLAGS | _COUNT_FLAGS | _COUNT_ZERO


def _skip_opts(cmd: list[str], j: int, spec: _Spec, seen: dict[str, str], two: frozenset[str] = _F()) -> int:
    """The index of the first argument from ``j`` that is not an option of ``spec`` (past a
    ``--``), recording each option read with its value (``""`` for none) in ``seen``."""
    short, valued, flags = spec
    n = len(cmd)
    while j < n:
        a = cmd[j]
        if a[:1] != "-" or a == "-":
            return j
        if a == "--":
            return j + 1
        if a in valued:
            seen[a] = cmd[j + 1] if j + 1 < n else ""
            j += 2
            continue
        if a in two:
            j += 3
            continue
        if a[1] == "-":
            name, eq, v = a.partition("=")
            if eq:
                seen[name] = v
            elif flags is not None and name not in flags:
                seen[name] = cmd[j + 1] if j + 1 < n else ""
                j += 1
            else:
                seen[name] = ""
            j += 1
            continue
        # short options run together (`-it`, `-sKILL`, `-p h100`), up to one that takes a value
        for k in range(1, len(a)):
            c = a[k]
            if c in short:
                v = a[k + 1 :]
                if not v and j + 1 < n:
                    j += 1
                    v = cmd[j]
                seen["-" + c] = v
                break
            seen["-" + c] = ""
        j += 1
    return j


def _asked_nothing(seen: dict[str, str]) -> str | None:
    """``--help`` or ``--version`` among the options read."""
    for f in _NOTHING_FLAGS:
        if f in seen:
            return f
    return None


#: what a duration suffix of ``timeout`` means in seconds
_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _duration(s: str) -> float | None:
    """Seconds of a ``timeout`` duration (``90``, ``1.5m``, ``2h``), None when unreadable;
    0 disables the timeout."""
    s = s.strip()
    f = _DURATION_UNITS.get(s[-1:], 0.0)
    try:
        v = float(s[:-1] if f else s)
    except ValueError:
        return None
    return v * (f or 1.0) if 0 <= v < float("inf") else None


def _noop(cmd: list[str], shell: bool, limits: list[tuple[float, str]] | None = None) -> str | None:
    """Why an argv (or one shell string) does nothing, or None when it may run something.
    The ``timeout`` limits it runs under are added to ``limits``."""
    if shell:
        return _noop_script(" ".join(cmd), limits)
    i = 0
    n = len(cmd)
    while i < n:
        prog = _base_name(cmd[i])
        if prog in _WRAPPERS:
            j, why = _past_wrapper(cmd, i, prog, limits)
            if j is None:
                return why
            i = j
            continue
        if prog in _NOOPS:
            return f"is `{_short(' '.join(cmd))}`"
        if prog in _SHELLS:
            if prog == "busybox":
                i += 1  # `busybox sh -c ...`, `busybox true`: the applet is the program
                continue
            return _shell(cmd, i, limits)
        if prog in _PYTHONS:
            mode, j = _python_mode(cmd, i)
            if mode == "-c":
                code = cmd[j] if j < n else ""
                return f"is `{_short(' '.join(cmd))}`" if _noop_python(code) else None
            if mode == "-m" and j < n:
                if cmd[j] in _PY_VIEWERS:
                    return f"only prints a stored file or the interpreter's setup (`{_short(' '.join(cmd))}`)"
                i = j  # `python -m pytest ...`: the module is the program
                prog = cmd[i]
            elif mode is not None:
                return None
        dry = _DRY.get(prog)
        if dry is not None:
            rest = cmd[i + 1 :]
            if any(a in dry or (prog == "make" and _make_dry(a)) for a in rest):
                return f"only lists or prints what it would run (`{_short(' '.join(cmd))}`)"
        elif prog in _CONTAINERS:
            return _container(cmd, i, prog, limits)
        elif prog == "git" and _git_subcommand(cmd, i) in _GIT_VIEWS:
            return f"only prints what the repository holds (`{_short(' '.join(cmd))}`)"
        elif prog == "ncu" and _ncu_views(cmd, i):
            return f"only opens a stored report or lists what it knows (`{_short(' '.join(cmd))}`)"
        elif prog == "nsys" and i + 1 < n and cmd[i + 1] in _NSYS_VIEWS:
            return f"only reads a stored report (`{_short(' '.join(cmd))}`)"
        elif prog in _AWKS and _awk_begin_only(cmd, i):
            return f"only prints from its BEGIN block (`{_short(' '.join(cmd))}`)"
        # a program that runs: unless it is asked for its help or told to do no work
        return _idle(prog, cmd, i + 1)
    return "holds no program"


def _past_wrapper(
    cmd: list[str], i: int, prog: str, limits: list[tuple[float, str]] | None
) -> tuple[int | None, str | None]:
    """Where the program a wrapper at ``cmd[i]`` runs starts (past the wrapper's options
    and values), as ``(index, None)``; or ``(None, why)`` when what it runs is known to do
    nothing (``why``) or may run something out of sight (None: a batch script, a process)."""
    n = len(cmd)
    seen: dict[str, str] = {}
    j = _skip_opts(
        cmd, i + 1, _WRAP_SPECS.get(prog, _NO_SPEC), seen, _TWO_VALUED if prog[:3] == "mpi" else _F()
    )
    flag = _asked_nothing(seen)
    if flag:
        return None, f"asks `{prog}` for `{flag}`"
    if prog in ("srun", "salloc", "sbatch") and "--test-only" in seen:
        return None, f"only asks whether the job could be scheduled (`{_short(' '.join(cmd))}`)"
    if prog == "sbatch":
        wrap = seen.get("--wrap")
        if wrap is None:
            return None, None  # a batch script: what it runs is in the file
        why = _noop_script(wrap, limits)
        return None, (f"submits the batch job `{_short(wrap)}`" if why and why.startswith("is ") else why)
    if prog == "env" and ("-S" in seen or "--split-string" in seen):
        try:
            split = shlex.split(seen.get("-S") or seen.get("--split-string") or "")
        except ValueError:
            return None, None
        return None, _noop(split + cmd[j:], False, limits)
    if prog == "command" and ("-v" in seen or "-V" in seen):
        return None, f"only prints what `{_short(' '.join(cmd[j:]))}` names (`command -v`)"
    if (prog in ("taskset", "chrt") and ("-p" in seen or "--pid" in seen)) or (
        prog == "ionice" and ("-p" in seen or "-P" in seen or "-u" in seen)
    ):
        return None, None  # applied to a running process
    pos = _POSITIONAL.get(prog, 0)
    args = cmd[j : j + pos]
    j += pos
    if prog == "flock":
        if j < n and cmd[j] in ("-c", "--command"):
            seen["-c"] = cmd[j + 1] if j + 1 < n else ""
        if "-c" in seen or "--command" in seen:
            script = seen.get("-c") or seen.get("--command") or ""
            return None, _noop_script(script, limits)
    if prog == "timeout" and args:
        limit = _duration(args[0])
        if limit and limits is not None:
            kill = seen.get("-k") or seen.get("--kill-after")
            grace = _duration(kill) if kill else 0.0
            limits.append((limit + (grace or 0.0), f"timeout {args[0]}"))
    # env's VAR=value settings; a duration, priority or mask given where none was expected
    while j < n and ("=" in cmd[j] or cmd[j][:1].isdigit()):
        j += 1
    return j, None


def _container(cmd: list[str], i: int, prog: str, limits: list[tuple[float, str]] | None) -> str | None:
    """Why a container runner at ``cmd[i]`` runs nothing of a benchmark: it runs no image
    (``docker logs``), prints its help, or the command it runs in the image (after the
    image's name, or an ``--entrypoint`` that replaces it) is itself a no-op."""
    why, argv, own = _container_target(cmd, i, prog)
    if why is not None or argv is None:
        return why
    if own:
        return _idle(argv[0], argv[1:], 0)  # arguments of the image's own entrypoint
    return _in_container(argv, limits)


def _container_target(cmd: list[str], i: int, prog: str) -> tuple[str | None, list[str] | None, bool]:
    """What a container runner at ``cmd[i]`` runs: ``(why, argv, own)``: why it runs no
    image or prints its help (``why``); else the command it runs in the image (``argv``:
    after the image's name, or an ``--entrypoint`` that replaces it), or, with ``own``, the
    image (or runscript) and the arguments its own entrypoint is given; ``argv`` None when
    the image's (or service's) own command runs, or what runs is not known."""
    n = len(cmd)
    seen: dict[str, str] = {}
    whole = _short(" ".join(cmd))
    if prog in ("apptainer", "singularity", "enroot"):
        j = _skip_opts(cmd, i + 1, _APPTAINER, seen)
        sub = cmd[j] if j < n else ""
        if sub not in ("exec", "run", "start"):
            return None, None, False
        j = _skip_opts(cmd, j + 1, _ENROOT if prog == "enroot" else _APPTAINER, seen)
        flag = _asked_nothing(seen)
        if flag:
            return f"asks `{prog} {sub}` for `{flag}`", None, False
        if j >= n:
            return None, None, False
        rest = cmd[j + 1 :]
        if sub == "run":  # the image's runscript runs, given these arguments
            return None, cmd[j:], True
        return None, (rest or None), False
    compose = prog in ("docker-compose", "podman-compose")
    j = i + 1
    if not compose:
        j = _skip_opts(cmd, j, _DOCKER_GLOBAL, seen)
        if j < n and cmd[j] == "compose":
            compose = True
            j += 1
    if compose:
        j = _skip_opts(cmd, j, _COMPOSE_GLOBAL, seen)
    flag = _asked_nothing(seen)
    if flag:
        return f"asks `{prog}` for `{flag}`", None, False
    if j < n and cmd[j] == "container" and not compose:
        j += 1
    sub = cmd[j] if j < n else ""
    if sub in ("image", "images") and not compose:
        if sub == "images" or (j + 1 < n and cmd[j + 1] in _CONTAINER_VIEWS):
            return f"runs no image (`{whole}` lists or inspects images)", None, False
        return None, None, False
    if sub in _CONTAINER_VIEWS:
        return f"runs no image (`{whole}` {sub})", None, False
    if sub not in ("run", "exec"):
        return None, None, False  # builds, starts or pulls: it runs what the image or service holds
    if compose:
        spec = _COMPOSE_RUN if sub == "run" else _COMPOSE_EXEC
    else:
        spec = _DOCKER_RUN if sub == "run" else _DOCKER_EXEC
    j = _skip_opts(cmd, j + 1, spec, seen)
    flag = _asked_nothing(seen)
    if flag:
        return f"asks `{prog} {sub}` for `{flag}`", None, False
    if "--dry-run" in seen and compose:
        return f"only prints what it would do (`{whole}`)", None, False
    if sub == "exec" and ("-l" in seen or "--latest" in seen) and not compose:
        j -= 1  # podman exec --latest: no container named, the command follows
    if j >= n:
        return None, None, False
    rest = cmd[j + 1 :]  # past the image, service or container
    ep = seen.get("--entrypoint")
    if ep is not None and sub == "run":
        argv = ([ep] if ep else []) + rest  # `--entrypoint ""` clears the image's own
    elif rest and rest[0][:1] == "-":
        return None, cmd[j:], True  # arguments of the image's own entrypoint
    else:
        argv = rest
    return None, (argv or None), False  # (none: the image's or service's own command runs)


def _in_container(argv: list[str], limits: list[tuple[float, str]] | None) -> str | None:
    """Why the command a container runs does nothing (None when it may run something)."""
    why = _noop(argv, False, limits)
    if why is None or not why.startswith("is "):
        return why
    return f"runs `{_short(' '.join(argv))}` in its container"


def _shell_options(cmd: list[str], i: int) -> tuple[bool, int, str | None]:
    """Read the options of a shell at ``cmd[i]``: whether one of them is ``-c`` (a script
    follows), the index of the first argument after them (the script, or a script file),
    and the help or version flag it is asked for, if any."""
    n = len(cmd)
    j = i + 1
    script = False
    while j < n:
        a = cmd[j]
        if a in ("--", "-"):
            j += 1
            break
        if a[:1] not in "-+" or len(a) < 2:
            break
        if a in _NOTHING_FLAGS:
            return script, j, a
        if a in ("--rcfile", "--init-file"):
            j += 2
            continue
        if a[:2] != "--":
            script = script or "c" in a[1:]
            if "o" in a[1:] or "O" in a[1:]:
                j += 1  # `-o pipefail`, `-euo pipefail`: the option's name follows
        j += 1
    return script, j, None


def _shell(cmd: list[str], i: int, limits: list[tuple[float, str]] | None) -> str | None:
    """Why a shell at ``cmd[i]`` runs nothing: its ``-c`` script runs nothing, or it is asked
    for its help or version. A script file (or standard input) may run anything."""
    script, j, flag = _shell_options(cmd, i)
    if flag is not None:
        return f"asks `{cmd[i]}` for `{flag}`"
    n = len(cmd)
    if not script:  # a script file runs (given its arguments), or standard input
        return _idle(cmd[j], cmd, j + 1) if j < n else None
    why = _noop_script(cmd[j] if j < n else "", limits)
    return f"is `{_short(' '.join(cmd))}`" if why and why.startswith("is ") else why


def _python_mode(cmd: list[str], i: int) -> tuple[str | None, int]:
    """How an interpreter at ``cmd[i]`` is asked to run: ``("-c", index of the code)``,
    ``("-m", index of the module)``, ``("-", -1)`` for code or a module run together with
    its option (``-cCODE``: let through), or ``(None, 0)`` for a script (its own options,
    such as ``-u``, ``-O``, ``-X dev``, ``-W ignore``, come first; a ``-c`` after the script
    is the script's)."""
    j = i + 1
    while j < len(cmd):
        a = cmd[j]
        if a in ("-c", "-m"):
            return a, j + 1
        if a[:2] in ("-c", "-m") and len(a) > 2:
            return "-", -1  # `-cCODE` / `-mMODULE`: seen as a script (rare; let through)
        if a in ("-X", "-W", "--check-hash-based-pycs"):
            j += 2
            continue
        if a.startswith("-") and a != "-":
            j += 1
            continue
        break
    return None, 0


def _git_subcommand(cmd: list[str], i: int) -> str | None:
    """The subcommand of a git at ``cmd[i]``, past its global options."""
    j = i + 1
    while j < len(cmd) and cmd[j].startswith("-"):
        j += 2 if cmd[j] in _GIT_VALUED else 1
    return cmd[j] if j < len(cmd) else None


def _ncu_views(cmd: list[str], i: int) -> bool:
    """True for an ``ncu`` that opens a stored report (``--import R.ncu-rep``, ``-i R``
    when the report is all it names) or only lists metrics, sets or sections."""
    rest = cmd[i + 1 :]
    for k, a in enumerate(rest):
        if a in _NCU_LISTS:
            return True
        if (a.startswith("--import=") and (k == 0 or a.endswith(".ncu-rep"))) or (
            a in ("--import", "-i") and k + 1 < len(rest) and (k == 0 or rest[k + 1].endswith(".ncu-rep"))
        ):
            return True
    return False


def _awk_begin_only(cmd: list[str], i: int) -> bool:
    """True for an awk program made only of BEGIN blocks that neither run a command
    (``system()``, a pipe) nor read input with ``getline``: awk runs them and exits."""
    j = i + 1
    while j < len(cmd) and cmd[j].startswith("-") and cmd[j] != "--":
        if cmd[j] in ("-f", "--file") or cmd[j].startswith("-f"):
            return False  # the program is in a file
        j += 2 if cmd[j] in ("-v", "-F", "--assign", "--field-separator") else 1
    if j < len(cmd) and cmd[j] == "--":
        j += 1
    if j >= len(cmd):
        return False
    prog = cmd[j].strip()
    if "system" in prog or "|" in prog or "getline" in prog or "@" in prog or "ENVIRON" in prog:
        return False
    # BEGIN { ... } [BEGIN { ... } ...], braces counted outside string literals
    k = 0
    n = len(prog)
    blocks = 0
    while k < n:
        while k < n and prog[k] in " \t\n;":
            k += 1
        if k >= n:
            break
        if not prog.startswith("BEGIN", k):
            return False
        k += 5
        while k < n and prog[k] in " \t\n":
            k += 1
        if k >= n or prog[k] != "{":
            return False
        depth = 0
        quoted = False
        while k < n:
            c = prog[k]
            if quoted:
                if c == "\\":
                    k += 1
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        if depth != 0:
            return False
        k += 1
        blocks += 1
    return blocks > 0


#: make's short options whose value follows them (``-Cdir``, ``-Otarget``, ``-j8``)
_MAKE_VALUED = frozenset("CfIjlLoOWE")


def _make_dry(arg: str) -> bool:
    """True for a run of make's short options that holds ``-n``, ``-t`` or ``-q`` (``-nB``,
    ``-kt``), read up to an option that takes the rest as its value (``-Ctest`` is not)."""
    if len(arg) < 2 or arg[0] != "-" or arg[1] == "-":
        return False
    for c in arg[1:]:
        if c in "ntq":
            return True
        if c in _MAKE_VALUED or not c.isalpha():
            return False
    return False


#: words that open a compound command (or a function), which this reader does not follow
_SH_COMPOUND = frozenset({
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "select", "function", "{", "}", "[[", "]]", "!", "((", "coproc",
})  # fmt: skip
#: builtins that only change the shell's own state (and may fail): they run nothing
_SH_STATE = frozenset({
    "cd", "set", "export", "unset", "ulimit", "umask", "shopt", "alias", "unalias", "hash",
    "pushd", "popd", "dirs", "declare", "typeset", "local", "readonly", "shift", "return",
})  # fmt: skip
#: a word that runs a command when the shell expands it
_SH_RUNS = ("$(", "`", "<(", ">(")
_SH_OPS = frozenset({";", "&", "&&", "||", "|"})


def _sh_words(script: str) -> Iterator[str | None]:
    """A shell script's words and operators, in order (``;`` for a line end, ``&&``, ``||``,
    ``|``, ``&``), quotes removed, comments and redirections dropped; a command or process
    substitution is kept whole in its word (``$(...)``). None (then nothing more) for what
    this reader does not follow: here-documents, subshells and function bodies in
    parentheses, unbalanced quotes."""
    w: list[str] = []
    in_word = False
    drop = False  # the next word is a redirection's target
    i, n = 0, len(script)
    while i < n:
        m = _SH_SPECIAL.search(script, i)
        k = m.start() if m is not None else n
        if k > i:
            w.append(script[i:k])
            in_word = True
            i = k
            continue
        c = script[i]
        if c in " \t\r":
            if in_word:
                if not drop:
                    yield "".join(w)
                drop = False
                w.clear()
                in_word = False
            i += 1
        elif c == "\\":
            if script[i + 1 : i + 2] == "\n":
                i += 2  # a line continued
                continue
            w.append(script[i + 1 : i + 2])
            in_word = True
            i += 2
        elif c == "'":
            k = script.find("'", i + 1)
            if k < 0:
                yield None
                return
            w.append(script[i + 1 : k])
            in_word = True
            i = k + 1
        elif c == '"':
            k = i + 1
            while k < n and script[k] != '"':
                k += 2 if script[k] == "\\" else 1
            if k >= n:
                yield None
                return
            w.append(script[i + 1 : k])
            in_word = True
            i = k + 1
        elif c == "#" and not in_word:
            k = script.find("\n", i)
            i = n if k < 0 else k
        elif c == "#" or (c == "$" and script[i + 1 : i + 2] not in ("(", "{")):
            w.append(c)
            in_word = True
            i += 1
        elif c in "$`" or (c in "<>" and script[i + 1 : i + 2] == "("):
            # a command, process or parameter substitution: kept whole (a command runs)
            k = script.find("`", i + 1) if c == "`" else _sh_close(script, i + 1)
            if k < 0:
                yield None
                return
            w.append(script[i : k + 1])
            in_word = True
            i = k + 1
        elif c in "<>":
            k = i
            while k < n and script[k] in "<>&|":
                k += 1
            if "<<" in script[i:k] and script[i:k] != "<<<":
                yield None  # a here-document: its lines are not commands
                return
            if in_word and not "".join(w).isdigit() and not drop:
                yield "".join(w)  # `cmd>out`: the word before is the command's
            w.clear()
            in_word = False
            drop = True  # the target, attached (`>&2`, `>out`) or the next word
            i = k
            while i < n and script[i] in " \t":
                i += 1
        else:  # ; & | newline ( )
            if c in "()":
                yield None
                return
            two = script[i : i + 2]
            if in_word and not drop:
                yield "".join(w)
            w.clear()
            in_word = False
            if two == "&>":  # `&> file`: a redirection
                i += 2 + (script[i + 2 : i + 3] == ">")
                while i < n and script[i] in " \t":
                    i += 1
                drop = True
                continue
            drop = False
            if two == ";;":
                yield None
                return
            if two in ("&&", "||"):
                yield two
                i += 2
            elif two == "|&":
                yield "|"
                i += 2
            else:
                yield ";" if c == "\n" else c
                i += 1
    if in_word and not drop:
        yield "".join(w)


#: the characters a shell script's words end or change at
_SH_SPECIAL = lazy_re(r"[ \t\r\n\\'\"#$`<>;&|()]")


def _sh_close(s: str, i: int) -> int:
    """The index of the bracket that closes the one at ``s[i]`` (quotes skipped), or -1."""
    pair = {"(": ")", "{": "}"}[s[i]]
    depth = 0
    k = i
    n = len(s)
    while k < n:
        c = s[k]
        if c == "\\":
            k += 2
            continue
        if c == "'":
            k = s.find("'", k + 1)
            if k < 0:
                return -1
        elif c == '"':
            k += 1
            while k < n and s[k] != '"':
                k += 2 if s[k] == "\\" else 1
        elif c == s[i]:
            depth += 1
        elif c == pair:
            depth -= 1
            if depth == 0:
                return k
        k += 1
    return -1


def _sh_command(argv: list[str], limits: list[tuple[float, str]] | None) -> tuple[Any, bool, str | None]:
    """What one simple command of a script does: ``(status, ends, why)``, the status 0 or 1
    when known (None when not), whether it ends the script, and why it runs nothing; the
    status ``"runs"`` when it may run something."""
    if any(s in a for a in argv for s in _SH_RUNS):
        return "runs", False, None
    k = 0
    while k < len(argv) and _sh_assignment(argv[k]):
        k += 1
    argv = argv[k:]
    if not argv:
        return 0, False, None  # variable assignments only
    head = argv[0]
    if head in _SH_COMPOUND:
        return "runs", False, None
    if head in ("exit", "logout"):
        code = argv[1] if len(argv) > 1 else ""
        return (0 if code in ("", "0") else 1), True, None
    if head in _SH_STATE:
        return None, False, None
    if head == "exec":
        if len(argv) == 1:
            return 0, False, None  # redirections only
        why = _noop(argv, False, limits)
        return ("runs", False, None) if why is None else (None, True, why)
    why = _noop(argv, False, limits)
    if why is None:
        return "runs", False, None
    b = _base_name(head)
    return (0 if b in ("true", ":", "echo", "printf") else 1 if b == "false" else None), False, why


def _sh_assignment(a: str) -> bool:
    """True for a ``NAME=value`` word."""
    name, eq, _ = a.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[:1].isdigit()


def _noop_script(script: str, limits: list[tuple[float, str]] | None = None) -> str | None:
    """Why a shell script runs nothing: every command it reaches does nothing. Read in order,
    ``&&`` and ``||`` skip what a known status skips (``true || CMD``, ``false && CMD``), an
    ``exit`` (or ``exec`` of a no-op) ends it, comments are no commands. Anything it does not
    follow (compound commands, subshells, here-documents, command substitutions) may run.
    Only a script of one command tells what a ``timeout`` in it bounds (added to ``limits``)."""
    own: list[tuple[float, str]] = []
    words = _sh_words(script)
    reasons: list[str] = []
    argv: list[str] = []
    count = 0  # commands read
    last: Any = 0  # the status of the and-or list so far (None: unknown)
    before = ";"  # the operator before the current pipeline
    runs: Any = True  # whether the current pipeline runs (None: it may)
    status: Any = 0
    ends = False
    length = 0  # commands of the current pipeline looked at
    for t in itertools.chain(words, (";",)):
        if t is None:
            return None
        if t not in _SH_OPS:
            argv.append(t)
            continue
        if not argv:
            if t != ";":  # (a line end after `&&`, `||`, `|` or `&` ends nothing)
                return None  # an operator after no command: a syntax error
            continue
        count += 1
        if length == 0:  # a pipeline starts: does it run?
            if before == "&&":
                runs = True if last == 0 else (False if last == 1 else None)
            elif before == "||":
                runs = True if last == 1 else (False if last == 0 else None)
            else:
                runs = True
        if runs is not False:
            status, ends, why = _sh_command(argv, own)
            if status == "runs":
                if (
                    own
                    and limits is not None
                    and count == 1
                    and not any(x is None or x not in _SH_OPS for x in words)
                ):
                    limits.extend(own)  # the script's only command runs under a timeout
                return None
            if why:
                reasons.append(why)
        argv = []
        length += 1
        if t == "|":
            continue
        if runs is not False:
            if ends and runs is True and length == 1 and t != "&":
                break  # `exit`, `exec true`: nothing after it runs
            last = status if runs is True else (status if status == last else None)
        if t in (";", "&"):
            last = 0
        before = t
        length = 0
    if not count:
        return "is an empty script (only comments or blanks)"
    detail = next((r for r in reasons if not r.startswith("is `")), None)
    return detail or f"is `{_short(script)}`"


def _noop_python(code: str) -> bool:
    """True for Python code that only passes, evaluates constants, imports, or reads stored
    data and prints or writes it out (``print(open(f).read())``, ``sys.stdout.write(...)``,
    ``with open(f) as h: print(h.read())``), runs a no-op program (``subprocess.run(['true'])``,
    ``os.system('exit 0')``), or holds what it runs where it never runs (``if False:``,
    after ``sys.exit()``)."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    # the names the subprocess and os modules (or their functions) go by
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in ("subprocess", "os"):
                    names[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module in ("subprocess", "os"):
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    try:
        return _noop_body(tree.body, names) is not None
    except RecursionError:
        return False


def _noop_body(body: list[Any], names: dict[str, str]) -> bool | None:
    """True when the statements run nothing to their end, False when they end the program
    first (``sys.exit()``, ``raise SystemExit``) having run nothing; None when they may run
    something."""
    import ast

    for node in body:
        if isinstance(node, (ast.Pass, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)):
            v = node.value
            if v is None or isinstance(v, (ast.Constant, ast.Name, ast.Attribute, ast.Subscript)):
                continue
            if isinstance(v, ast.Call) and _noop_call(v, names):
                if _call_name(v.func) in ("exit", "quit", "_exit"):
                    return False  # the program ends here: nothing after it runs
                continue
        if isinstance(node, ast.If):
            # a test of a constant picks its branch; another test must be a no-op itself,
            # and both branches then do nothing
            test = node.test
            if isinstance(test, ast.Constant):
                branch = _noop_body(node.body if test.value else node.orelse, names)
                if branch is False:
                    return False
                if branch:
                    continue
                return None
            if _noop_expr(test, names):
                a = _noop_body(node.body, names)
                b = _noop_body(node.orelse, names)
                if a is not None and b is not None:
                    if a is False and b is False:
                        return False
                    continue
            return None
        if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and not node.test.value:
            tail = _noop_body(node.orelse, names)  # the loop never runs; its `else` does
            if tail is None or tail is False:
                return tail
            continue
        if isinstance(node, ast.With) and all(
            isinstance(it.context_expr, ast.Call) and _noop_call(it.context_expr, names) for it in node.items
        ):
            inner = _noop_body(node.body, names)
            if inner is None or inner is False:
                return inner
            continue
        if (
            isinstance(node, ast.For)
            and not node.orelse
            and (
                isinstance(node.iter, ast.Name)
                or (isinstance(node.iter, ast.Call) and _noop_call(node.iter, names))
            )
            and _noop_body(node.body, names) is True
        ):
            continue
        if (
            isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and isinstance(node.exc.func, ast.Name)
            and node.exc.func.id == "SystemExit"
            and all(_noop_expr(a, names) for a in node.exc.args)  # not `SystemExit(main())`
        ):
            return False
        return None
    return True


def _call_name(f: Any) -> str:
    import ast

    return f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")


#: calls that only read a stored file and print it (or end the program)
_PRINTING = frozenset({
    "print", "exit", "quit", "_exit", "open", "read", "read_text", "readlines", "load", "loads",
    "dumps", "Path", "str", "repr", "format", "len", "sorted", "pprint",
    # ... and write it out (`sys.stdout.write(open(f).read())`, `json.dump(..., sys.stdout)`)
    "write", "writelines", "dump", "copyfileobj", "flush",
})  # fmt: skip
#: functions of subprocess and os that run a program (an argv, or a shell string)
_RUNNERS = frozenset({
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "os.system", "os.popen",
})  # fmt: skip


def _noop_expr(e: Any, names: dict[str, str]) -> bool:
    """An expression whose every call only reads and prints (a test that runs nothing)."""
    import ast

    return not any(isinstance(x, ast.Call) for x in ast.walk(e)) or _noop_call(e, names)


def _noop_call(v: Any, names: dict[str, str]) -> bool:
    """A call that only reads stored data and prints it (print/json.load/open...), ends the
    program, or runs a program given literally that does nothing (``subprocess.run(['true'])``),
    with every call among its arguments of the same kind."""
    import ast

    stack = [v]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            runner = _runner(node.func, names)
            if runner is not None:
                if not _literal_noop(node, runner):
                    return False
                continue  # its arguments are literals
            if _call_name(node.func) not in _PRINTING:
                return False
        stack.extend(ast.iter_child_nodes(node))
    return True


def _runner(f: Any, names: dict[str, str]) -> str | None:
    """``subprocess.run`` (or another of _RUNNERS) when the callee is one, by module or by
    the name it was imported as."""
    import ast

    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        mod = names.get(f.value.id)
        full = f"{mod}.{f.attr}" if mod in ("subprocess", "os") else None
    elif isinstance(f, ast.Name):
        full = names.get(f.id)
    else:
        return None
    return full if full in _RUNNERS else None


def _literal_noop(call: Any, runner: str) -> bool:
    """True for a runner's call whose command is a literal (a list of strings, or a string)
    that does nothing."""
    import ast

    if not call.args:
        return False
    a = call.args[0]
    shell = runner in ("os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput") or any(
        k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value for k in call.keywords
    )
    if isinstance(a, ast.Constant) and isinstance(a.value, str):
        return (_noop_script(a.value) if shell else _noop([a.value], False)) is not None
    if isinstance(a, (ast.List, ast.Tuple)) and a.elts and not shell:
        argv = [x.value for x in a.elts if isinstance(x, ast.Constant) and isinstance(x.value, str)]
        return len(argv) == len(a.elts) and _noop(argv, False) is not None
    return False


#: the time units, in seconds
_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def _cut_short(p: Any, limits: list[tuple[float, str]], add: Add) -> None:
    """KE103: a ``timeout`` around the replay shorter than the run it reproduces took (the
    serving run's duration, else the candidate's timed work per device)."""
    limit, how = min(limits)
    t = p.timing
    if t is None:
        return
    took = 0.0
    what = ""
    sv = t.serving
    if sv is not None and sv.duration is not None and sv.duration.unit in _SECONDS:
        took = sv.duration.value * _SECONDS[sv.duration.unit]
        what = "timing.serving.duration"
    elif sv is None and t.stats is not None and t.stats.unit in _SECONDS:
        st = t.stats
        f = _SECONDS[st.unit]
        if st.samples:
            took, what = sum(st.samples) * f, f"the sum of its {len(st.samples)} samples"
        elif t.repeats and st.min is not None:
            took, what = t.repeats * st.min * f, f"{t.repeats} repeats x min"
        h = p.hardware
        cond = t.conditions
        devices = max(
            int(h.count) if h is not None and h.count else 1,
            int(cond.device_count) if cond is not None and cond.device_count else 1,
        )
        took /= devices
        if devices > 1:
            what += f" over {devices} devices"
    if limit < took:
        add(
            (
                "KE103",
                "/replay/command",
                f"the replay command runs under `{how}` ({limit:g} s), but the run it reproduces took "
                f"{took:.4g} s ({what}): it was stopped before it could finish",
            )
        )


#: tags that name whatever was built last
_MOVING = frozenset(
    {
        "latest",
        "nightly",
        "main",
        "master",
        "dev",
        "develop",
        "edge",
        "stable",
        "rolling",
        "head",
        "current",
        "release",
        "rc",
        "beta",
        "alpha",
        "test",
    }
)


def _moving_tag(image: str) -> str | None:
    """How an image reference moves (its tag is absent or a moving one), or None."""
    name = image.strip()
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return "has no tag (it means `latest`)"
    tag = last.rsplit(":", 1)[1].casefold()
    if tag in _MOVING or tag.startswith(("nightly", "latest")):
        return f"has the moving tag `{tag}`"
    return None


# ---------------------------------------------------------------- KE106: the replay runs what the packet records

#: a serving client's or server's workload flags (long ones spelled with `-`), by the packet
#: field they state (``alias``, ``dataset``, ``prefix_len``: what reading the others needs)
_SERVING_FLAGS = {
    "--model": "model", "--model-path": "model", "--served-model-name": "alias",
    "--dataset-name": "dataset", "--num-prompts": "num_prompts",
    "--random-input-len": "input_len", "--input-len": "input_len", "--sonnet-input-len": "input_len",
    "--random-output-len": "output_len", "--output-len": "output_len", "--sonnet-output-len": "output_len",
    "--sharegpt-output-len": "output_len", "--random-prefix-len": "prefix_len",
    "--max-concurrency": "max_concurrency", "--request-rate": "request_rate",
    "--tensor-parallel-size": "tensor_parallel_size", "-tp": "tensor_parallel_size",
    "--tp-size": "tensor_parallel_size", "--tp": "tensor_parallel_size",
    # where a client sends its requests (guidellm's `--target`)
    "--base-url": "endpoint", "--host": "endpoint", "--target": "endpoint",
    # the format a server (or an offline engine) loads the weights in (vLLM's `-q` too)
    "--quantization": "quantization", "-q": "quantization",
}  # fmt: skip
#: a unique prefix of a serving flag (argparse reads `--max-conc` as `--max-concurrency`),
#: by the prefix (``-`` for ``_``), to the flag: prefixes of flags of one field only, of 6
#: characters or more, not a flag itself (``--dataset``, an old flag of its own, is none)
_SERVING_PREFIXES: dict[str, str] = {}
for _f in _SERVING_FLAGS:
    if _f[:2] == "--" and _SERVING_FLAGS[_f] != "dataset":
        for _k in range(6, len(_f)):
            _p = _f[:_k]
            if _p in _SERVING_FLAGS:
                continue
            _SERVING_PREFIXES[_p] = _f if _p not in _SERVING_PREFIXES else ""  # ("": ambiguous)
_SERVING_PREFIXES = {k: v for k, v in _SERVING_PREFIXES.items() if v}
del _f, _k, _p
#: the flags that take one word (a name), not one number or several
_ONE_WORD = frozenset(
    {"model", "alias", "dataset", "baseline", "reload", "check", "endpoint", "quantization"}
)
#: a kernel benchmark's workload flags: the GEMM dims (short ones: numbers only), its shape, its dtype
_KERNEL_FLAGS = {
    "--m": "m", "--n": "n", "--k": "k", "--M": "m", "--N": "n", "--K": "k",
    "-m": "m", "-n": "n", "-k": "k", "-M": "m", "-N": "n", "-K": "k",
    "--shape": "shape", "--dtype": "dtype",
}  # fmt: skip
#: serving programs run as ``python -m MODULE`` (or ``vllm ...``): the server's and the clients'
_SERVING_MODULES = {
    "vllm.entrypoints.openai.api_server": "server", "vllm.entrypoints.api_server": "server",
    "sglang.launch_server": "server", "sglang.bench_serving": "client",
    "sglang.bench_offline_throughput": "client", "vllm.benchmarks.benchmark_serving": "client",
}  # fmt: skip
_SERVING_SCRIPTS = frozenset({
    "benchmark_serving.py", "benchmark_throughput.py", "benchmark_latency.py", "bench_serving.py",
})  # fmt: skip
_SERVING_FIELDS = (
    "num_prompts", "input_len", "output_len", "max_concurrency", "request_rate", "tensor_parallel_size",
)  # fmt: skip
#: what may be worth reading in a replay at all (a serving program, a workload flag)
_WORKLOAD_MARKS = lazy_re(
    r"vllm|sglang|guidellm|bench(?:mark)?_serving|benchmark_(?:throughput|latency)|--shape|--dtype"
    r"|(?<![\w-])--?[mnkMNK](?![\w-])"
    # the run's own flags (a dry run, stored results, checks skipped, its baseline, repeats,
    # warm-up), and git or patch changing the code before it runs
    r"|--[\w-]*(?:dry|result|timing|measurement|verif|validat|check|correct|baseline|rep|iter|warmup|run|bench)"
    r"|(?:^|[\0\s;&|/(])(?:git|patch)(?=[\0\s]|$)"
    # files edited in place, code fetched or installed, a container run
    r"|(?:^|[\0\s;&|/(])(?:g?sed|perl|curl|wget|pip3?|uv|docker|podman|nerdctl)(?=[\0\s]|$)"
)
#: a shell word the shell (or the harness) fills in: its value is not in the replay
_FILLED = ("$", "`", "%(", "{{")
#: directories a relative model path starts with (``models/llama``: not a hub id)
_LOCAL_DIRS = frozenset({
    "models", "model", "weights", "checkpoints", "checkpoint", "ckpt", "ckpts", "data", "hf", "cache",
    "local", "tmp", "mnt", "home", "root", "workspace", "work", "artifacts", "output", "outputs",
    "pretrained", "hub", "snapshots", "storage", "scratch", "shared",
})  # fmt: skip
_Flags = dict[str, "list[tuple[str, str]] | None"]
#: one field the replay states: the flags as given (for the message), the values read
_Entry = tuple[list[tuple[str, str]], frozenset[Any]]
_NUMERIC = frozenset({
    "num_prompts", "input_len", "output_len", "max_concurrency", "request_rate", "tensor_parallel_size",
    "prefix_len", "m", "n", "k", "repeats", "iters", "warmup", "warmup_bare",
})  # fmt: skip


class _Workload:
    """The workload flags of one replay, read once: the serving fields it states (with
    their values as numbers), its model (by :func:`_model_key`), a GEMM's m/n/k, its
    ``--shape`` and ``--dtype`` values."""

    __slots__ = (
        "serving", "model", "mnk", "shape", "dtype", "getter", "expect", "mnk_expect",
        "run", "dry", "nocheck", "baseline", "repeats", "iters", "warmup", "warmup_bare", "git",
        "unpinned", "remote", "images", "quant",
    )  # fmt: skip

    def __init__(self, flags: _Flags) -> None:
        def entry(field: str) -> _Entry | None:
            occ = flags.get(field)
            if not occ:
                return None
            if field in _NUMERIC:
                return occ, frozenset(_number(v) for _, v in occ)
            return occ, frozenset(_model_key(v) if field == "model" else v for _, v in occ)

        serving = [(f, e) for f in _SERVING_FIELDS if (e := entry(f)) is not None]
        prefix = entry("prefix_len")
        if prefix is not None:  # a random prefix adds to each prompt, or is counted apart
            serving = [
                (f, (e[0], e[1] | {x + y for x in e[1] for y in prefix[1]}) if f == "input_len" else e)
                for f, e in serving
            ]
        self.serving = tuple(serving)
        self.model = entry("model")
        # the common case in one comparison: one value a field, the packet's the same
        names = [f for f, _ in serving] + (["model"] if self.model is not None else [])
        one = [e[0][0][1] for _, e in serving if len(e[0]) == 1] + (
            [self.model[0][0][1]] if self.model is not None and len(self.model[0]) == 1 else []
        )
        self.getter = operator.attrgetter(*names) if len(names) > 1 and len(one) == len(names) else None
        self.expect = (
            tuple(v if f == "model" else _as_field(_number(v)) for f, v in zip(names, one, strict=True))
            if self.getter is not None
            else None
        )
        m, n, k = entry("m"), entry("n"), entry("k")
        self.mnk = (m, n, k) if m and n and k else None
        self.mnk_expect = (
            tuple(_as_field(next(iter(e[1]))) for e in self.mnk)
            if self.mnk is not None and all(len(e[1]) == 1 for e in self.mnk)
            else None
        )
        self.shape = flags.get("shape") or None
        self.dtype = flags.get("dtype") or None
        self.quant = flags.get("quantization") or None
        # the run's own flags and the code it changes (read by :func:`_run_flags`)
        self.dry = flags.get("dry") or None
        self.nocheck = flags.get("nocheck") or None
        self.baseline = flags.get("baseline") or None
        self.repeats = entry("repeats")
        self.iters = entry("iters") if self.repeats is None else None  # (then per repeat)
        self.warmup = entry("warmup")
        self.warmup_bare = entry("warmup_bare")
        self.git: list[tuple[str, str | None, str]] | None = flags.get("git") or None  # type: ignore[assignment]
        self.unpinned = flags.get("unpinned") or None
        self.remote = flags.get("remote") or None
        self.images = flags.get("image") or None
        self.run = bool(
            self.dry or self.nocheck or self.baseline or self.repeats or self.iters or self.warmup
            or self.warmup_bare or self.git or self.unpinned or self.remote or self.images
        )  # fmt: skip

    def __bool__(self) -> bool:
        """Whether it holds workload flags (the run's own flags apart: ``run``)."""
        return bool(self.serving or self.model or self.mnk or self.shape or self.dtype or self.quant)


def _as_field(x: Any) -> Any:
    """A number as a packet's field holds it: ``inf`` as the string, a whole number as an int."""
    return "inf" if x == _INF else (int(x) if x.is_integer() else x)


_Readings = tuple["_Workload | None", "_Workload | None"]
_WORKLOAD_CACHE: dict[tuple[Any, ...], _Readings] = {}
_NOTHING: _Readings = (None, None)
_BY_ENV: Any = object()  # (a cache entry: read the argv again with its environment)


def _workload(cmd: list[str], shell: bool | None, env: Mapping[str, str] | None = None) -> _Workload | None:
    """The workload flags the replay gives the programs it runs (cached per argv), None
    when it gives none (or gives only values it does not hold: ``$N``)."""
    return _readings(cmd, shell, env)[0]


def _readings(
    cmd: list[str],
    shell: bool | None,
    env: Mapping[str, str] | None = None,
    base: tuple[Any, ...] | None = None,
) -> _Readings:
    """What the replay gives the programs it runs, read once (cached per argv, and per
    ``replay.env`` where a word names a variable): its workload flags (None when it gives
    none, or only values it does not hold: ``$N``), and its run's own flags and code changes
    (None when none: ``_Workload.run``)."""
    if base is None:  # (the argv's key: the caller may have built it)
        base = tuple(cmd) if not shell else ("\0sh", *cmd)
    hit = _WORKLOAD_CACHE.get(base)
    key = base
    if hit is _BY_ENV:  # (an argv that names a variable: read per environment)
        key = (*base, "\0env", *sorted(env.items())) if env else (*base, "\0env")
        hit = _WORKLOAD_CACHE.get(key)
    if hit is None:
        joined = "\0".join(cmd)
        named = "$" in joined
        flags = (
            _read_workload(cmd, bool(shell), env if named else None)
            if _WORKLOAD_MARKS.search(joined)
            else None
        )
        w = _Workload(flags) if flags else None
        hit = (w if w else None, w if w is not None and w.run else None) if w is not None else _NOTHING
        size = sum(map(len, cmd)) + (sum(len(k) + len(v) for k, v in env.items()) if env else 0)
        if len(_WORKLOAD_CACHE) < 4096 and size <= CACHED_CHARS:
            if named and flags is not None:
                # the argv's entry says: read it with its environment (kept under both)
                _WORKLOAD_CACHE[base] = _BY_ENV
                _WORKLOAD_CACHE[(*base, "\0env", *sorted(env.items())) if env else (*base, "\0env")] = hit
            else:
                _WORKLOAD_CACHE[base] = hit
    return hit


def _read_workload(cmd: list[str], shell: bool, env: Mapping[str, str] | None = None) -> _Flags | None:
    """Field -> ``[(flag, value), ...]`` for each workload flag of the programs the replay
    runs; None for a field whose value the replay does not hold (``$N``). A ``$NAME`` is
    read as ``replay.env`` (``env``) or the script before it sets it."""
    argvs: list[list[str]] = []
    if not (_script_runs(" ".join(cmd), argvs, 0, env) if shell else _argv_runs(cmd, argvs, 0, env, env)):
        return None  # a script not read to its end may run the workload elsewhere
    out: _Flags = {}
    dry: dict[str, tuple[int, tuple[str, str]]] = {}  # program -> (when, how) it is told not to measure
    clean: dict[str, int] = {}  # program -> when it last runs told nothing of the kind
    git = _GitReader()
    unpinned: list[tuple[str, str]] = []  # code fetched and run, or installed at a moving ref
    pending: list[tuple[str, str]] = []  # ... before a program that runs
    for i, argv in enumerate(argvs):
        if argv[:1] == [_MARK]:
            if argv[1] == "image":
                got = out.setdefault("image", [])
                if got is not None:
                    got.append(("run", argv[2]))
            else:
                pending.append((argv[1], argv[2]))
            continue
        if argv:
            b = _base_name(argv[0])
            if b in _SED_PERL:
                edit = _edits_in_place(argv)
                if edit is not None:
                    git.edit(edit)
                    continue
            elif b in ("pip", "pip3", "uv"):
                moving = _pip_moving(argv)
                if moving is not None:
                    pending.append(("install", moving))
        at = _serving_at(argv)
        if at is not None:
            _read_serving(argv, at[0], at[1], out)
        else:
            _read_kernel(argv, out)
        if not argv:
            continue
        if _base_name(argv[0]) in _UTILITIES or (argv[0] == "uv" and argv[1:2] == ["pip"]):
            git.read(argv)
            continue
        git.runs()
        unpinned.extend(pending)
        pending.clear()
        told = _read_run_flags(argv, out)
        if told is None:
            clean[argv[0]] = i
        else:
            dry.setdefault(argv[0], (i, told))
    # a program told not to measure that the replay also runs to measure (`bench --dry-run
    # && bench`) measures; so does one that another program runs after (`hf download
    # --dry-run && vllm bench ...`: a preflight)
    last = max(clean.values(), default=-1)
    idle = [v for k, (i, v) in dry.items() if k not in clean and last < i]
    if idle:
        out["dry"] = idle
    if git.ops:
        out["git"] = git.ops  # type: ignore[assignment]
    if unpinned:
        out["unpinned"] = unpinned
    if "alias" in out:  # a client's --model that names the server's alias is no model
        aliases = out.pop("alias")
        models = out.get("model")
        if aliases is None:
            out.pop("model", None)  # (an alias the replay does not hold: any may be it)
        elif models:
            names = {v for _, v in aliases}
            out["model"] = [m for m in models if m[1] not in names]
    out.pop("dataset", None)
    return {k: v for k, v in out.items() if v} or None


#: the head of a note :func:`_argv_runs` adds to its argvs (no program is named so): ``[_MARK,
#: "image", IMAGE]`` a container run from IMAGE, ``[_MARK, "fetch", WHAT]`` code fetched and run
_MARK = "\0mark"
#: editors that may change files in place
_SED_PERL = frozenset({"sed", "gsed", "perl"})
#: the files an in-place edit changes the code in (by extension): source, not configuration
_CODE_FILES = frozenset({
    "py", "pyx", "pxd", "pyi", "cu", "cuh", "c", "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx", "inl",
    "triton", "mojo", "rs", "jl", "sh", "bash", "cl", "metal", "hip", "mlir", "ptx", "s", "go", "java",
})  # fmt: skip
_SED_VALUED = frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"})


def _edits_in_place(argv: list[str]) -> str | None:
    """``sed -i ... FILE`` or ``perl -pi -e ... FILE`` that edits a source file of the
    replay's folder (a relative path, not ``../``): the command (shortened); None otherwise."""
    b = _base_name(argv[0])
    inplace = False
    script = False  # the code given with -e/-f (else the first positional is it)
    files: list[str] = []
    k = 1
    n = len(argv)
    while k < n:
        a = argv[k]
        k += 1
        if a == "--":
            files.extend(argv[k:])
            break
        if a[:2] == "--":
            name = a.partition("=")[0]
            if name == "--in-place":
                inplace = True
            elif name in ("--expression", "--file"):
                script = True
                k += 0 if "=" in a else 1
            elif name in _SED_VALUED:
                k += 0 if "=" in a else 1
            continue
        if a[:1] == "-" and len(a) > 1:
            opts = a[1:]
            if b == "perl":
                # -i[ext], -e CODE, -p, -n, -l[oct], -0[oct], -M/-m module, -I dir
                if "i" in opts.split("e", 1)[0].lstrip("pnlaswWtTcCuUdDxXE0123456789"):
                    inplace = True
                if opts[:1] in "MmI" and opts[:1]:
                    k += 0 if len(opts) > 1 else 1
                    continue
                if "e" in opts or "E" in opts:
                    script = True
                    k += 1  # the code
                continue
            # sed: -i[SUFFIX] (a suffix ends the run), -e SCRIPT, -f FILE, -n -E -r -s -z -u
            for j, c in enumerate(opts):
                if c == "i":
                    inplace = True
                    break
                if c in "efl":
                    if c != "l":
                        script = True
                    if j == len(opts) - 1:
                        k += 1
                    break
            continue
        files.append(a)
    if not inplace:
        return None
    if not script and b != "perl":
        files = files[1:]  # the script
    elif not script:
        files = files[1:]  # perl: a program file
    for x in files:
        ext = x.rsplit(".", 1)[-1].casefold() if "." in x.rsplit("/", 1)[-1] else ""
        if (
            ext in _CODE_FILES
            and x[:1] not in ("/", "~", "$", "-")
            and not x.startswith("..")
            and not any(f in x for f in _FILLED)
        ):
            return _short(" ".join(argv))
    return None


#: what a ``pip install`` argument pins: ``git+URL@REF`` (or ``NAME @ git+URL@REF``)
_VCS_REF = lazy_re(r"(?:git|hg|svn|bzr)\+[a-z]+://[^\s#]*")


def _pip_moving(argv: list[str]) -> str | None:
    """The argument of ``pip install`` (``uv pip install``) that installs a repository at a
    moving ref (a branch, a tag or none: not a commit hash), or None."""
    try:
        k = argv.index("install")
    except ValueError:
        return None
    for a in argv[k + 1 :]:
        m = _VCS_REF.search(a)
        if m is None:
            continue
        url = m.group(0)
        path = url.split("://", 1)[1]
        path = path.split("/", 1)[1] if "/" in path else ""
        ref = path.rsplit("@", 1)[1] if "@" in path else ""
        if any(f in ref for f in _FILLED):
            continue
        if not (7 <= len(ref) <= 64 and not ref.strip(_HEX_DIGITS)):
            return _short(a)
    return None


#: a variable a shell word names: ``$NAME`` or ``${NAME}``
_VAR_REF = lazy_re(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")


def _expand(word: str, known: Mapping[str, str] | None) -> str:
    """A word with the variables it names whose values are ``known`` filled in (the rest,
    and a word that runs a command, left as they are)."""
    if not known or "$" not in word or "$(" in word or "`" in word:
        return word

    def value(m: re.Match[str]) -> str:
        v = known.get(m.group(1) or m.group(2))
        return m.group(0) if v is None else v

    return _VAR_REF.sub(value, word)


#: builtins that set or drop variables this reader cannot follow: after one, none is known
_SH_UNKNOWN = frozenset({"read", "mapfile", "readarray", "getopts", "eval", "source", ".", "let"})
#: builtins that set the variables their ``NAME=value`` arguments name
_SH_SETTERS = frozenset({"export", "declare", "typeset", "local", "readonly"})


def _argv_runs(
    cmd: list[str],
    out: list[list[str]],
    depth: int,
    env: Mapping[str, str] | None = None,
    fill: Mapping[str, str] | None = None,
) -> bool:
    """Add to ``out`` the argv of the program ``cmd`` runs (past wrappers, interpreters and
    containers; each command of a shell script); False when a script in it cannot be read
    to its end. ``env``: the variables a script it runs starts with; ``fill``: those filled
    into the argv it adds (a harness expands ``$NAME`` in a replay's argv from its env)."""
    if fill and depth == 0:
        out = _Filled(out, fill)
    if depth > 8:
        return False
    i = 0
    n = len(cmd)
    while i < n:
        prog = _base_name(cmd[i])
        if prog in _WRAPPERS:
            if prog == "sbatch":
                seen: dict[str, str] = {}
                _skip_opts(cmd, i + 1, _WRAP_SPECS["sbatch"], seen)
                wrap = seen.get("--wrap")
                return True if wrap is None else _script_runs(wrap, _unfilled(out), depth + 1, env)
            j, _why = _past_wrapper(cmd, i, prog, None)
            if j is None:
                return True  # a no-op (KE103's) or out of sight: no flags to read
            i = j
            continue
        if prog in _SHELLS:
            if prog == "busybox":
                i += 1
                continue
            script = _shell_script(cmd, i)
            if script is None:
                out.append(cmd[i + 1 :])  # a script file and its arguments
                return True
            return _script_runs(script, _unfilled(out), depth + 1, env)
        if prog in _PYTHONS:
            mode, j = _python_mode(cmd, i)
            if mode == "-m" and j < n:
                out.append(cmd[j:])  # the module names the program
            elif mode is None:
                out.append(cmd[i + 1 :])  # the script (after the interpreter's options)
            return True
        if prog in _CONTAINERS:
            image = _run_image(cmd, i, prog)
            if image is not None:
                out.append([_MARK, "image", image])
            _why, argv, own = _container_target(cmd, i, prog)
            if argv is None:
                return True
            if own:  # the image's entrypoint: vllm/vllm-openai's is vLLM's OpenAI server
                image = argv[0].rsplit("/", 1)[-1]
                head = "vllm.entrypoints.openai.api_server" if image.startswith("vllm-openai") else argv[0]
                out.append([head, *argv[1:]])
                return True
            return _argv_runs(argv, out, depth + 1, env)
        out.append(cmd[i:])
        return True
    return True


def _shell_script(cmd: list[str], i: int) -> str | None:
    """The ``-c`` script of a shell at ``cmd[i]`` (``bash -lc SCRIPT``), None for a script file."""
    script, j, flag = _shell_options(cmd, i)
    if not script or flag is not None:  # a script file, or only its help or version
        return None
    return cmd[j] if j < len(cmd) else ""


def _script_runs(script: str, out: list[list[str]], depth: int, env: Mapping[str, str] | None = None) -> bool:
    """Add to ``out`` the programs each command of a shell script runs; False when the
    script holds what this reader does not follow (subshells, here-documents). A ``$NAME``
    is read as the value ``env`` gives it, or that a plain ``NAME=value`` (``export
    NAME=value``) sets before it, in a script of simple commands only (no ``if``, loop or
    ``read``: what those set is not known)."""
    if depth > 8 or len(script) > 65536:
        return False
    words = list(_sh_words(script))
    if None in words:
        return False
    known: dict[str, str] | None = dict(env) if env else {}
    if "$" not in script or "=" not in script and not known:
        known = None  # (nothing to fill in)
    argv: list[str] = []
    before = ";"  # the operator before the command read
    prev: list[str] = []  # the command before it
    for t in itertools.chain(words, (";",)):
        assert t is not None
        if t not in _SH_OPS:
            argv.append(t)
            continue
        k = 0
        while k < len(argv) and (argv[k] in _SH_COMPOUND or _sh_assignment(argv[k])):
            k += 1  # `do CMD`, `then CMD`, `VAR=1 CMD`
        if known is not None:
            if any(a in _SH_COMPOUND for a in argv[:k]) or (k < len(argv) and argv[k] in _SH_UNKNOWN):
                known = None  # a branch or a loop, or a builtin that sets what it reads: no more known
            elif k == len(argv) or (k < len(argv) and argv[k] in _SH_SETTERS):
                # `NAME=value` alone (it sets the shell's), `export NAME=value`
                names = argv[:k] if k == len(argv) else argv[k + 1 :]
                setter = argv[k] if k < len(argv) else ""
                plain = before in (";", "&&") and not (setter and any(a[:1] in "-+" for a in names))
                for a in names:
                    name, eq, v = a.partition("=")
                    if not eq:
                        continue
                    if plain and not any(x in v for x in _FILLED):
                        known[name] = v
                    else:
                        known.pop(name, None)
            elif k < len(argv) and argv[k] == "unset":
                for a in argv[k + 1 :]:
                    known.pop(a, None)
            if known is not None and k < len(argv):
                argv = argv[:k] + [_expand(a, known) for a in argv[k:]]
        if k < len(argv):
            cmd = argv[k:]
            if before == "|" and prev and _base_name(prev[0]) in ("curl", "wget") and _runs_stdin(cmd):
                out.append([_MARK, "fetch", _short(" ".join(prev)) + " | " + _short(" ".join(cmd))])
            if not _argv_runs(cmd, out, depth + 1, env):
                return False
            prev = cmd
        else:
            prev = []
        before = t
        argv = []
    return True


class _Filled(list):  # type: ignore[type-arg]
    """A list of argvs that fills the variables it knows into each argv appended to it
    (and appends to the list it stands for)."""

    def __init__(self, into: list[list[str]], fill: Mapping[str, str]) -> None:
        super().__init__()
        self.into = into
        self.fill = fill

    def append(self, argv: list[str]) -> None:
        self.into.append(argv if argv[:1] == [_MARK] else [_expand(a, self.fill) for a in argv])


def _unfilled(out: list[list[str]]) -> list[list[str]]:
    """The list a :class:`_Filled` stands for (a script fills in its own variables)."""
    return out.into if isinstance(out, _Filled) else out


def _runs_stdin(cmd: list[str]) -> bool:
    """True for a shell or an interpreter that runs the code it reads on standard input
    (``bash``, ``sh -s``, ``python -``, ``python3``), as ``curl URL | bash`` does."""
    b = _base_name(cmd[0])
    if b in _SHELLS:
        script, j, flag = _shell_options(cmd, 0)
        if script or flag is not None:
            return False
        return j >= len(cmd) or cmd[j - 1] == "-" or any(a[:1] == "-" and "s" in a[1:] for a in cmd[1:j])
    if b in _PYTHONS or b in ("perl", "ruby", "node"):
        rest = [a for a in cmd[1:] if a[:1] != "-" or a == "-"]
        if any(a in ("-c", "-m", "-e") or a[:2] in ("-c", "-m", "-e") for a in cmd[1:]):
            return False
        return not rest or rest[0] == "-"
    return False


def _run_image(cmd: list[str], i: int, prog: str) -> str | None:
    """The image ``docker``/``podman``/``nerdctl run`` at ``cmd[i]`` runs, None for none (or
    another container runner, or an image the replay does not hold: ``$IMAGE``)."""
    if prog not in ("docker", "podman", "nerdctl"):
        return None
    n = len(cmd)
    seen: dict[str, str] = {}
    j = _skip_opts(cmd, i + 1, _DOCKER_GLOBAL, seen)
    if j < n and cmd[j] == "container":
        j += 1
    if j >= n or cmd[j] != "run":
        return None
    j = _skip_opts(cmd, j + 1, _DOCKER_RUN, seen)
    if j >= n or any(f in cmd[j] for f in _FILLED):
        return None
    return cmd[j]


def _serving_at(argv: list[str]) -> tuple[str, int] | None:
    """Where a serving program starts in an argv (``vllm serve``, ``vllm bench serve``,
    ``python -m sglang.bench_serving``...), as ``(kind, index of its arguments)``: ``serve``
    for ``vllm serve`` (its model comes first), ``server``, ``client`` or ``guidellm``."""
    n = len(argv)
    for p in range(n):
        a = argv[p]
        kind = _SERVING_MODULES.get(a)
        if kind is not None:
            return kind, p + 1
        b = _base_name(a)
        if b == "vllm" or a == "vllm.entrypoints.cli.main":
            sub = argv[p + 1] if p + 1 < n else ""
            if sub == "serve":
                return "serve", p + 2
            if sub == "bench":
                return "client", p + 2
        elif b in _SERVING_SCRIPTS:
            return "client", p + 1
        elif b == "guidellm":
            return "guidellm", p + 1
    return None


def _number(v: str) -> float | None:
    """A flag's value as a number (``inf`` too), None when it is not one."""
    try:
        x = float(v)
    except ValueError:
        return None
    return None if x != x else x


def _flag_values(
    args: list[str], table: dict[str, str], prefixes: Mapping[str, str] | None = None
) -> Iterator[tuple[str, str, list[str]]]:
    """``(field, flag, values)`` for each flag of ``table`` in ``args`` (``--flag=value``,
    ``--flag value``, ``--flag 1 2 4``; a long flag's `_` read as `-`; with ``prefixes``, a
    unique prefix of a flag read as it, as argparse reads it: ``--max-conc``)."""
    n = len(args)
    k = 0
    while k < n:
        a = args[k]
        k += 1
        if a[:1] != "-" or len(a) < 2:
            continue
        name, eq, v = a.partition("=")
        key = name.replace("_", "-") if name[1] == "-" and "_" in name else name
        field = table.get(key)
        if field is None and prefixes is not None and key in prefixes:
            field = table[prefixes[key]]
        if field is None:
            continue
        if eq:
            yield field, name, [v]
            continue
        vals: list[str] = []
        if field not in _ONE_WORD:
            while k < n and _number(args[k]) is not None:
                vals.append(args[k])
                k += 1
        if not vals and k < n and args[k][:1] != "-":
            vals.append(args[k])
            k += 1
        yield field, name, vals


def _put(out: _Flags, field: str, flag: str, vals: list[str], numeric: bool) -> None:
    """Record a flag's values: a value the replay does not hold (``$N``, a word where a
    number goes) leaves the field unknown (None) for good."""
    if field in out and out[field] is None:
        return
    if not vals or any(any(f in v for f in _FILLED) or (numeric and _number(v) is None) for v in vals):
        out[field] = None
        return
    got = out.setdefault(field, [])
    assert got is not None
    got.extend((flag, v) for v in vals)


def _read_serving(argv: list[str], kind: str, start: int, out: _Flags) -> None:
    args = argv[start:]
    found: list[tuple[str, str, list[str]]] = []
    if kind == "serve" and args and args[0][:1] != "-":
        found.append(("model", "vllm serve", [args[0]]))  # `vllm serve MODEL`
        args = args[1:]
    dataset = None
    last: dict[str, int] = {}  # flag (in full) -> its last occurrence (argparse keeps the last value)
    # (guidellm reads its options with click: no prefixes)
    for field, flag, vals in _flag_values(
        args, _SERVING_FLAGS, None if kind == "guidellm" else _SERVING_PREFIXES
    ):
        if kind == "guidellm" and field not in ("model", "endpoint"):
            continue  # its rates and lengths are read other ways
        if flag == "-q" and kind not in ("serve", "server"):
            continue  # (`-q` is vLLM's server's `--quantization`; a client's may be anything)
        if field == "endpoint":
            if kind in ("client", "guidellm") and vals:
                host = _public_host(vals[0])
                if host is not None:
                    got = out.setdefault("remote", [])
                    if got is not None:
                        got.append((flag, vals[0]))
            continue
        if field == "dataset":
            dataset = vals[0].casefold() if vals else None
        key = flag.replace("_", "-")
        last[_SERVING_PREFIXES.get(key, key)] = len(found)
        found.append((field, flag, vals))
    for at, (field, flag, vals) in enumerate(found):
        f = flag.replace("_", "-")
        f = _SERVING_PREFIXES.get(f, f)
        if last.get(f, at) != at:
            continue  # a value given again later: argparse keeps that one
        # a dataset's own lengths count only where that dataset runs
        if f.startswith("--random-") and dataset is not None and not dataset.startswith("random"):
            continue
        if f.startswith("--sonnet-") and dataset != "sonnet":
            continue
        if f.startswith("--sharegpt-") and dataset != "sharegpt":
            continue
        _put(out, field, flag, vals, field not in _ONE_WORD)


#: host names that stay inside a site (no public DNS name): a client sending to one of them
#: reaches a machine of the run's own
_SITE_SUFFIXES = (
    ".local", ".localhost", ".internal", ".lan", ".home.arpa", ".localdomain", ".svc", ".intranet",
    ".corp", ".private", ".home", ".test", ".example", ".invalid", ".cluster",
)  # fmt: skip


def _public_host(v: str) -> str | None:
    """The host a client's ``--base-url``/``--host`` names when it is a public one: a domain
    name, or a global address; None for loopback, private and link-local addresses, a bare
    name (``server``, a container's), a site's own names (``*.local``, ``*.internal``,
    ``*.svc``...), or a value the replay does not hold (``$HOST``)."""
    u = v.strip()
    if not u or any(f in u for f in _FILLED):
        return None
    try:
        host = urlsplit(u if "://" in u else "//" + u).hostname or ""
    except ValueError:
        return None
    host = host.rstrip(".").casefold()
    if not host:
        return None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    if ip is not None:
        return host if ip.is_global else None
    if "." not in host or host == "localhost" or host.endswith(_SITE_SUFFIXES):
        return None
    if host.replace(".", "").isdigit():
        return None  # (not an address: nothing to say)
    return host


def _read_kernel(argv: list[str], out: _Flags) -> None:
    pytest = any(_base_name(a) in ("pytest", "py.test") for a in argv)  # (`uv run pytest -k 4096 -n 8`)
    local: _Flags = {}
    for field, flag, vals in _flag_values(argv, _KERNEL_FLAGS):
        # -m/-n/-k: a number only (`-m module`, `-k expr`, `-n env` are others)
        if flag[1] != "-" and (
            pytest or not vals or (_number(vals[0]) is None and not any(f in vals[0] for f in _FILLED))
        ):
            continue
        _put(local, field, flag, vals, field in ("m", "n", "k"))
    if not ("m" in local and "n" in local and "k" in local):
        for f in ("m", "n", "k"):  # a GEMM's dims: all three, or none read
            local.pop(f, None)
    for field, got in local.items():
        if got is None:
            out[field] = None
        else:
            for flag, v in got:
                _put(out, field, flag, [v], field in ("m", "n", "k"))


#: programs a replay runs around the benchmark that are not it (they prepare, print or
#: change the code): their flags are not the benchmark's
_UTILITIES = _NOOPS | _SH_STATE | frozenset({
    "git", "patch", "pip", "pip3", "mkdir", "rm", "cp", "mv", "ln", "touch", "chmod", "chown", "source",
    ".", "wget", "curl", "tar", "unzip", "apt", "apt-get", "pushd", "popd", "conda", "mamba", "npm",
    "yarn", "hg", "gh", "ssh", "scp", "rsync", "twine", "cmake", "ninja", "nvcc", "hipcc",
})  # fmt: skip
#: flags (one or two dashes, `_` read as `-`) that tell a benchmark not to measure:
#: ``dry`` a dry run (it may run stand-ins, as a harness's CPU ``--dry-run`` does),
#: ``norun`` run nothing
_RUN_SWITCHES = {
    **{f"--{n}": "dry" for n in ("dry-run", "dryrun")},
    **{f"--{n}": "norun" for n in (
        "print-only", "plan-only", "list-only", "no-run", "skip-run", "no-bench", "skip-bench",
        "no-benchmark", "skip-benchmark", "no-timing", "skip-timing",
    )},
    # ... and that tell it not to check its outputs
    **{f"--{n}": "nocheck" for n in (
        "no-verify", "skip-verify", "no-verification", "skip-verification", "disable-verify",
        "disable-verification", "no-check", "skip-check", "no-checks", "skip-checks", "no-correctness",
        "skip-correctness", "no-correctness-check", "skip-correctness-check", "no-check-correctness",
        "skip-check-correctness", "no-validate", "skip-validate", "no-validation", "skip-validation",
        "disable-validation", "no-verify-outputs", "skip-verify-outputs",
    )},
}  # fmt: skip
#: the run's flags that take a value: stored results it loads in place of measuring
#: (``reload``; not ``--results``, ``--from-json``, ``--cached``, ``--use-cache``: as often
#: where results go, a config, or a compile cache), a check turned off by its value
#: (``--verify false``), its baseline, its count of timed repeats (``repeats``; ``iters``
#: read only without one: beside it, iterations per repeat), of warm-up runs (``warmup``;
#: a bare ``--warmup`` is often milliseconds, as Triton's ``do_bench`` reads it:
#: ``warmup_bare``, compared only at 0; nor ``--rep``, Triton's milliseconds)
_RUN_VALUED = {
    **{f"--{n}": "reload" for n in (
        "load-results", "load-result", "results-from", "from-results", "reuse-results",
        "use-cached-results", "cached-results", "load-timings", "load-timing", "timings-from",
        "reuse-timings", "load-measurements",
    )},
    **{f"--{n}": "check" for n in (
        "verify", "validate", "check", "checks", "check-correctness", "correctness", "verification",
        "validation", "verify-outputs",
    )},
    **{f"--{n}": "baseline" for n in (
        "baseline", "baseline-provider", "baseline-impl", "baseline-lib", "baseline-library",
        "baseline-backend",
    )},
    **{f"--{n}": "repeats" for n in (
        "repeats", "num-repeats", "n-repeats", "nrepeats", "repetitions", "num-repetitions", "reps",
        "num-reps", "n-reps",
    )},
    **{f"--{n}": "iters" for n in (
        "iters", "num-iters", "n-iters", "niters", "n-iter", "niter", "num-iter", "iterations",
        "num-iterations", "n-iterations", "timed-iters", "bench-iters", "benchmark-iters",
    )},
    **{f"--{n}": "warmup" for n in (
        "warmup-iters", "warmup-iterations", "num-warmup", "num-warmups", "num-warmup-iters",
        "n-warmup", "n-warmup-iters", "warmup-runs", "warmup-repeats", "warmup-reps", "warmups",
        "num-iters-warmup", "warmup-steps",
    )},
    "--warmup": "warmup_bare",
}  # fmt: skip
_FALSY = frozenset({"false", "0", "no", "off", "none", "n", "f", "disable", "disabled"})


def _read_run_flags(argv: list[str], out: _Flags) -> tuple[str, str] | None:
    """Read a program's own flags into ``out`` (checks turned off, its baseline, repeats,
    warm-up); return how it is told not to measure (``(kind, flag as given)``), or None."""
    told: tuple[str, str] | None = None
    args = argv[1:]
    for a in args:
        if a[:2] != "--":
            continue
        name, eq, v = a.partition("=")
        kind = _RUN_SWITCHES.get(name.replace("_", "-") if "_" in name else name)
        if kind is None or (eq and v.strip().casefold() in _FALSY):
            continue  # (`--dry-run=false`)
        if kind == "nocheck":
            got = out.setdefault("nocheck", [])
            if got is not None:
                got.append((name, v))
        elif told is None:
            told = (kind, a)
    for field, flag, vals in _flag_values(args, _RUN_VALUED):
        if field == "reload":
            if told is None or told[0] != "reload":
                told = ("reload", f"{flag} {vals[0]}" if vals else flag)
        elif field == "check":
            if vals and vals[0].strip().casefold() in _FALSY:
                got = out.setdefault("nocheck", [])
                if got is not None:
                    got.append((flag, vals[0]))
        else:
            _put(out, field, flag, vals, field in _NUMERIC)
    return told


#: git's options that take a value, by subcommand read here
_GIT_CLONE_VALUED = frozenset({
    "-b", "--branch", "-o", "--origin", "-u", "--upload-pack", "--reference", "--reference-if-able",
    "--depth", "-c", "--config", "--separate-git-dir", "--template", "--filter", "-j", "--jobs",
    "--shallow-since", "--shallow-exclude", "--bundle-uri", "--server-option",
})  # fmt: skip
#: ... that end a sequence of patches, or only show one: they change no code
_GIT_STOPS = frozenset({"--abort", "--quit", "--show-current-patch", "--help"})


class _GitReader:
    """What a replay's git (and ``patch``) commands do to the code before the benchmark
    runs, read in order: ``ops``, ``(what ran, the ref it moved to or None, where)`` for
    each command that changes the checked-out code (``git apply``/``am``/``pull``/
    ``merge``/``rebase``/``cherry-pick``/``revert``/``stash pop``, ``patch``, ``git
    checkout``/``switch``/``reset --hard``/``restore --source`` to a ref) and is followed
    by a program that runs; ``where`` is ``""`` for the replay's own folder, ``clone:URL``
    inside a clone the replay made (``git clone URL && cd DIR``). A command run in another
    folder (after another ``cd``, ``git -C DIR``, ``patch -d DIR``: a dependency) is not
    read."""

    __slots__ = ("ops", "pending", "where", "clones")

    def __init__(self) -> None:
        self.ops: list[tuple[str, str | None, str]] = []
        self.pending: list[tuple[str, str | None, str]] = []
        self.where: str | None = ""
        self.clones: dict[str, str] = {}

    def runs(self) -> None:
        """A program that is not a utility runs: what changed the code before it counts."""
        if self.pending:
            self.ops.extend(self.pending)
            self.pending.clear()

    def _dir(self, d: str) -> str | None:
        d = d.rstrip("/") or "/"
        if d in (".", "./"):
            return self.where
        url = self.clones.get(d)
        return None if url is None else "clone:" + url

    def edit(self, what: str) -> None:
        """A file of the folder the replay is in is edited in place (``sed -i``, ``perl -pi``)."""
        if self.where is not None:
            self.pending.append((what, None, self.where))

    def read(self, argv: list[str]) -> None:
        b = _base_name(argv[0])
        if b in ("cd", "pushd", "popd"):
            target = next((a for a in argv[1:] if a[:1] != "-"), None)
            self.where = None if target is None or b == "popd" else self._dir(target)
            return
        if b == "patch":
            if any(a in ("--dry-run", "--help", "--version") for a in argv):
                return
            where = self.where
            for k, a in enumerate(argv):
                if a in ("-d", "--directory"):
                    where = self._dir(argv[k + 1]) if k + 1 < len(argv) else None
                elif a.startswith(("--directory=", "-d")) and a not in ("-d",):
                    where = self._dir(a.partition("=")[2] if a.startswith("--") else a[2:])
            if where is not None:
                self.pending.append((_short(" ".join(argv)), None, where))
            return
        if b != "git":
            return
        where = self.where
        j = 1
        n = len(argv)
        while j < n and argv[j].startswith("-"):
            a = argv[j]
            if a in ("-C", "--git-dir", "--work-tree"):
                where = self._dir(argv[j + 1]) if j + 1 < n and a == "-C" else None
            elif a.startswith(("--git-dir=", "--work-tree=")):
                where = None
            j += 2 if a in _GIT_VALUED else 1
        if j >= n:
            return
        sub = argv[j]
        rest = argv[j + 1 :]
        if sub == "clone":
            pos = _positionals(rest, _GIT_CLONE_VALUED)
            if pos:
                url = pos[0]
                d = pos[1] if len(pos) > 1 else url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
                d = d[:-4] if d.endswith(".git") else d
                self.clones[d.rstrip("/")] = url
            return
        if where is None or not _GIT_STOPS.isdisjoint(rest):
            return
        op = _git_change(sub, rest)
        if op is not None:
            what = _short(" ".join(["git", sub, *rest]))
            self.pending.append((what, op or None, where))


def _positionals(args: list[str], valued: frozenset[str]) -> list[str]:
    """The arguments that are not options (nor their values), up to ``--``."""
    pos: list[str] = []
    k = 0
    while k < len(args):
        a = args[k]
        if a == "--":
            break
        if a[:1] == "-" and a != "-":
            k += 2 if a in valued else 1
            continue
        pos.append(a)
        k += 1
    return pos


_CHECKOUT_VALUED = frozenset({"-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"})
_SWITCH_VALUED = frozenset({"-c", "-C", "--create", "--force-create", "--orphan", "--conflict"})


def _git_change(sub: str, rest: list[str]) -> str | None:
    """How a git subcommand changes the checked-out code: the ref it moves the tree to, ``""``
    for a change of no ref (a patch applied, a merge, a pull), None for none."""
    if sub in ("apply",):
        if not {"--check", "--stat", "--numstat", "--summary"}.isdisjoint(rest) and "--apply" not in rest:
            return None
        return ""
    if sub in ("am", "pull", "merge", "rebase", "cherry-pick", "revert"):
        return ""
    if sub == "stash":
        return "" if rest[:1] in (["pop"], ["apply"]) else None
    if sub == "checkout":
        new = any(a in ("-b", "-B", "--orphan") for a in rest)
        pos = _positionals(rest, _CHECKOUT_VALUED)
        if new:
            return pos[0] if pos else None  # a new branch at its start point (none: HEAD)
        if not pos or pos[0] in (".", ":/"):
            return None  # files restored from the index
        return pos[0]
    if sub == "switch":
        pos = _positionals(rest, _SWITCH_VALUED)
        return pos[0] if pos else None
    if sub == "reset":
        if {"--hard", "--keep", "--merge"}.isdisjoint(rest):
            return None  # the working tree is left as it is
        pos = _positionals(rest, frozenset())
        return pos[0] if pos else None
    if sub == "restore":
        for k, a in enumerate(rest):
            if a in ("-s", "--source") and k + 1 < len(rest):
                return rest[k + 1]
            if a.startswith("--source="):
                return a.partition("=")[2]
        return None
    return None


def _shown(occ: list[tuple[str, str]]) -> str:
    """The flags as the replay gives them: `--num-prompts 1000`, `--request-rate 1 2 4`."""
    parts: list[str] = []
    for flag, v in occ[:6]:
        if parts and parts[-1].split(" ", 1)[0] == flag:
            parts[-1] += f" {v}"
        else:
            parts.append(f"{flag} {v}")
    return "`" + _short(" ".join(parts)) + "`" + (" ..." if len(occ) > 6 else "")


def _same(a: float, b: float) -> bool:
    """Equal numbers (to rounding); ``inf`` equals only itself."""
    return a == b or (abs(a) != _INF and abs(b) != _INF and abs(a - b) <= 1e-9 * max(abs(a), abs(b)))


_INF = float("inf")


def _runs_what_it_records(p: Any, t: Any, w: _Workload, add: Add) -> None:
    """KE106: each workload flag of the replay against the packet's field."""
    st = t.serving
    if st is not None:
        if w.quant is not None:
            _served_quantization(p, t, w.quant, add)
        if w.getter is not None and w.getter(st) == w.expect:
            return  # (the common case: every field as the replay gives it)
        for field, (occ, got) in w.serving:
            want = getattr(st, field)
            if want is None or want in got:
                continue
            x = float(want)  # (`inf` too)
            if x in got or any(_same(x, y) for y in got):
                continue
            said = f"{want:g}" if isinstance(want, float) else str(want)
            add(
                (
                    "KE106",
                    f"/task/serving/{field}",
                    f"task.serving.{field} is {said}, but the replay runs {_shown(occ)}: it reproduces "
                    "another workload",
                )
            )
        model = w.model
        if model is not None and st.model and _model_key(st.model) not in model[1]:
            occ = model[0]
            if all(_other_model(st.model, v) for _, v in occ):
                add(
                    (
                        "KE106",
                        "/task/serving/model",
                        f"task.serving.model is `{_short(st.model)}`, but the replay serves {_shown(occ)}: "
                        "another model",
                    )
                )
        return
    shapes = t.shapes
    if shapes and (w.mnk is not None or w.shape is not None):
        tm = p.timing
        sid = tm.shape_id if tm is not None else None
        timed = None
        if sid is None:
            if len(shapes) == 1:
                timed = shapes[0]
        else:
            for s in shapes:
                if s.id == sid:
                    timed = s
                    break
        if timed is not None:
            d = timed.dims
            if (
                w.shape is not None
                or w.mnk_expect is None
                or d is None
                or (d.get("m"), d.get("n"), d.get("k")) != w.mnk_expect
            ):
                _shape_flags(timed, shapes, w, add)
    dtype = w.dtype
    if dtype is not None and t.dtypes and not (len(dtype) == 1 and dtype[0][1] in t.dtypes):
        _dtype_flags(t.dtypes, dtype, add)


#: precision classes of 16 bits or wider
_WIDE = frozenset({"bf16", "fp16", "fp32", "tf32", "fp64"})


def _served_quantization(p: Any, task: Any, occ: list[tuple[str, str]], add: Add) -> None:
    """KE106: a server the replay starts with `--quantization` naming a format narrower than
    16 bits (fp8, int8, AWQ, GPTQ, bitsandbytes...) while the dtypes recorded (the task's,
    the candidate's conditions') are all 16-bit or wider: it serves another precision."""
    from ._tables import dtype_class
    from .serving import narrow_weights

    t = p.timing
    cond = t.conditions if t is not None else None
    lists = [d for d in (task.dtypes, cond.dtypes if cond is not None else None) if d]
    if not lists or not all(
        (dtype_class(d) if len(d) <= 64 else None) in _WIDE for dts in lists for d in dts
    ):
        return  # no dtypes recorded, or one of them narrow (or unknown)
    for flag, v in occ:
        if len(v) > 256:
            continue
        narrow = narrow_weights(v)
        if narrow is None and "bitsandbytes" in v.casefold():
            narrow = "int8/int4"
        if narrow is not None:
            shown = ", ".join(d for dts in lists for d in dts)
            add(
                (
                    "KE106",
                    "/replay/command",
                    f"the replay starts the server with `{_short(flag)} {_short(v)}` ({narrow} weights), but "
                    f"the dtypes recorded ({_short(shown)}) are all 16-bit or wider: it serves another precision",
                )
            )
            return


def _run_flags(p: Any, r: Any, w: _Workload, add: Add, idle: bool) -> None:
    """KE103: the benchmark is told not to measure (a dry run on the accelerator the packet
    measured, stored results loaded, no run). KE106: its own flags against the packet (its
    checks turned off beside a passed validation, another baseline than the packet's, fewer
    repeats or warm-up runs than the packet reports) and the code it runs (the pinned commit
    changed before it runs). Each at /replay/command."""
    tm = p.timing
    measured = tm is not None and (tm.stats is not None or tm.serving is not None)
    if w.dry and measured and not idle:
        hw = p.hardware
        for kind, shown in w.dry:
            if kind == "dry" and (hw is None or hw.vendor == "cpu"):
                continue  # a dry run on the CPU the packet names: stand-ins, measured there
            what = {
                "dry": f"is a dry run on the {hw.vendor if hw is not None else ''} device the packet measured",
                "norun": "is told to run no benchmark",
                "reload": "loads stored results in place of measuring",
            }[kind]
            add(
                (
                    "KE103",
                    "/replay/command",
                    f"the replay command gives the benchmark `{_short(shown)}`: it {what}, so it reproduces "
                    "nothing the packet measured",
                )
            )
            break
    v = p.validation
    if w.nocheck and v is not None and v.verdict == "passed":
        flag, val = w.nocheck[0]
        add(
            (
                "KE106",
                "/replay/command",
                f"validation.verdict is passed, but the replay runs the benchmark with `{_short(flag)}"
                f"{' ' + _short(val) if val else ''}`: the run it reproduces checks no outputs",
            )
        )
    b = tm.baseline if tm is not None else None
    if w.baseline and b is not None and b.provider:
        for flag, val in w.baseline:
            why = _other_baseline(b.provider, val)
            if why:
                add(
                    (
                        "KE106",
                        "/replay/command",
                        f"timing.baseline.provider is `{_short(b.provider)}`, but the replay runs `{flag} "
                        f"{_short(val)}` ({why}): it compares against another baseline",
                    )
                )
                break
    if tm is not None and (w.repeats or w.iters or w.warmup or w.warmup_bare):
        cond = tm.conditions
        reps = tm.repeats if tm.repeats is not None else (cond.repeats if cond is not None else None)
        warm = tm.warmup if tm.warmup is not None else (cond.warmup if cond is not None else None)
        field = "timing.repeats" if tm.repeats is not None else "timing.conditions.repeats"
        counts = w.repeats or w.iters
        if counts is not None and reps:
            occ, got = counts
            if None not in got and all(0 < x < reps for x in got):  # (0: KE103's)
                add(
                    (
                        "KE106",
                        "/replay/command",
                        f"{field} is {reps}, but the replay runs {_shown(occ)}: it times fewer repeats "
                        "than the packet reports",
                    )
                )
        field = "timing.warmup" if tm.warmup is not None else "timing.conditions.warmup"
        if warm:
            for entry, bound in ((w.warmup, warm), (w.warmup_bare, 1)):
                if entry is not None and None not in entry[1] and all(x < bound for x in entry[1]):
                    add(
                        (
                            "KE106",
                            "/replay/command",
                            f"{field} is {warm}, but the replay runs {_shown(entry[0])}: fewer warm-up "
                            "runs than the packet reports",
                        )
                    )
                    break
    if w.git:
        _pinned_code(r, w.git, add)
    if w.unpinned:
        how, what = w.unpinned[0]
        add(
            (
                "KE108",
                "/replay/command",
                f"the replay runs `{what}` before the benchmark: "
                + (
                    "it runs code fetched from a URL, which no pin names"
                    if how == "fetch"
                    else "it installs a repository at a moving ref (not a commit hash)"
                )
                + ", so the code that ran may not be the code pinned",
            )
        )
    if w.remote:
        flag, url = w.remote[0]
        hw = p.hardware
        add(
            (
                "KE108",
                "/replay/command",
                f"the replay's serving client sends its requests to `{flag} {_short(url)}`, a public host "
                f"({_public_host(url)}): it measures that service, not the "
                f"{_short(hw.device) if hw is not None else 'hardware'} "
                "the packet records",
            )
        )
    c = r.container
    if w.images and c is not None:
        pinned = c.image.partition("@")[0].strip()
        digest = (c.digest or c.image.partition("@")[2]).strip().casefold()
        for _, image in w.images:
            if _image_key(image.partition("@")[0]) == _image_key(pinned) and (
                "@" not in image or not digest or image.partition("@")[2].strip().casefold() == digest
            ):
                continue  # the image pinned (by its name, or with its digest)
            if digest and image.casefold().endswith("@" + digest):
                continue  # the digest pinned, under another name
            add(
                (
                    "KE105",
                    "/replay/command",
                    f"the replay runs the image `{_short(image)}`, but replay.container pins `{_short(c.image)}`"
                    + (f" (digest `{_short(c.digest)}`)" if c.digest else "")
                    + ": the container that ran is not the one pinned",
                )
            )
            break


def _image_key(image: str) -> str:
    """An image reference compared: Docker Hub's default registry and ``library/`` dropped,
    ``:latest`` for no tag, lower case."""
    x = image.strip().casefold()
    for pre in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if x.startswith(pre):
            x = x[len(pre) :]
            break
    if x.startswith("library/"):
        x = x[8:]
    if ":" not in x.rsplit("/", 1)[-1]:
        x += ":latest"
    return x


#: libraries one of which calls, or stands for, the other (cuBLAS runs cuBLASLt's kernels,
#: hipBLAS runs rocBLAS, which may run hipBLASLt)
_BASELINE_FAMILY = {
    "cublas": "cublas", "cublaslt": "cublas", "hipblas": "rocblas", "rocblas": "rocblas",
    "hipblaslt": "rocblas", "onemkl": "intel", "onednn": "intel",
}  # fmt: skip
#: words that name a reference implementation, not a vendor library
_REFERENCE_WORDS = frozenset({"naive", "eager", "reference", "ref", "numpy", "torch", "pytorch"})


def _other_baseline(provider: str, value: str) -> str | None:
    """Why a replay's ``--baseline`` value names another baseline than a vendor library
    ``provider``: a reference (``torch_naive``, ``eager``, ``numpy``, a reference entry of
    the registry) or another vendor library of the registry (``cuDNN`` for cuBLASLt, not
    ``cuBLAS``: the same family); None when it names the provider (a word of it will do:
    ``cublas_heuristic``) or cannot be placed (``best``, a file of no library's name)."""
    from ._tables import baseline_entry

    if len(provider) > 64 or len(value) > 128 or any(f in value for f in _FILLED):
        return None
    e = baseline_entry(provider)
    if e is None or e.kind != "vendor":
        return None
    fam = _BASELINE_FAMILY.get(e.key, e.key)
    whole = baseline_entry(value)
    if whole is not None:
        if whole.kind == "engine" or _BASELINE_FAMILY.get(whole.key, whole.key) == fam:
            return None
        return f"{'a reference' if whole.kind == 'reference' else 'another vendor library'}: {whole.name}"
    words = [x for x in re.split(r"[^a-z0-9]+", value.casefold()) if x]
    entries = [baseline_entry(x) if len(x) >= 4 else None for x in words]
    if any(x is not None and _BASELINE_FAMILY.get(x.key, x.key) == fam for x in entries):
        return None
    ref = next((x for x in words if x in _REFERENCE_WORDS), None)
    if ref is not None:
        return f"`{ref}`: a reference implementation"
    other = next((x for x in entries if x is not None and x.kind in ("vendor", "reference")), None)
    if other is not None:
        return f"{'a reference' if other.kind == 'reference' else 'another vendor library'}: {other.name}"
    return None


def _pinned_code(r: Any, ops: list[tuple[str, str | None, str]], add: Add) -> None:
    """KE106: a replay that changes the pinned commit's code before the benchmark runs (a
    patch applied, another ref checked out, a pull) while the packet records a clean tree
    at that commit: the code that ran is not the commit pinned."""
    repo = r.repository
    if repo is None or not repo.commit or repo.dirty:
        return  # (a dirty tree is recorded: a patched tree is what it says)
    pinned = repo.commit.strip().casefold()
    for what, ref, where in ops:
        if where and (not repo.url or _url_key(where[6:]) != _url_key(repo.url)):
            continue  # a clone of another repository (a dependency)
        if ref is not None:
            x = ref.strip()
            if not x or any(f in x for f in _FILLED) or x.endswith("_HEAD") or x.upper() in ("HEAD", "@"):
                continue  # where it moves is not in the replay (`$REF`, FETCH_HEAD), or nowhere
            y = x.casefold()
            if (
                7 <= len(y) <= 64
                and not y.strip(_HEX_DIGITS)
                and (pinned.startswith(y) or y.startswith(pinned))
            ):
                continue  # the pinned commit itself
        add(
            (
                "KE106",
                "/replay/command",
                f"the replay runs `{what}` before the benchmark, but replay.repository pins commit "
                f"`{_short(repo.commit)}` with "
                + ("dirty false" if repo.dirty is False else "no dirty tree recorded")
                + ": the code that ran is not the pinned commit (record the commit that ran, or dirty: true)",
            )
        )
        return


def _url_key(url: str) -> str:
    """A repository URL compared: no scheme, user, ``.git`` or trailing ``/``, lower case
    (``git@github.com:o/r.git`` and ``https://github.com/o/r`` alike)."""
    u = url.strip().casefold().rstrip("/")
    u = u.split("://", 1)[-1]
    u = u.rsplit("@", 1)[-1] if "@" in u.split("/", 1)[0] else u
    u = u.replace(":", "/", 1) if "/" not in u.split(":", 1)[0] else u
    return u[:-4] if u.endswith(".git") else u


def _dims(s: Any) -> dict[str, int]:
    return {k.casefold(): v for k, v in s.dims.items()} if s.dims else {}


def _shape_flags(timed: Any, shapes: list[Any], w: _Workload, add: Add) -> None:
    """KE106 for a kernel: the replay's m/n/k or ``--shape`` against the timed shape."""
    mnk = w.mnk
    d = timed.dims
    if mnk is not None and d:
        m, n, k = d.get("m"), d.get("n"), d.get("k")
        if m is None or n is None or k is None:  # (keys in another case: `M`, `N`, `K`)
            dims = _dims(timed)
            m, n, k = dims.get("m"), dims.get("n"), dims.get("k")
        if m is not None and n is not None and k is not None:
            (mo, ms), (no, ns), (ko, ks) = mnk
            if m not in ms or n not in ns or k not in ks:
                add(
                    (
                        "KE106",
                        "/replay/command",
                        f"the replay runs {_shown(mo + no + ko)}, but the timed shape `{_short(timed.id)}` is "
                        f"m={m} n={n} k={k}: it reproduces another shape",
                    )
                )
                return
    occ = w.shape
    if occ is None or (len(occ) == 1 and occ[0][1] == timed.id):
        return  # (the common case: the timed shape's own id)
    dims = _dims(timed)
    verdicts = [_shape_matches(v, timed, dims, shapes) for _, v in occ]
    if None not in verdicts and not any(verdicts):
        add(
            (
                "KE106",
                "/replay/command",
                f"the replay runs {_shown(occ)}, but the timed shape is `{_short(timed.id)}`"
                + (f" ({' '.join(f'{k}={v}' for k, v in dims.items())})" if dims else "")
                + ": it reproduces another shape",
            )
        )


#: a shape spelled as its sizes: ``8192x8192x8192``, ``m8192n8192k8192``, ``b8_h32_s4096_d128``
#: (one letter a size: ``bf16_4096`` is a name, not two sizes)
_SHAPE_WORDS = lazy_re(r"[a-z]?\d+(?:[x*,:_ ]?[a-z]?\d+){1,7}")


def _shape_matches(v: str, timed: Any, dims: dict[str, int], shapes: list[Any]) -> bool | None:
    """Whether a ``--shape`` value runs the timed shape (its id, its dims: ``8192x8192x8192``,
    ``m8192n8192k8192``); None when the value cannot be read (a name, ``all``)."""
    v = v.strip()
    if v == timed.id:
        return True
    other = next((s for s in shapes if s.id == v), None)
    if other is not None:  # another shape of the task: the same only with the same dims
        return bool(dims) and _dims(other) == dims
    if not _SHAPE_WORDS.fullmatch(v.casefold()):
        return None
    nums = [int(x) for x in re.findall(r"\d+", v)]
    if len(nums) == 3 and "m" in dims and "n" in dims and "k" in dims:
        return sorted(nums) == sorted((dims["m"], dims["n"], dims["k"]))
    if dims and len(nums) == len(dims):
        return sorted(nums) == sorted(dims.values())
    return None


def _dtype_flags(dtypes: list[str], occ: list[tuple[str, str]], add: Add) -> None:
    from ._tables import dtype_class

    known = {d.strip().casefold() for d in dtypes}
    classes = {dtype_class(d) if len(d) <= 64 else None for d in dtypes}
    if None in classes:
        return  # a dtype of the task this reader cannot place
    if "fp32" in classes or "tf32" in classes:
        classes |= {"fp32", "tf32"}  # fp32 inputs on TF32 math, or the reverse
    for _, v in occ:
        c = dtype_class(v) if len(v) <= 64 else None
        if c is None or c in classes or v.strip().casefold() in known:
            return  # (`auto`, an unknown spelling: nothing to compare)
    add(
        (
            "KE106",
            "/replay/command",
            f"the replay runs {_shown(occ)}, but task.dtypes is [{_short(', '.join(dtypes))}]: it "
            "reproduces another dtype",
        )
    )


def _other_model(task: str, replay: str) -> bool:
    """True when the replay's model is not the task's: two hub ids (``org/name``) naming
    different models (their last component, case and punctuation aside: a quantized
    ``...-FP8`` is another), else (a local path, an alias) two names whose parameter
    counts differ."""
    a = task.strip().rstrip("/")
    b = replay.strip().rstrip("/")
    if not a or not b or _model_key(a) == _model_key(b):
        return False
    if _hub_id(a) and _hub_id(b):
        return True
    from .serving import _model_params

    pa = _model_params(a) if len(a) <= 256 else None
    pb = _model_params(b) if len(b) <= 256 else None
    return pa is not None and pb is not None and abs(pa - pb) > 0.01 * max(pa, pb)


def _model_key(name: str) -> str:
    """A model's last path component, lower case, letters and digits only (``Meta-Llama-``
    and ``Llama-`` alike: Meta renamed its repositories), cached."""
    k = _MODEL_KEYS.get(name)
    if k is None:
        k = "".join(c for c in name.strip().rstrip("/").rsplit("/", 1)[-1].casefold() if c.isalnum())
        if k.startswith("metallama"):
            k = k[4:]
        if len(_MODEL_KEYS) < 4096 and len(name) <= 256:
            _MODEL_KEYS[name] = k
    return k


_MODEL_KEYS: dict[str, str] = {}


def _hub_id(name: str) -> bool:
    """``org/name`` as a model hub names a model (not a local path)."""
    if name[:1] in "/.~" or "\\" in name or ":" in name:
        return False
    org, slash, rest = name.partition("/")
    return bool(slash and org and rest) and "/" not in rest and org.casefold() not in _LOCAL_DIRS
