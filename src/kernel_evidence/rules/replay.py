"""KE1xx: the replay reproduces the run."""

from __future__ import annotations

import re
import shlex
from typing import Any

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
    "pass`), alone or behind `env`, `time`, `nice`, `timeout` or a container (`docker run "
    "IMAGE true`), a system query (`nvidia-smi`, `rocm-smi`, `uname`), a viewer of a stored "
    "result (`cat`, `jq`, `head`, a `python -c` that only loads a file and prints or writes it "
    "out, `python -m json.tool`, `ncu --import REPORT`, `nsys stats`/`export`, `git show`/`log`/"
    "`cat-file`/`diff`, `docker logs`/`inspect`/`ps`/`cp`, an `awk` program of BEGIN blocks "
    "only), or a run that only lists or prints what it would do (`make -n`/`-t`/`-q`, "
    "`pytest --collect-only`/`--setup-plan`/`--setup-only`/`--fixtures`/`--markers`, any "
    "`--help` or `--version`), reproduces nothing.",
)
declare(
    "KE104",
    "error",
    "a pinned commit is a commit",
    "record the full commit hash (`git rev-parse HEAD`), not a branch, tag or `HEAD`",
    "`replay.repository.commit`, when given, MUST be a commit hash (7 to 64 hexadecimal "
    "digits): a branch (`main`), a tag (`v1.4.0`) or `HEAD` moves, and pins nothing.",
)
declare("KE105", "warning", "a container is pinned by its digest",
     "record /replay/container/digest (`docker inspect --format '{{.RepoDigests}}'`)",
     "A container image SHOULD carry its digest: a tag, moving (`latest`, none, `nightly`, "
     "`main`...) or versioned (`24.05-py3`, rebuilt in place), may name other bits tomorrow; "
     "a digest of one repeated digit (`sha256:000...`) names no image.", caps="C")  # fmt: skip


def check(p: Any, ctx: Ctx, add: Add) -> None:
    r = p.replay
    if r is not None:
        cmd = r.command
        # KE103: only a program that can be a no-op (or a wrapper, shell or interpreter
        # running one) is looked at in full
        # (an interpreter only when it runs code given with -c)
        prog = _base_name(cmd[0]) if cmd else ""
        if cmd and (r.shell or (prog in _LOOK and (prog not in _PYTHONS or "-c" in cmd or "-m" in cmd))):
            why = _noop(cmd, bool(r.shell))
            if why:
                add(("KE103", "/replay/command", f"the replay command {why}: it reproduces nothing"))
        elif cmd and not _NOTHING_FLAGS.isdisjoint(cmd):
            flag = next(a for a in cmd if a in _NOTHING_FLAGS)
            add(("KE103", "/replay/command", f"the replay command asks for `{flag}`: it runs nothing"))
        repo = r.repository
        if repo is not None and repo.commit is not None:
            commit = repo.commit
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
        c = r.container
        if c is not None and c.digest is None and "@sha256:" not in c.image:
            tag = _moving_tag(c.image) or "has a tag (tags are rebuilt in place)"
            add(("KE105", "/replay/container", f"image `{_short(c.image)}` {tag} and no digest"))
        elif c is not None and c.digest is not None:
            d = c.digest
            k = d.rfind(":") + 1  # the digits after the algorithm (all of it without one)
            if k < len(d) and d[k] == d[-1] and d.count(d[k], k) == len(d) - k:
                add(
                    (
                        "KE105",
                        "/replay/container/digest",
                        f"digest `{_short(c.digest)}` is a hash of nothing (one digit repeated)",
                    )
                )
        # _replay re-checks in full; this guard (on the values read above) only skips it
        # when it has nothing to say (the common case)
        if (
            cmd
            and cmd[0].strip()
            and not (r.shell and len(cmd) != 1)
            and ((repo is not None and repo.commit) or (c is not None and c.digest))
        ):
            return
    _replay(r, add)


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
#: programs that run another: the command after them (and their options) is what runs
_WRAPPERS = frozenset({
    "env", "time", "nice", "nohup", "timeout", "exec", "command", "stdbuf", "taskset", "numactl", "sudo",
    "srun", "mpirun", "mpiexec", "flock", "chrt", "ionice", "xvfb-run", "unbuffer",
})  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
#: container runners: ``docker run [options] IMAGE [command]`` runs the command in the image
_CONTAINERS = frozenset({"docker", "podman", "nerdctl", "apptainer", "singularity", "enroot"})
#: their options that take a value in the next argument
_CONTAINER_VALUED = frozenset({
    "-v", "--volume", "-e", "--env", "--env-file", "--gpus", "--name", "-w", "--workdir", "--device",
    "--network", "--net", "--ipc", "--shm-size", "-u", "--user", "--runtime", "--cap-add",
    "--security-opt", "--ulimit", "--group-add", "-p", "--publish", "--mount", "--platform", "--pull",
    "-l", "--label", "--cpus", "-m", "--memory", "--entrypoint", "--hostname", "-h", "--bind", "-B",
    "--pid", "--uts", "--cgroupns", "--tmpfs", "--add-host", "--dns", "--cpuset-cpus",
})  # fmt: skip
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
    return s if len(s) <= 80 else s[:77] + "..."


