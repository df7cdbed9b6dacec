"""Analysis targets: what model to build and with which example inputs.

Two sources: `[[tool.onnxlint.targets]]` tables in pyproject.toml (validated
here, each error naming the target and the key), and module-level zero-argument
functions marked `# onnxlint: target` (on the line above the `def`, or at the
end of the `def` line). A factory returns `(model, args)`, `(model, args,
kwargs)` or `(model, args, kwargs, dynamic_shapes)`; dynamic shapes returned by
the factory take precedence over the table's. The factory runs under fake
tensors with `ONNXLINT_DEEP=1` in the environment.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MEMORY_LIMIT_MB = 6144
MARKER_RE = re.compile(r"#\s*onnxlint:\s*target\b(?P<opts>[^#\n]*)")
FACTORY_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
FILE_FACTORY_RE = re.compile(r"^(?P<file>[^:]+\.py):(?P<func>[A-Za-z_]\w*)$")
_KEYS = {
    "name",
    "factory",
    "dynamic_shapes",
    "exporter",
    "verify",
    "timeout",
    "memory_limit_mb",
    "memory_budget",
    "verify_max_params",
}
_EXPORTER_KEYS = {"opset", "translation_table", "strict"}


_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_BYTES_RE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*)\s*$")


def parse_bytes(value: Any) -> int | None:
    """`"16GB"`, `"1.5 GiB"`, `"512MB"` or a number of bytes -> bytes; None if it is none of
    these. GB is 10^9 bytes and GiB 2^30, as on disks and in `free -h`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if not isinstance(value, str):
        return None
    m = _BYTES_RE.match(value)
    if m is None or m.group("unit").lower() not in _UNITS:
        return None
    n = float(m.group("n")) * _UNITS[m.group("unit").lower()]
    return int(n) if n >= 1 else None


class TargetError(ValueError):
    """A target entry is invalid; the message names the target and the key."""


@dataclass(frozen=True)
class Target:
    """One model to analyse. `decl_path`/`decl_line` is where it is declared (for findings
    that belong to no line of the model, and for the code lens)."""

    name: str
    factory: str
    root: Path
    dynamic_shapes: Any = None
    opset: int | None = None
    translation_table: str | None = None
    strict: bool = False  # the user exports strictly / compiles: graph breaks are warnings
    verify: bool = False
    timeout: float = DEFAULT_TIMEOUT_S
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB
    verify_max_params: int | None = None
    memory_budget: int | None = None
    """Bytes a real run of the model may use (OLX819); None: the machine's memory."""
    decl_path: Path | None = None
    decl_line: int = 1
    origin: str = "pyproject"  # or "marker", "script", "exportable", "cli"
    extra: Mapping[str, Any] = field(default_factory=dict)
    script: Path | None = None
    """An export script the worker runs up to its export call (`onnxlint.deep.scripts`)."""
    script_line: int | None = None  # the export call's line; None: the first one reached
    argv: tuple[str, ...] = ()
    then_call: str | None = None
    """A notebook's no-argument function to call after its cells ran: the lens on an export
    call in a function that no cell calls (a `.py` script's gets a driver instead)."""

    @property
    def module(self) -> str:
        return self.factory.partition(":")[0]

    def to_wire(self, *, verify: bool | None = None) -> dict[str, Any]:
        """The JSON the worker receives."""
        return {
            "name": self.name,
            "factory": self.factory,
            "root": str(self.root),
            "dynamic_shapes": _jsonable_shapes(self.dynamic_shapes),
            "opset": self.opset,
            "translation_table": self.translation_table,
            "strict": self.strict,
            "verify": self.verify if verify is None else verify,
            "verify_max_params": self.verify_max_params,
            **(
                {
                    "script": str(self.script),
                    "script_line": self.script_line,
                    "argv": list(self.argv),
                    **({"then_call": self.then_call} if self.then_call else {}),
                }
                if self.script is not None
                else {}
            ),
        }

    def key(self) -> str:
        """A stable digest of everything about the target that changes the analysis."""
        data = json.dumps(self.to_wire(), sort_keys=True, default=str)
        return hashlib.sha256(data.encode()).hexdigest()[:24]


