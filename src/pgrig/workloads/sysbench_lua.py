"""A sysbench Lua script as sysbench sees it: where its modules are found and what it declares.

Lua path: a script may `require` modules beside it (Percona-Lab's tpcc.lua requires
tpcc_common, tpcc_run and tpcc_check), but sysbench looks for modules in the current directory
and its own data directory only. Every sysbench process pgrig starts for a script gets the
script's directory first on LUA_PATH (LuaJIT reads it; `;;` keeps the default path after it,
and a LUA_PATH the user set stays after the script's directory).

Declarations: a script declares its options in `sysbench.cmdline.options` (name -> {help,
default}) and its commands in `sysbench.cmdline.commands` (name -> {function, ...}) or, the
older API, as global functions `prepare`, `cleanup` and `help`; `run` needs a global `event`.
sysbench refuses an option the script does not declare ("invalid option: --table-size=1000")
when the script declares any. pgrig learns the declarations by running a small probe under
sysbench's `help` command (sysbench fails that command for a script declaring no option, after
the probe printed: its last line says it did): the probe loads the script (with its Lua path,
as a run would) and prints what the script declared. The answer is kept per script, keyed by
the size and modification time of the Lua files of its directory (a module beside it may
declare options).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.provision.system.child_process import die_with_parent
from pgrig.request.values import ascii_number

PROBE_TIMEOUT_S = 30
_OPTION_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# Loads the script as sysbench would (a script may refuse to load without a command: hence
# `help`), then prints its declarations, one tab-separated line each.
_PROBE = """\
dofile(os.getenv("PGRIG_LUA_SCRIPT"))
local function out(...) io.stdout:write(...) io.stdout:write("\\n") end
for name, spec in pairs(sysbench.cmdline.options or {}) do
  local default = type(spec) == "table" and spec[2] or nil
  local text = default == nil and "" or tostring(default)
  out("pgrig-option\\t", name, "\\t", text, "\\t", type(default))
end
for name in pairs(sysbench.cmdline.commands or {}) do out("pgrig-command\\t", name) end
for _, name in ipairs({"prepare", "cleanup", "help"}) do
  if type(_G[name]) == "function" then out("pgrig-command\\t", name) end
end
if type(_G.event) == "function" then out("pgrig-command\\trun") end
out("pgrig-probe-done")
"""


@dataclass(frozen=True)
class ScriptFacts:
    """What a Lua script declares (options with their defaults as text, commands)."""

    path: Path
    sha256: str  # of the script file itself
    options: dict[str, str] = field(default_factory=dict)
    commands: frozenset[str] = frozenset()
    # options whose default is a Lua number: sysbench reads their values as C's strtod does,
    # silently ("abc" and "" as 0, "1_000" as 1)
    numbers: frozenset[str] = frozenset()
    # the Lua files beside it (its modules: sysbench-tpcc's tpcc_run.lua), name -> SHA-256:
    # an edited module changes what runs as much as an edited script
    modules: dict[str, str] = field(default_factory=dict)

    @property
    def validates_options(self) -> bool:
        """sysbench refuses undeclared options only of a script that declares some."""
        return bool(self.options)

    def declares(self, name: str) -> bool:
        """Whether --NAME is the script's option (sysbench reads table-size as table_size)."""
        return option_key(name) in {option_key(o) for o in self.options}

    def option_list(self) -> str:
        return ", ".join(sorted(self.options)) or "none"


def option_key(name: str) -> str:
    return name.replace("-", "_")


def lua_path(script: Path, inherited: str | None = None) -> str:
    """LUA_PATH with the script's directory first (then the user's, then Lua's default)."""
    directory = str(script.parent)
    if ";" in directory or "?" in directory:
        raise PgrigError(
            f"sysbench script {script}: its directory cannot be on the Lua path "
            "(';' and '?' are Lua path separators): move it"
        )
    rest = f"{inherited.rstrip(';')};;" if inherited else ";"
    return f"{directory}/?.lua;{directory}/?/init.lua;{rest}"


def process_env(script: Path, base: dict[str, str]) -> dict[str, str]:
    """A sysbench process's environment for this script: base plus the script's Lua path."""
    return {**base, "LUA_PATH": lua_path(script, base.get("LUA_PATH"))}


def shipped_files(script: Path) -> list[Path]:
    """What goes with a script to another host: it and every Lua file beside it (its modules;
    modules in sub-directories are not shipped)."""
    script = script.expanduser().resolve()
    if not script.is_file():
        raise PgrigError(f"sysbench script not found: {script}")
    siblings = sorted(p for p in script.parent.iterdir() if p.suffix == ".lua" and p.is_file())
    return [script, *[p for p in siblings if p != script]]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def describe(sysbench: str, script: Path) -> ScriptFacts:
    """The script's declarations (raises PgrigError, with sysbench's words, when it cannot be
    loaded: a module missing, a syntax error)."""
    script = script.resolve()
    return _describe(sysbench, script, _fingerprint(script))