def _noop(cmd: list[str], shell: bool) -> str | None:
    """Why an argv (or one shell string) does nothing, or None when it may run something."""
    if shell:
        return _noop_script(" ".join(cmd))
    i = 0
    while i < len(cmd):
        prog = _base_name(cmd[i])
        if prog in _WRAPPERS:
            i += 1
            # the wrapper's options and VAR=value settings, and timeout's duration
            while i < len(cmd) and (cmd[i].startswith("-") or "=" in cmd[i] or cmd[i][:1].isdigit()):
                i += 1
            continue
        if prog in _NOOPS:
            return f"is `{_short(' '.join(cmd))}`"
        if prog in _SHELLS:
            # `-c`, or short options run together with it (`bash -lc`), before the script
            j = next((k for k in range(i + 1, len(cmd)) if _short_flag(cmd[k], "c")), None)
            if j is None:
                return None
            script = cmd[j + 1] if j + 1 < len(cmd) else ""
            return f"is `{_short(' '.join(cmd))}`" if _noop_script(script) else None
        if prog in _PYTHONS:
            mode, j = _python_mode(cmd, i)
            if mode == "-c":
                code = cmd[j] if j < len(cmd) else ""
                return f"is `{_short(' '.join(cmd))}`" if _noop_python(code) else None
            if mode != "-m" or j >= len(cmd):
                return None
            if cmd[j] in _PY_VIEWERS:
                return f"only prints a stored file or the interpreter's setup (`{_short(' '.join(cmd))}`)"
            i = j  # `python -m pytest ...`: the module is the program
            prog = cmd[i]
        dry = _DRY.get(prog)
        if dry is not None:
            rest = cmd[i + 1 :]
            if any(a in dry or (prog == "make" and _make_dry(a)) for a in rest):
                return f"only lists or prints what it would run (`{_short(' '.join(cmd))}`)"
            return None
        if prog in _CONTAINERS:
            view = _container_view(cmd, i)
            if view is not None:
                return f"runs no image (`{_short(' '.join(cmd))}` {view})"
            j = _container_command(cmd, i)
            if j is None or j >= len(cmd):
                return None  # the image's own entrypoint runs
            why = _noop(cmd[j:], False)
            return f"is `{_short(' '.join(cmd))}`" if why else None
        if prog == "git":
            sub = _git_subcommand(cmd, i)
            if sub in _GIT_VIEWS:
                return f"only prints what the repository holds (`{_short(' '.join(cmd))}`)"
            return None
        if prog == "ncu":
            if _ncu_views(cmd, i):
                return f"only opens a stored report or lists what it knows (`{_short(' '.join(cmd))}`)"
            return None
        if prog == "nsys":
            if i + 1 < len(cmd) and cmd[i + 1] in _NSYS_VIEWS:
                return f"only reads a stored report (`{_short(' '.join(cmd))}`)"
            return None
        if prog in _AWKS:
            if _awk_begin_only(cmd, i):
                return f"only prints from its BEGIN block (`{_short(' '.join(cmd))}`)"
            return None
        return None
    return "holds no program"


def _python_mode(cmd: list[str], i: int) -> tuple[str | None, int]:
    """How an interpreter at ``cmd[i]`` is asked to run: ``("-c", index of the code)``,
    ``("-m", index of the module)``, or ``(None, 0)`` for a script (its own options, such as
    ``-u``, ``-O``, ``-X dev``, ``-W ignore``, come first; a ``-c`` after the script is the
    script's)."""
    j = i + 1
    while j < len(cmd):
        a = cmd[j]
        if a in ("-c", "-m"):
            return a, j + 1
        if a[:2] in ("-c", "-m") and len(a) > 2:
            return a[:2], -1  # `-cCODE` / `-mMODULE`: seen as a script (rare; let through)
        if a in ("-X", "-W", "--check-hash-based-pycs"):
            j += 2
            continue
        if a.startswith("-") and a != "-":
            j += 1
            continue
        break
    return None, 0


