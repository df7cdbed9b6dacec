"""Editor settings: dataclasses built from `initializationOptions` and `workspace/configuration`.

The settings object is the `onnxlint.*` configuration of the VS Code manifest (package.json),
camelCase and without the prefix::

    {"enable": true, "select": [], "ignore": [], "severity": {}, "debounceMs": 150,
     "deep": {"onSave": false, "timeout": 300, "interpreter": null, "prestart": true,
              "proveFixes": true},
     "interpreter": [], "importStrategy": "fromEnvironment", "args": [],
     "trace": {"server": "off"}}

`initializationOptions` is `{"settings": <object or list of objects>, "globalSettings": <object>,
"clientCommands": [...], "trusted": bool}`. VS Code's Python-tool extensions send a list with
one object per workspace folder (each with a `workspace` URI); Neovim and most other clients
send one object, or the settings object itself.

`parse_settings` never raises: a bad value becomes an error string and the default, so the
server can show one message and keep running.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from typing import Any

SEVERITIES = ("error", "warning", "info", "hint")
TRACE_LEVELS = ("off", "messages", "verbose")
MAX_DEBOUNCE_MS = 10_000


@dataclass(frozen=True)
class DeepSettings:
    """The deep (export) analysis: when it runs and in which interpreter."""

    on_save: bool = False
    timeout: float = 300.0
    interpreter: str | None = None
    # start the worker in the background when a file with an export call is first opened
    prestart: bool = True
    # after an analysis, prove the rewrites of its findings (the worker runs them for real)
    # so that they are offered as quick fixes (issue 29); off: no proof, no rewrite offered
    prove_fixes: bool = True


@dataclass(frozen=True)
class TraceSettings:
    server: str = "off"


@dataclass(frozen=True)
class Settings:
    """One workspace folder's editor settings (or the global ones)."""

    enable: bool = True
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: tuple[tuple[str, str], ...] = ()  # code or prefix -> error|warning|info|hint
    debounce_ms: int = 150
    deep: DeepSettings = field(default_factory=DeepSettings)
    interpreter: tuple[str, ...] = ()
    # the client's: which onnxlint runs the server (the environment's or the bundled one)
    import_strategy: str = "fromEnvironment"
    args: tuple[str, ...] = ()
    trace: TraceSettings = field(default_factory=TraceSettings)
    workspace: str | None = None  # the folder URI these settings belong to (VS Code lists)

    def severity_for(self, code: str) -> str | None:
        """The editor's severity override for `code` (the longest matching prefix wins)."""
        best: tuple[int, str] | None = None
        for prefix, sev in self.severity:
            if (prefix == "ALL" or code.startswith(prefix)) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), sev)
        return best[1] if best else None


# camelCase key -> dataclass field, per level
_TOP_KEYS = {
    "enable": "enable",
    "select": "select",
    "ignore": "ignore",
    "severity": "severity",
    "debounceMs": "debounce_ms",
    "deep": "deep",
    "interpreter": "interpreter",
    "importStrategy": "import_strategy",
    "args": "args",
    "trace": "trace",
    "workspace": "workspace",
}
_DEEP_KEYS = {
    "onSave": "on_save",
    "timeout": "timeout",
    "interpreter": "interpreter",
    "prestart": "prestart",
    "proveFixes": "prove_fixes",
}
_TRACE_KEYS = {"server": "server"}


def _expand_dotted(obj: dict[str, Any]) -> dict[str, Any]:
    """`{"deep.onSave": true}` (VS Code's flat keys) -> `{"deep": {"onSave": true}}`."""
    if not any("." in k for k in obj):
        return obj
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if "." in key:
            head, _, rest = key.partition(".")
            sub = out.setdefault(head, {})
            if isinstance(sub, dict):
                sub[rest] = value
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**value, **out[key]}
        else:
            out[key] = value
    return out


def _unknown(key: str, known: dict[str, str], where: str) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    return f"unknown setting `{where}{key}`{hint}; it is ignored"


def _is_code(value: str) -> bool:
    return value in ("ALL", "OLX") or (
        value.startswith("OLX") and value[3:].isdigit() and len(value) <= 6
    )