def _jsonable_shapes(spec: Any) -> Any:
    if isinstance(spec, dict):
        return {str(k): _jsonable_shapes(v) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return [_jsonable_shapes(v) for v in spec]
    return spec


def _where(index: int, raw: Mapping[str, Any]) -> str:
    name = raw.get("name")
    return f"target {name!r}" if isinstance(name, str) else f"targets[{index}]"


def _check_dims(where: str, key: str, dims: Any) -> dict[int, str | None]:
    """One input's dims: `{0 = "batch"}` (TOML keys are strings) -> {0: "batch"}."""
    if isinstance(dims, list):
        dims = {i: v for i, v in enumerate(dims)}
    if not isinstance(dims, dict):
        raise TargetError(
            f'{where}: `{key}` must be a table of dim index to dim name, e.g. {{0 = "batch"}}'
        )
    out: dict[int, str | None] = {}
    for k, v in dims.items():
        try:
            idx = int(k)
        except (TypeError, ValueError):
            raise TargetError(f"{where}: `{key}` has dim index {k!r}; use an integer") from None
        if idx < 0:
            raise TargetError(f"{where}: `{key}` has negative dim index {idx}")
        if v in ("", False):
            v = None
        if v is not None and not (isinstance(v, str) and re.fullmatch(r"[A-Za-z_]\w*", v)):
            raise TargetError(f'{where}: `{key}.{idx}` must be a dim name like "batch", got {v!r}')
        out[idx] = v
    return out


def _check_dynamic_shapes(where: str, spec: Any, key: str = "dynamic-shapes") -> Any:
    if spec is None:
        return None
    if isinstance(spec, list):
        return tuple(
            None if d in (None, False, {}) else _check_dims(where, f"{key}[{i}]", d)
            for i, d in enumerate(spec)
        )
    if isinstance(spec, dict):
        return {
            str(arg): None if d in (None, False, {}) else _check_dims(where, f"{key}.{arg}", d)
            for arg, d in spec.items()
        }
    raise TargetError(
        f"{where}: `{key}` must be a table keyed by forward() argument name or an "
        "array in argument order"
    )


def validate_target(raw: Mapping[str, Any], root: Path, index: int = 0) -> Target:
    """One `[[tool.onnxlint.targets]]` table -> Target, or TargetError naming the key."""
    if not isinstance(raw, Mapping):
        raise TargetError(f"targets[{index}] must be a table")
    where = _where(index, raw)
    # TOML spells the keys in kebab-case (onnxlint.core.config turns them to snake_case).
    typed = {str(k).replace("-", "_"): str(k) for k in raw}  # messages name the key as typed
    raw = {str(k).replace("-", "_"): v for k, v in raw.items()}
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        known = ", ".join(sorted(k.replace("_", "-") for k in _KEYS))
        raise TargetError(f"{where}: unknown key {unknown[0]!r} (known: {known})")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise TargetError(f"{where}: `name` is required and must be a non-empty string")
    factory = raw.get("factory")
    if isinstance(factory, str):
        factory = factory_from_file(factory, Path(root), where)
    if not isinstance(factory, str) or not FACTORY_RE.match(factory):
        raise TargetError(
            f'{where}: `factory` must be "package.module:function" or "path/to/file.py:function",'
            f" got {factory!r}"
        )
    exporter = raw.get("exporter", {})
    if not isinstance(exporter, Mapping):
        raise TargetError(f"{where}: `exporter` must be a table, e.g. {{opset = 18}}")
    typed.update({"exporter." + str(k).replace("-", "_"): str(k) for k in exporter})
    exporter = {str(k).replace("-", "_"): v for k, v in exporter.items()}
    unknown = sorted(set(exporter) - _EXPORTER_KEYS)
    if unknown:
        raise TargetError(
            f"{where}: unknown key `exporter.{unknown[0]}` "
            f"(known: {', '.join(sorted(_EXPORTER_KEYS))})"
        )
    opset = exporter.get("opset")
    if opset is not None and (
        isinstance(opset, bool) or not isinstance(opset, int) or not 7 <= opset <= 30
    ):
        raise TargetError(
            f"{where}: `exporter.opset` must be an integer opset (e.g. 18), got {opset!r}"
        )
    table = exporter.get("translation_table")
    if table is not None and (not isinstance(table, str) or not FACTORY_RE.match(table)):
        raise TargetError(
            f"{where}: `exporter.{typed.get('exporter.translation_table')}` must be "
            f'"package.module:NAME", got {table!r}'
        )
    strict = exporter.get("strict", False)
    if not isinstance(strict, bool):
        raise TargetError(f"{where}: `exporter.strict` must be true or false, got {strict!r}")
    verify = raw.get("verify", False)
    if not isinstance(verify, bool):
        raise TargetError(f"{where}: `verify` must be true or false, got {verify!r}")
    timeout = raw.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise TargetError(
            f"{where}: `timeout` must be a positive number of seconds, got {timeout!r}"
        )
    memory = raw.get("memory_limit_mb", DEFAULT_MEMORY_LIMIT_MB)
    if isinstance(memory, bool) or not isinstance(memory, int) or memory < 64:
        raise TargetError(
            f"{where}: `{typed.get('memory_limit_mb')}` must be an integer >= 64, got {memory!r}"
        )
    budget_raw = raw.get("memory_budget")
    budget = None if budget_raw is None else parse_bytes(budget_raw)
    if budget_raw is not None and budget is None:
        raise TargetError(
            f'{where}: `{typed.get("memory_budget")}` must be a size like "16GB", '
            f'"512MB" or "1.5GiB" (or a number of bytes), got {budget_raw!r}'
        )
    vmax = raw.get("verify_max_params")
    if vmax is not None and (isinstance(vmax, bool) or not isinstance(vmax, int) or vmax < 0):
        raise TargetError(
            f"{where}: `{typed.get('verify_max_params')}` must be a non-negative integer"
        )
    return Target(
        name=name.strip(),
        factory=factory,
        root=root,
        dynamic_shapes=_check_dynamic_shapes(
            where, raw.get("dynamic_shapes"), typed.get("dynamic_shapes", "dynamic-shapes")
        ),
        opset=opset,
        translation_table=table,
        strict=strict,
        verify=verify,
        timeout=float(timeout),
        memory_limit_mb=memory,
        verify_max_params=vmax,
        memory_budget=budget,
        decl_path=root / "pyproject.toml",
        decl_line=_pyproject_line(root / "pyproject.toml", name),
        origin="pyproject",
    )


def factory_from_file(factory: str, root: Path, where: str) -> str:
    """`"path/to/file.py:fn"` -> `"path.to.file:fn"` (the worker imports it with the project
    root on sys.path); any other spelling is returned as it is."""
    m = FILE_FACTORY_RE.match(factory)
    if m is None:
        return factory
    path = Path(m.group("file"))
    full = path if path.is_absolute() else Path(root) / path
    if not full.is_file():
        raise TargetError(f"{where}: `factory` names {m.group('file')!r}, which does not exist")
    module = module_name_for(full, Path(root))
    if module is None:
        raise TargetError(f"{where}: `factory` names {m.group('file')!r}, {_not_importable(full)}")
    return f"{module}:{m.group('func')}"


def _not_importable(path: Path) -> str:
    return (
        "which cannot be imported: its path from the project root has a part that is not a "
        "Python identifier (like `001_model.py` or `my-scripts/`); rename it so that it can "
        "be imported (`model_001.py`)"
    )


def _pyproject_line(pyproject: Path, name: str) -> int:
    """The line of `name = "<name>"` inside a targets table, for placing findings."""
    try:
        lines = pyproject.read_text(encoding="utf-8").splitlines()
    except OSError:
        return 1
    pat = re.compile(r"^\s*name\s*=\s*[\"']" + re.escape(name) + r"[\"']")
    for i, line in enumerate(lines, 1):
        if pat.match(line):
            return i
    for i, line in enumerate(lines, 1):
        if "tool.onnxlint.targets" in line:
            return i
    return 1


def load_targets(raw: Iterable[Mapping[str, Any]], root: Path) -> list[Target]:
    """Validate every table; names must be unique. Raises TargetError on the first problem."""
    out: list[Target] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        t = validate_target(entry, Path(root), i)
        if t.name in seen:
            raise TargetError(f"target {t.name!r}: `name` is used by two targets")
        seen.add(t.name)
        out.append(t)
    return out


def module_name_for(path: Path, root: Path) -> str | None:
    """The dotted module name of `path` when `root` is on sys.path."""
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def marked_functions(text: str) -> list[tuple[str, int, str]]:
    """(function name, def line, marker options) for each `# onnxlint: target` function."""
    if "onnxlint" not in text:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    lines = text.splitlines()
    out = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        candidates = [lines[node.lineno - 1]] if node.lineno - 1 < len(lines) else []
        if first >= 2:
            candidates.append(lines[first - 2])
        for line in candidates:
            m = MARKER_RE.search(line)
            if m:
                out.append((node.name, node.lineno, m.group("opts").strip()))
                break
    return out


EXPORTABLE_BASES = {"ExportableModule", "onnx.ExportableModule", "torch.onnx.ExportableModule"}


def exportable_classes(text: str) -> list[tuple[str, int]]:
    """(class name, line) of the module-level classes that subclass
    `torch.onnx.ExportableModule`: targets by themselves (they say their example
    arguments and dynamic shapes; the worker builds them with no arguments)."""
    if "ExportableModule" not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [
        (node.name, node.lineno)
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(b) in EXPORTABLE_BASES for b in node.bases)
    ]


