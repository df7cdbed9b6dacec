"""Machine-readable outputs: JSON (a contract), SARIF 2.1.0, GitHub workflow annotations."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onnxlint import __version__
from onnxlint.core.violation import DOCS_BASE_URL, DOCS_URL, Severity, Violation
from onnxlint.rules import rule_by_code


def render_json(violations: Sequence[Violation]) -> str:
    return json.dumps([v.to_json() for v in violations], indent=2) + "\n"


def render_statistics_json(violations: Sequence[Violation], names: dict[str, str]) -> str:
    """`--statistics --format json`: `[{code, name, count, fix}]` (fix: "safe", "unsafe",
    "display" or null), as ruff prints its statistics in JSON."""
    from onnxlint.cli.output.text import statistics

    safety = {"[*]": "safe", "[~]": "unsafe", "[-]": "display"}
    rows = [
        {"code": code, "name": names.get(code, ""), "count": n, "fix": safety.get(mark)}
        for code, n, mark in statistics(violations)
    ]
    return json.dumps(rows, indent=2) + "\n"


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render_sarif(violations: Sequence[Violation], root: Path) -> str:
    codes = sorted({v.code for v in violations})
    rules: list[dict[str, Any]] = []
    for code in codes:
        rule = rule_by_code(code)
        entry: dict[str, Any] = {
            "id": code,
            "helpUri": f"{DOCS_BASE_URL}{code}/",
        }
        if rule is not None:
            entry["name"] = rule.name
            entry["shortDescription"] = {"text": rule.summary()}
            entry["defaultConfiguration"] = {"level": _SARIF_LEVEL[rule.severity]}
        rules.append(entry)
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for v in violations:
        uri = _uri(v.path, root)
        results.append(
            {
                "ruleId": v.code,
                "ruleIndex": index[v.code],
                "level": _SARIF_LEVEL[v.severity],
                "message": {"text": v.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                            "region": {
                                "startLine": v.span.line,
                                "startColumn": v.span.column,
                                "endLine": max(v.span.end_line, v.span.line),
                                "endColumn": max(v.span.end_column, 1),
                            },
                        }
                    }
                ],
                "properties": {"source": v.source},
            }
        )
        if v.related:
            results[-1]["relatedLocations"] = [
                {
                    "id": i,
                    "message": {"text": r.message},
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(r.path, root), "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": r.line, "startColumn": r.column},
                    },
                }
                for i, r in enumerate(v.related)
            ]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "onnxlint",
                        "version": __version__,
                        "informationUri": DOCS_URL,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.resolve().as_uri() + "/"}},
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2) + "\n"


def _uri(path: str, root: Path) -> str:
    p = Path(os.path.abspath(path))
    try:
        return p.relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def render_github(violations: Sequence[Violation]) -> str:
    kind = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for v in violations:
        props = ",".join(
            [
                f"file={_escape_prop(v.path)}",
                f"line={v.span.line}",
                f"col={v.span.column}",
                f"endLine={v.span.end_line}",
                f"endColumn={v.span.end_column}",
                f"title={_escape_prop('onnxlint ' + v.code)}",
            ]
        )
        lines.append(f"::{kind[v.severity]} {props}::{_escape_data(v.code + ' ' + v.message)}")
    return "\n".join(lines) + ("\n" if lines else "")