def _codes(value: Any, key: str, errors: list[str]) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [value] if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f'`{key}` must be a list of rule codes like ["OLX2", "OLX401"]')
        return None
    codes = [v.strip().upper() for v in value]
    bad = [c for c in codes if not _is_code(c)]
    if bad:
        errors.append(
            f"`{key}` has {bad[0]!r}, which is not a rule code or prefix "
            '(use e.g. "OLX", "OLX2", "OLX201")'
        )
        return None
    return tuple(codes)


def _number(
    value: Any, key: str, errors: list[str], minimum: float, maximum: float | None = None
) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        errors.append(f"`{key}` must be a number, not {value!r}")
        return None
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" and at most {maximum:g}" if maximum is not None else ""
        errors.append(f"`{key}` must be at least {minimum:g}{upper}, not {value!r}")
        return None
    return float(value)


def _bool(value: Any, key: str, errors: list[str]) -> bool | None:
    if not isinstance(value, bool):
        errors.append(f"`{key}` must be true or false, not {value!r}")
        return None
    return value


def _strings(value: Any, key: str, errors: list[str]) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append(f"`{key}` must be a string or a list of strings")
        return None
    return tuple(value)


def _parse_deep(obj: Any, errors: list[str]) -> DeepSettings:
    if obj is None:
        return DeepSettings()
    if not isinstance(obj, dict):
        errors.append('`deep` must be an object like {"onSave": false, "timeout": 300}')
        return DeepSettings()
    kw: dict[str, Any] = {}
    for key, value in obj.items():
        if key not in _DEEP_KEYS:
            errors.append(_unknown(key, _DEEP_KEYS, "deep."))
            continue
        if key in ("onSave", "prestart", "proveFixes"):
            b = _bool(value, f"deep.{key}", errors)
            if b is not None:
                kw[_DEEP_KEYS[key]] = b
        elif key == "timeout":
            n = _number(value, "deep.timeout", errors, 1)
            if n is not None:
                kw["timeout"] = n
        elif key == "interpreter":
            if value is None or (isinstance(value, str) and not value.strip()):
                kw["interpreter"] = None
            elif isinstance(value, str):
                kw["interpreter"] = value
            else:
                errors.append("`deep.interpreter` must be a path to a Python interpreter or null")
    return DeepSettings(**kw)


def _parse_trace(obj: Any, errors: list[str]) -> TraceSettings:
    if obj is None:
        return TraceSettings()
    if isinstance(obj, str):  # tolerate `"trace": "verbose"`
        obj = {"server": obj}
    if not isinstance(obj, dict):
        errors.append('`trace` must be an object like {"server": "off"}')
        return TraceSettings()
    server = obj.get("server", "off")
    for key in obj:
        if key not in _TRACE_KEYS:
            errors.append(_unknown(key, _TRACE_KEYS, "trace."))
    if server not in TRACE_LEVELS:
        errors.append(f"`trace.server` must be one of {', '.join(TRACE_LEVELS)}, not {server!r}")
        return TraceSettings()
    return TraceSettings(server)


def parse_settings(obj: Any) -> tuple[Settings, list[str]]:
    """Settings from one settings object; bad values give an error string and the default."""
    errors: list[str] = []
    if obj is None:
        return Settings(), errors
    if not isinstance(obj, dict):
        return Settings(), [f"settings must be an object, not {type(obj).__name__}"]
    obj = _expand_dotted(obj)
    kw: dict[str, Any] = {}
    for key, value in obj.items():
        name = _TOP_KEYS.get(key)
        if name is None:
            errors.append(_unknown(key, _TOP_KEYS, ""))
            continue
        if key == "enable":
            b = _bool(value, "enable", errors)
            if b is not None:
                kw[name] = b
        elif key in ("select", "ignore"):
            codes = _codes(value, key, errors)
            if codes is not None:
                kw[name] = codes
        elif key == "severity":
            sev = _parse_severity(value, errors)
            if sev is not None:
                kw[name] = sev
        elif key == "debounceMs":
            n = _number(value, "debounceMs", errors, 0, MAX_DEBOUNCE_MS)
            if n is not None:
                kw[name] = int(n)
        elif key == "deep":
            kw[name] = _parse_deep(value, errors)
        elif key in ("interpreter", "args"):
            s = _strings(value, key, errors)
            if s is not None:
                kw[name] = s
        elif key == "importStrategy":
            if value in ("fromEnvironment", "useBundled"):
                kw[name] = value
            else:
                errors.append('`importStrategy` must be "fromEnvironment" or "useBundled"')
        elif key == "trace":
            kw[name] = _parse_trace(value, errors)
        elif key == "workspace":
            if isinstance(value, str) or value is None:
                kw[name] = value
            else:
                errors.append("`workspace` must be a folder URI")
    return Settings(**kw), errors