def discover_targets(
    paths: Iterable[Path], root: Path, problems: list[tuple[Path, int, str]] | None = None
) -> list[Target]:
    """`# onnxlint: target` functions and `torch.onnx.ExportableModule` classes in these
    files (folders are walked for *.py), in one read of each file.

    A marked function that cannot be imported (its file's name is no module name, or it
    lies outside the project root) is not a target; `problems` gets (file, line, message).
    """
    root = Path(root)
    out: list[Target] = []
    for path, text in python_texts(paths):
        mod = module_name_for(path, root)
        if mod is None:
            if problems is not None:
                for func, line, _opts in marked_functions(text):
                    try:
                        path.resolve().relative_to(root.resolve())
                        why = _not_importable(path)
                    except ValueError:
                        why = f"which lies outside the project root {str(root)!r}"
                    problems.append(
                        (
                            path.resolve(),
                            line,
                            f"`# onnxlint: target` on `{func}` is ignored: it is in "
                            f"{path.name!r}, {why}",
                        )
                    )
            continue
        for func, line, opts in marked_functions(text):
            out.append(
                Target(
                    name=f"{mod}:{func}",
                    factory=f"{mod}:{func}",
                    root=root,
                    verify="verify" in opts.split(),
                    strict="strict" in opts.split(),
                    decl_path=path.resolve(),
                    decl_line=line,
                    origin="marker",
                )
            )
        for cls, line in exportable_classes(text):
            out.append(
                Target(
                    name=f"{mod}:{cls}",
                    factory=f"{mod}:{cls}",
                    root=root,
                    decl_path=path.resolve(),
                    decl_line=line,
                    origin="exportable",
                )
            )
    return out