def _fingerprint(script: Path) -> tuple[tuple[str, int, int], ...]:
    """Size and mtime of every Lua file beside the script: a change to any re-probes."""
    try:
        files = sorted(p for p in script.parent.iterdir() if p.suffix == ".lua" and p.is_file())
        return tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    except OSError as e:
        raise PgrigError(f"cannot read sysbench script {script}: {e.strerror}") from None


@functools.lru_cache(maxsize=32)
def _describe(
    sysbench: str, script: Path, _fingerprint: tuple[tuple[str, int, int], ...]
) -> ScriptFacts:
    with tempfile.TemporaryDirectory(prefix="pgrig-lua-") as tmp:
        probe = Path(tmp) / "pgrig_probe.lua"
        probe.write_text(_PROBE)
        env = process_env(script, {**os.environ, "PGRIG_LUA_SCRIPT": str(script)})
        try:
            proc = subprocess.run(
                [sysbench, str(probe), "help"], env=env, cwd=tmp, capture_output=True,
                text=True, timeout=PROBE_TIMEOUT_S, check=False, preexec_fn=die_with_parent,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as e:
            raise PgrigError(f"cannot run sysbench to read {script.name}: {e}") from None
    # a script that declares no option has no `help` (sysbench then exits 1, after the probe)
    if "pgrig-probe-done" not in proc.stdout.splitlines():
        raise PgrigError(f"sysbench cannot load {script}: {_load_error(proc.stdout + proc.stderr)}")
    modules = {p.name: sha256_of(p) for p in shipped_files(script)[1:]}
    return replace(parse_probe(script, sha256_of(script), proc.stdout), modules=modules)


def parse_probe(script: Path, sha256: str, stdout: str) -> ScriptFacts:
    options: dict[str, str] = {}
    numbers: set[str] = set()
    commands: set[str] = set()
    for line in stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "pgrig-option" and len(parts) >= 2:
            options[parts[1]] = parts[2] if len(parts) > 2 else ""
            if len(parts) > 3 and parts[3] == "number":
                numbers.add(option_key(parts[1]))
        elif parts[0] == "pgrig-command" and len(parts) >= 2:
            commands.add(parts[1])
    return ScriptFacts(script, sha256, options, frozenset(commands), frozenset(numbers))


def _load_error(output: str) -> str:
    """sysbench's FATAL line (the first of a Lua error's lines), without the probe's frames."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith("FATAL")]
    first = fatal[0] if fatal else (lines[-1] if lines else "no output")
    return first.removeprefix("FATAL:").strip()


def check_defines(facts: ScriptFacts, label: str, defines: dict[str, str]) -> None:
    """--define NAME=VALUE are the script's options: one it does not declare is refused
    (sysbench would refuse it, after pgrig made a run of it). Two names of one option
    (`read-pct` and `read_pct`: sysbench reads dashes and underscores alike) are refused: sysbench
    would take the last, the record keep both."""
    seen: dict[str, str] = {}
    for name in defines:
        if (other := seen.setdefault(option_key(name), name)) != name:
            raise PgrigError(
                f"--define {other}={defines[other]} and --define {name}={defines[name]} name "
                f"the same option of {label} (sysbench reads '-' and '_' alike): give it once"
            )
        if not _OPTION_NAME_RE.fullmatch(name):
            raise PgrigError(f"--define {name}: not a sysbench option name")
        if facts.validates_options and not facts.declares(name):
            raise PgrigError(
                f"--define {name}: {label} declares no option {name} "
                f"(its options: {facts.option_list()})"
            )
        value = defines[name]
        if option_key(name) in facts.numbers and not ascii_number(value):
            # sysbench would run with 0 (or a prefix of it) and the record say the text
            default = next(v for o, v in facts.options.items() if option_key(o) == option_key(name))
            raise PgrigError(
                f"--define {name}={value!r}: {label} declares {name} a number (default "
                f"{default}), which sysbench would read as 0 or a part of it: give a number "
                "in digits 0-9 (for example 20 or 0.5)"
            )


def as_options(values: dict[str, str]) -> list[str]:
    """--NAME=VALUE for each, written as sysbench's documentation does (--table-size: it reads
    dashes and underscores alike)."""
    return [f"--{name.replace('_', '-')}={value}" for name, value in values.items()]
