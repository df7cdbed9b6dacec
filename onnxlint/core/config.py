"""`[tool.onnxlint]` in the nearest pyproject.toml: discovery, validation, rule selection.

Every key is checked: an unknown key or a bad value is a `ConfigError` that names the file,
the key and what is accepted, so a typo never silently turns a rule off.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from onnxlint.core.violation import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

# The newest torch whose exporter behaviour the rules encode.
NEWEST_TORCH = "2.13"
EXPORTERS = ("auto", "dynamo", "torchscript")


class ConfigError(Exception):
    """A configuration problem, with a message meant for the user."""


@dataclass(frozen=True)
class Config:
    """The effective configuration for one run (CLI flags and editor settings on top)."""

    select: tuple[str, ...] = ("OLX",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    target_torch: str = NEWEST_TORCH
    exporter: str = "auto"
    severity: tuple[tuple[str, Severity], ...] = ()  # code (or prefix) -> severity
    large_model_parameters: int = 500_000_000  # OLX5xx: `external_data=False` above this
    # OLX1xx findings in code no export of the project reaches: report|lower|ignore.
    unreached: str = "report"
    # [[tool.onnxlint.targets]], for the deep worker: keys checked here (kebab-case, or the
    # deprecated snake_case), values by onnxlint.deep.targets.
    targets: tuple[dict[str, Any], ...] = ()
    deep: dict[str, Any] = field(default_factory=dict)  # [tool.onnxlint.deep] worker options
    # [[tool.onnxlint.scripts]]: export scripts the deep analysis runs, with their `argv`
    scripts: tuple[dict[str, Any], ...] = ()
    root: Path | None = None  # the folder of the pyproject.toml it came from
    source: Path | None = None  # the pyproject.toml it came from
    # What the user should change but that still works (deprecated spellings); front ends
    # show them once (the CLI on stderr).
    warnings: tuple[str, ...] = ()

    @property
    def torch_version(self) -> tuple[int, int]:
        major, minor = self.target_torch.split(".")[:2]
        return int(major), int(minor)

    def deep_python(self) -> str | None:
        """`[tool.onnxlint.deep] python`, resolved as `project_python` does."""
        return project_python(self.deep.get("python"), self.root)

    def with_overrides(self, **changes: Any) -> Config:
        return replace(self, **changes)

    def severity_for(self, code: str, default: Severity) -> Severity:
        best: tuple[int, Severity] | None = None
        for prefix, sev in self.severity:
            if code.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), sev)
        return best[1] if best else default

    def is_enabled(self, code: str, default_enabled: bool = True) -> bool:
        """ruff's selection: the most specific select/ignore prefix wins."""
        chosen = -1
        enabled = False
        for prefix in (*self.select, *self.extend_select):
            if _matches(code, prefix) and len(prefix) > chosen:
                chosen, enabled = len(prefix), True
                if prefix in ("OLX", "ALL") and not default_enabled:
                    enabled = False
        for prefix in self.ignore:
            if _matches(code, prefix) and len(prefix) >= chosen:
                chosen, enabled = len(prefix), False
        return enabled

    def ignored_for_path(self, path: str) -> tuple[str, ...]:
        if not self.per_file_ignores:
            return ()
        out: list[str] = []
        rel = self.relative(path)
        for pattern, codes in self.per_file_ignores:
            if _glob_match(rel, pattern):
                out.extend(codes)
        return tuple(out)

    def is_excluded(self, path: str) -> bool:
        patterns = (*self.exclude, *self.extend_exclude)
        if not patterns:  # the default: no path to compute (asked once per file walked)
            return False
        rel = self.relative(path)
        return any(_glob_match(rel, p) for p in patterns)

    def relative(self, path: str) -> str:
        p = Path(os.path.abspath(path))
        if self.root is not None:
            try:
                return p.relative_to(os.path.abspath(self.root)).as_posix()
            except ValueError:
                pass
        return Path(path).as_posix()


def project_python(value: Any, root: Path | str | None) -> str | None:
    """The interpreter `[tool.onnxlint.deep] python` names, for both sides that run or ask it
    (the static side's library folders, the deep worker): a path in it is from `root`, the
    folder of the pyproject.toml that set it, not from wherever onnxlint runs, so that both
    find the same one; a bare name (`python3`) is looked up on PATH, as written."""
    if not isinstance(value, str) or not value:
        return None
    python = os.path.expanduser(value)
    separators = {os.sep, os.altsep or os.sep}
    if root is None or not any(s in python for s in separators):
        return python
    return os.path.abspath(os.path.join(root, python))


def _matches(code: str, prefix: str) -> bool:
    return prefix == "ALL" or code.startswith(prefix)


def _glob_match(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, f"{pattern}/*"):
        return True
    parts = rel.split("/")
    return any(fnmatch.fnmatch(part, pattern) for part in parts)


# --------------------------------------------------------------------------- loading

# What happens to OLX1xx findings in code that no export of the project reaches.
UNREACHED_MODES = ("report", "lower", "ignore")

_KEYS = {
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "target-torch",
    "exporter",
    "severity",
    "large-model-parameters",
    "unreached",
    "targets",
    "deep",
    "scripts",
}