def _parse_severity(value: Any, errors: list[str]) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(value, dict):
        errors.append('`severity` must be an object like {"OLX401": "hint"}')
        return None
    out: list[tuple[str, str]] = []
    for code, sev in value.items():
        c = str(code).strip().upper()
        if not _is_code(c):
            errors.append(f"`severity` has {code!r}, which is not a rule code or prefix")
            continue
        if not isinstance(sev, str) or sev.lower() not in SEVERITIES:
            errors.append(f"`severity.{code}` must be one of {', '.join(SEVERITIES)}, not {sev!r}")
            continue
        out.append((c, sev.lower()))
    return tuple(out)


def settings_to_json(s: Settings) -> dict[str, Any]:
    """The camelCase object for a Settings (the inverse of `parse_settings`)."""
    return {
        "enable": s.enable,
        "select": list(s.select),
        "ignore": list(s.ignore),
        "severity": dict(s.severity),
        "debounceMs": s.debounce_ms,
        "deep": {
            "onSave": s.deep.on_save,
            "timeout": s.deep.timeout,
            "interpreter": s.deep.interpreter,
            "prestart": s.deep.prestart,
            "proveFixes": s.deep.prove_fixes,
        },
        "interpreter": list(s.interpreter),
        "importStrategy": s.import_strategy,
        "args": list(s.args),
        "trace": {"server": s.trace.server},
    }


@dataclass(frozen=True)
class InitOptions:
    """What `initializationOptions` carries besides the settings."""

    global_settings: Settings = field(default_factory=Settings)
    folder_settings: tuple[Settings, ...] = ()  # VS Code: one per workspace folder
    client_commands: frozenset[str] = frozenset()
    trusted: bool = True


_INIT_KEYS = ("settings", "globalSettings", "clientCommands", "trusted")


def parse_initialization_options(obj: Any) -> tuple[InitOptions, list[str]]:
    """Parse `initializationOptions` (see the module docstring); never raises.

    A client that sends the settings object itself (no `settings` key) is accepted too.
    Without `trusted`, the workspace counts as trusted: clients other than VS Code have no
    notion of workspace trust, and deep analysis still only runs on an explicit request.
    """
    errors: list[str] = []
    if obj is None:
        return InitOptions(), errors
    if not isinstance(obj, dict):
        return InitOptions(), ["initializationOptions must be an object"]
    if not any(k in obj for k in _INIT_KEYS) and obj:
        obj = {"settings": obj}
    global_settings = Settings()
    if "globalSettings" in obj:
        global_settings, errs = parse_settings(obj["globalSettings"])
        errors.extend(errs)
    folders: list[Settings] = []
    raw = obj.get("settings")
    if isinstance(raw, list):
        for item in raw:
            s, errs = parse_settings(item)
            errors.extend(e for e in errs if e not in errors)
            if s.workspace:
                folders.append(s)
            elif "globalSettings" not in obj:
                global_settings = s
    elif raw is not None:
        s, errs = parse_settings(raw)
        errors.extend(e for e in errs if e not in errors)
        if s.workspace:
            folders.append(s)
        else:
            global_settings = s
    commands = obj.get("clientCommands", [])
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        errors.append("`clientCommands` must be a list of command names")
        commands = []
    trusted = obj.get("trusted", True)
    if not isinstance(trusted, bool):
        errors.append("`trusted` must be true or false; the workspace is treated as untrusted")
        trusted = False
    return (
        InitOptions(global_settings, tuple(folders), frozenset(commands), trusted),
        errors,
    )


def setting_names() -> list[str]:
    """The top-level setting names (for docs and tests)."""
    return [k for k, v in _TOP_KEYS.items() if v in {f.name for f in fields(Settings)}]