def python_texts(paths: Iterable[Path]) -> Iterator[tuple[Path, str]]:
    """(path, text) of each readable *.py file under `paths` (folders walked, sorted)."""
    for path in _python_files(paths):
        try:
            yield path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def notebook_files(paths: Iterable[Path]) -> Iterator[tuple[Path, str]]:
    """(path, JSON text) of each readable Jupyter notebook under `paths` (folders walked,
    sorted; Jupyter's `.ipynb_checkpoints` copies skipped)."""
    for path in _python_files(paths, ".ipynb"):
        try:
            yield path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue


def _python_files(paths: Iterable[Path], suffix: str = ".py") -> Iterable[Path]:
    skip = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", "build", "dist"}
    skip.add(".ipynb_checkpoints")
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for f in sorted(p.rglob("*" + suffix)):
                if not skip.intersection(f.parts):
                    yield f
        elif p.suffix == suffix:
            yield p


def factory_location(target: Target) -> tuple[Path, int] | None:
    """Where the factory function is defined, found without importing anything (for a
    script target, its export call)."""
    if target.script is not None:
        return target.script.resolve(), target.script_line or 1
    mod_path = _module_path(target.module, target.root)
    if mod_path is None:
        return None
    func = target.factory.partition(":")[2]
    try:
        tree = ast.parse(mod_path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
            return mod_path.resolve(), node.lineno
    return None


def _module_path(module: str, root: Path) -> Path | None:
    base = Path(root).joinpath(*module.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def classes_built_by(target: Target) -> list[tuple[Path, int]]:
    """Project classes the factory calls (code lens anchors): defined in the factory's
    module, or imported into it from another module of the project (`from .nets import
    Net`, `from pkg.nets import Net`, `import pkg.nets as nets; nets.Net()`)."""
    loc = factory_location(target)
    if loc is None:
        return []
    path, _ = loc
    func = target.factory.partition(":")[2]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    local = {n.name: (path, n.lineno) for n in tree.body if isinstance(n, ast.ClassDef)}
    package = target.module if path.name == "__init__.py" else target.module.rpartition(".")[0]
    imported: dict[str, tuple[str, str]] = {}  # bound name -> (module, class name or "")
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = _absolute_module(node.module, node.level, package)
            for alias in node.names:
                imported[alias.asname or alias.name] = (base, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imported[alias.asname] = (alias.name, "")
    out: set[tuple[Path, int]] = set()
    for node in tree.body:
        if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func):
            continue
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Call):
                continue
            if isinstance(sub.func, ast.Name):
                name = sub.func.id
                if name in local:
                    out.add(local[name])
                elif name in imported and imported[name][1]:
                    found = _class_in_module(*imported[name], target.root)
                    if found:
                        out.add(found)
            elif isinstance(sub.func, ast.Attribute) and isinstance(sub.func.value, ast.Name):
                mod = imported.get(sub.func.value.id)
                if mod is not None and not mod[1]:
                    found = _class_in_module(mod[0], sub.func.attr, target.root)
                    if found:
                        out.add(found)
    return sorted(out)


def _absolute_module(module: str | None, level: int, package: str) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".") if package else []
    parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*parts, module] if module else parts)


def _class_in_module(module: str, name: str, root: Path) -> tuple[Path, int] | None:
    mod_path = _module_path(module, root)
    if mod_path is None:
        return None
    try:
        tree = ast.parse(mod_path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return mod_path.resolve(), node.lineno
    return None