# [[tool.onnxlint.targets]] keys, as written in TOML (kebab-case, like the keys above), and
# the snake_case spelling of onnxlint 0.1 that is still accepted with a warning.
TARGET_KEYS = (
    "name",
    "factory",
    "dynamic-shapes",
    "exporter",
    "verify",
    "timeout",
    "memory-limit-mb",
    "memory-budget",
    "verify-max-params",
)
TARGET_EXPORTER_KEYS = ("opset", "translation-table")
DEEP_KEYS = ("python", "scripts")
SCRIPT_KEYS = ("path", "argv")


def did_you_mean(word: str, known: Any) -> str:
    """` (did you mean 'select'?)` for a close spelling, else the list of known words."""
    import difflib

    known = sorted(known)
    close = difflib.get_close_matches(word.replace("_", "-"), known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (known keys: {', '.join(known)})"


def is_code_or_prefix(v: str) -> bool:
    return v == "ALL" or (v.startswith("OLX") and (v == "OLX" or v[3:].isdigit()) and len(v) <= 6)


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.onnxlint] table, walking up from `start`."""
    start = start.resolve()
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = _read_toml(candidate)
            except ConfigError:
                raise
            if "onnxlint" in data.get("tool", {}):
                return candidate
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None


def load_config(start: Path | None = None, pyproject: Path | None = None) -> Config:
    """The configuration that applies at `start` (defaults when no table is found)."""
    if pyproject is None:
        pyproject = find_pyproject(start or Path.cwd())
    if pyproject is None:
        # No table: the folder checked (a file's own folder) is the root, for the cache.
        here = (start or Path.cwd()).resolve()
        return Config(root=here if here.is_dir() or not here.exists() else here.parent)
    table = _read_toml(pyproject).get("tool", {}).get("onnxlint", {})
    return parse_table(table, pyproject)


def _codes(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{where}: `{key}` must be a list of rule codes, like ["OLX2"]')
    for v in value:
        if not is_code_or_prefix(v):
            raise ConfigError(
                f"{where}: `{key}` has {v!r}, which is not a rule code or prefix "
                '(use e.g. "OLX", "OLX2", "OLX201")'
            )
    return tuple(value)


def parse_table(table: dict[str, Any], source: Path | None) -> Config:
    """Validate a `[tool.onnxlint]` table into a Config."""
    where = f"{source} [tool.onnxlint]" if source else "[tool.onnxlint]"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], _KEYS)}")
    kw: dict[str, Any] = {}
    warnings: list[str] = []
    for key in ("select", "ignore", "extend-select"):
        if key in table:
            kw[key.replace("-", "_")] = _codes(table[key], key, where)
    for key in ("exclude", "extend-exclude"):
        if key in table:
            value = table[key]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: `{key}` must be a list of glob patterns")
            kw[key.replace("-", "_")] = tuple(value)
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
        kw["per_file_ignores"] = tuple(
            (pattern, _codes(codes, f"per-file-ignores.{pattern}", where))
            for pattern, codes in pfi.items()
        )
    if "target-torch" in table:
        kw["target_torch"] = parse_torch_version(table["target-torch"], where)
    if "exporter" in table:
        exp = table["exporter"]
        if exp not in EXPORTERS:
            raise ConfigError(f"{where}: `exporter` must be one of {', '.join(EXPORTERS)}")
        kw["exporter"] = exp
    if "severity" in table:
        kw["severity"] = parse_severity_map(table["severity"], where)
    if "large-model-parameters" in table:
        n = table["large-model-parameters"]
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ConfigError(f"{where}: `large-model-parameters` must be a positive integer")
        kw["large_model_parameters"] = n
    if "unreached" in table:
        mode = table["unreached"]
        if mode not in UNREACHED_MODES:
            raise ConfigError(
                f"{where}: `unreached` must be one of {', '.join(UNREACHED_MODES)} (got {mode!r})"
            )
        kw["unreached"] = mode
    if "targets" in table:
        targets = table["targets"]
        if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
            raise ConfigError(
                f"{where}: `targets` must be an array of tables [[tool.onnxlint.targets]]"
            )
        kw["targets"] = _check_targets(targets, source, warnings)
    if "deep" in table:
        if not isinstance(table["deep"], dict):
            raise ConfigError(f"{where}: `deep` must be a table")
        unknown = sorted(set(table["deep"]) - set(DEEP_KEYS))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key `deep.{unknown[0]}`{did_you_mean(unknown[0], DEEP_KEYS)}"
            )
        if not isinstance(table["deep"].get("python", ""), str):
            raise ConfigError(f"{where}: `deep.python` must be a string (an interpreter's path)")
        if not isinstance(table["deep"].get("scripts", True), bool):
            raise ConfigError(f"{where}: `deep.scripts` must be true or false")
        kw["deep"] = dict(table["deep"])
    if "scripts" in table:
        kw["scripts"] = _check_scripts(table["scripts"], where)
    return Config(
        root=source.parent.resolve() if source else None,
        source=source,
        warnings=tuple(warnings),
        **kw,
    )


def _check_scripts(scripts: Any, where: str) -> tuple[dict[str, Any], ...]:
    """[[tool.onnxlint.scripts]]: `path` (a .py file) and `argv` (a list of strings)."""
    if not isinstance(scripts, list) or not all(isinstance(t, dict) for t in scripts):
        raise ConfigError(
            f"{where}: `scripts` must be an array of tables [[tool.onnxlint.scripts]]"
        )
    for i, entry in enumerate(scripts):
        label = f"{where} [[tool.onnxlint.scripts]] #{i + 1}"
        unknown = sorted(set(entry) - set(SCRIPT_KEYS))
        if unknown:
            raise ConfigError(
                f"{label}: unknown key `{unknown[0]}`{did_you_mean(unknown[0], SCRIPT_KEYS)}"
            )
        path = entry.get("path")
        if not isinstance(path, str) or not path.endswith(".py"):
            raise ConfigError(f"{label}: `path` must be the script's path, a .py file")
        argv = entry.get("argv", [])
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ConfigError(
                f'{label}: `argv` must be a list of strings, e.g. ["--weights", "x.pt"]'
            )
    return tuple(dict(e) for e in scripts)


def _check_keys(
    entry: dict[str, Any], known: tuple[str, ...], where: str, prefix: str, warnings: list[str]
) -> dict[str, Any]:
    """Keys of one table: kebab-case, or the old snake_case with a warning. The table is
    returned as written (onnxlint.deep.targets reads both spellings and its messages name
    the key as the user typed it)."""
    out: dict[str, Any] = {}
    for key, value in entry.items():
        kebab = key.replace("_", "-")
        if kebab not in known:
            raise ConfigError(f"{where}: unknown key `{prefix}{key}`{did_you_mean(key, known)}")
        if kebab != key:
            warnings.append(
                f"{where}: `{prefix}{key}` is deprecated, write `{prefix}{kebab}` "
                "(onnxlint's keys are kebab-case)"
            )
        same = next((k for k in out if k.replace("_", "-") == kebab), None)
        if same is not None:
            raise ConfigError(f"{where}: `{prefix}{kebab}` is given twice ({same} and {key})")
        out[key] = value
    return out


def _check_targets(
    targets: list[dict[str, Any]], source: Path | None, warnings: list[str]
) -> tuple[dict[str, Any], ...]:
    """Keys and names of [[tool.onnxlint.targets]]; values are checked by the deep analysis."""
    pyproject = str(source) if source else "pyproject.toml"
    out = []
    seen: dict[str, str] = {}
    for i, entry in enumerate(targets):
        name = entry.get("name")
        label = f"target {name!r}" if isinstance(name, str) else f"targets[{i}]"
        line = _target_line(source, i)
        at = f"{pyproject}:{line}:" if line else pyproject
        where = f"{at} [[tool.onnxlint.targets]] {label}"
        fixed = _check_keys(entry, TARGET_KEYS, where, "", warnings)
        exporter = fixed.get("exporter")
        if isinstance(exporter, dict):  # not a table: onnxlint.deep.targets says so
            fixed["exporter"] = _check_keys(
                exporter, TARGET_EXPORTER_KEYS, where, "exporter.", warnings
            )
        if isinstance(name, str):
            if name.strip() in seen:
                raise ConfigError(
                    f"{where}: two targets are named {name!r} (the other is "
                    f"{seen[name.strip()]}); give each target its own name"
                )
            seen[name.strip()] = f"on line {line}" if line else f"targets[{i}]"
        out.append(fixed)
    return tuple(out)


def _target_line(source: Path | None, index: int) -> int | None:
    """The line of the `index`-th `[[tool.onnxlint.targets]]` header, for messages."""
    if source is None:
        return None
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    found = [
        n for n, text in enumerate(lines, 1) if text.strip().startswith("[[tool.onnxlint.targets]]")
    ]
    return found[index] if index < len(found) else None


def parse_torch_version(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _is_version(value):
        raise ConfigError(f'{where}: `target-torch` must be a version string like "2.13"')
    major, minor = (int(x) for x in value.split(".")[:2])
    newest = tuple(int(x) for x in NEWEST_TORCH.split("."))
    if (major, minor) < (2, 0):
        raise ConfigError(f"{where}: `target-torch` {value!r} is older than 2.0, not supported")
    if (major, minor) > newest:
        # Newer than what the rules know: judge by the newest known behaviour.
        return NEWEST_TORCH
    return f"{major}.{minor}"


def _is_version(value: str) -> bool:
    parts = value.split(".")
    return 2 <= len(parts) <= 3 and all(p.isdigit() for p in parts)


def parse_severity_map(value: Any, where: str) -> tuple[tuple[str, Severity], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: `severity` must be a table of code = "error|warning|info"')
    out = []
    for code, sev in value.items():
        _codes([code], "severity", where)
        try:
            out.append((code, Severity(sev)))
        except ValueError:
            raise ConfigError(
                f'{where}: `severity.{code}` must be "error", "warning" or "info", not {sev!r}'
            ) from None
    return tuple(out)