def _container_view(cmd: list[str], i: int) -> str | None:
    """The subcommand of a container runner at ``cmd[i]`` that runs no image (``docker
    logs``, ``docker container inspect``, ``podman ps``), or None."""
    j = i + 1
    while j < len(cmd) and cmd[j].startswith("-"):
        j += 1  # global options (`--context x` is rare; its value would be read as the subcommand)
    if j < len(cmd) and cmd[j] in ("container", "image", "images") and j + 1 < len(cmd):
        if cmd[j] == "images":
            return "images"
        j += 1
    if j < len(cmd) and cmd[j] in _CONTAINER_VIEWS:
        return cmd[j]
    return None


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


def _short_flag(arg: str, letter: str) -> bool:
    """True for a run of short options that holds ``letter`` (``-n``, ``-nB``; not ``-j8``)."""
    return len(arg) > 1 and arg[0] == "-" and arg[1] != "-" and arg[1:].isalpha() and letter in arg[1:]


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


def _container_command(cmd: list[str], i: int) -> int | None:
    """Where the command run inside the image starts (``docker run [options] IMAGE cmd``,
    ``apptainer exec [options] IMAGE cmd``), or None when ``cmd[i]`` runs no image."""
    j = i + 1
    if j < len(cmd) and cmd[j] == "container":
        j += 1  # docker container run
    if j >= len(cmd) or cmd[j] not in ("run", "exec"):
        return None
    j += 1
    while j < len(cmd) and cmd[j].startswith("-"):
        j += 1 if "=" in cmd[j] or cmd[j] not in _CONTAINER_VALUED else 2
    return j + 1  # past the image


def _noop_script(script: str) -> str | None:
    """Why a shell script does nothing: each of its simple commands is a no-op."""
    parts = [x for x in re.split(r"[;&|\n]+", script) if x.strip()]
    if not parts:
        return "is an empty script"
    for part in parts:
        try:
            argv = shlex.split(part)
        except ValueError:
            return None
        if not argv:
            continue
        if _noop(argv, False) is None:
            return None
    return f"is `{_short(script)}`"


def _noop_python(code: str) -> bool:
    """True for Python code that only passes, evaluates constants, imports, or reads stored
    data and prints or writes it out (``print(open(f).read())``, ``sys.stdout.write(...)``,
    ``with open(f) as h: print(h.read())``)."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return _noop_body(tree.body)


def _noop_body(body: list[Any]) -> bool:
    import ast

    for node in body:
        if isinstance(node, (ast.Pass, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)):
            v = node.value
            if v is None or isinstance(v, (ast.Constant, ast.Name, ast.Attribute, ast.Subscript)):
                continue
            if isinstance(v, ast.Call) and _noop_call(v):
                continue
        if (
            isinstance(node, ast.With)
            and all(
                isinstance(it.context_expr, ast.Call) and _noop_call(it.context_expr) for it in node.items
            )
            and _noop_body(node.body)
        ):
            continue
        if (
            isinstance(node, ast.For)
            and not node.orelse
            and (
                isinstance(node.iter, ast.Name) or (isinstance(node.iter, ast.Call) and _noop_call(node.iter))
            )
            and _noop_body(node.body)
        ):
            continue
        if (
            isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and isinstance(node.exc.func, ast.Name)
            and node.exc.func.id == "SystemExit"
        ):
            continue
        return False
    return True


#: calls that only read a stored file and print it (or end the program)
_PRINTING = frozenset({
    "print", "exit", "quit", "_exit", "open", "read", "read_text", "readlines", "load", "loads",
    "dumps", "Path", "str", "repr", "format", "len", "sorted", "pprint",
    # ... and write it out (`sys.stdout.write(open(f).read())`, `json.dump(..., sys.stdout)`)
    "write", "writelines", "dump", "copyfileobj", "flush",
})  # fmt: skip


def _noop_call(v: Any) -> bool:
    """A call that only reads stored data and prints it (print/json.load/open...), or ends
    the program, with every call among its arguments of the same kind."""
    import ast

    for node in ast.walk(v):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")
            if name not in _PRINTING:
                return False
    return True


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
