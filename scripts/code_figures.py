"""The code figures of issue 40, counted from the source (AST, no import): how typed pgrig's
function signatures are, which functions take too many parameters, and which files are renamed
beside safe_write.

    python3 scripts/code_figures.py [src/pgrig]

- Any share: function definitions (def and async def) whose annotations (parameters, *args,
  **kwargs, return) mention `Any`, over all of them.
- Long signatures: functions outside cli/ with 12 or more parameters (click commands in cli/
  take one parameter per option by design).
- Renames outside safe_write: os.replace, os.rename, shutil.move and a Path's .rename or
  one-argument .replace (str.replace takes two, datetime.replace keywords), except in
  safe_write.py, the one owner of atomic writes.

tests/unit/test_code_figures.py holds the Any share to its ratchet.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

LONG_SIGNATURE = 12
RENAME_OWNER = "safe_write.py"

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Figures:
    functions: int = 0
    with_any: int = 0
    long_signatures: list[tuple[str, str, int]] = field(default_factory=list)
    renames: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def any_share(self) -> float:
        """Percent of function signatures that mention Any."""
        return 100.0 * self.with_any / self.functions if self.functions else 0.0


def _annotations(fn: FunctionNode) -> list[ast.expr]:
    args = fn.args
    found = [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    found += [a.annotation for a in (args.vararg, args.kwarg) if a is not None]
    found.append(fn.returns)
    return [a for a in found if a is not None]


def _mentions_any(node: ast.expr) -> bool:
    """`Any` as a name or attribute (typing.Any), also inside a string annotation."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "Any":
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "Any":
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                inner = ast.parse(sub.value, mode="eval").body
            except SyntaxError:
                continue
            if _mentions_any(inner):
                return True
    return False


def _parameter_count(fn: FunctionNode) -> int:
    args = fn.args
    return len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)


def _is_rename(call: ast.Call) -> bool:
    f = call.func
    if not isinstance(f, ast.Attribute):
        return False
    owner = f.value.id if isinstance(f.value, ast.Name) else None
    if owner == "os" and f.attr in ("replace", "rename"):
        return True
    if owner == "shutil" and f.attr == "move":
        return True
    if owner in ("os", "shutil", "dataclasses"):
        return False
    if f.attr == "rename":
        return True
    return f.attr == "replace" and len(call.args) == 1 and not call.keywords


def count(root: Path) -> Figures:
    figures = Figures()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                figures.functions += 1
                if any(_mentions_any(a) for a in _annotations(node)):
                    figures.with_any += 1
                n = _parameter_count(node)
                if n >= LONG_SIGNATURE and not rel.startswith("cli/"):
                    figures.long_signatures.append((rel, node.name, n))
            elif isinstance(node, ast.Call) and path.name != RENAME_OWNER and _is_rename(node):
                figures.renames.append((rel, node.lineno, ast.unparse(node.func)))
    return figures


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "src/pgrig")
    if not root.is_dir():
        print(f"no such directory: {root}", file=sys.stderr)
        return 2
    f = count(root)
    print(f"Any in signatures: {f.with_any}/{f.functions} = {f.any_share:.1f}%")
    print(f"functions outside cli/ with >= {LONG_SIGNATURE} parameters: {len(f.long_signatures)}")
    for rel, name, n in f.long_signatures:
        print(f"  {rel}: {name} ({n})")
    print(f"renames outside {RENAME_OWNER}: {len(f.renames)}")
    for rel, line, what in f.renames:
        print(f"  {rel}:{line}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
