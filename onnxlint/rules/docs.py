"""Rule documentation generated from the rule classes: `docs/rules/`, `onnxlint rule`, hover.

`python -m onnxlint.rules.docs` rewrites `docs/rules/`; with `--check` it exits 1 when the
committed pages differ from the classes (CI runs it through the test suite).
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

from onnxlint.rules import all_rules
from onnxlint.rules.base import Rule

DOCS_DIR = Path(__file__).resolve().parents[2] / "docs" / "rules"
_ORDER = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References")
_FAMILIES = {
    "OLX0": "Files that cannot be checked",
    "OLX1": "Trace- and TorchScript-hostile code reachable from forward",
    "OLX2": "Model mode at export",
    "OLX3": "Dynamic axes and shapes",
    "OLX4": "Removed, ignored and deprecated exporter APIs",
    "OLX5": "Export-call configuration",
    "OLX8": "Deep analysis (runs the model under fake tensors)",
}


def _fix_text(rule: type[Rule]) -> str:
    if rule.fix_safety is None:
        return "No automatic fix."
    return {
        "safe": "Fix available (safe: applied by `--fix` and *Fix all*).",
        "unsafe": "Fix available (unsafe: offered as a quick fix; `--fix --unsafe-fixes`).",
        "display": "Suggested fix shown, never applied automatically.",
    }[rule.fix_safety.value]


def source_path(rule: type[Rule]) -> str:
    path = Path(inspect.getfile(rule)).resolve()
    try:
        return path.relative_to(Path(__file__).resolve().parents[2]).as_posix()
    except ValueError:
        return path.name


def rule_markdown(rule: type[Rule]) -> str:
    sections = rule.doc_sections()
    kind = "deep analysis" if rule.from_deep_analysis else "static"
    lines = [
        f"# {rule.code}: {rule.name}",
        "",
        f"*Default severity:* {rule.severity.value} · *Added in:* {rule.since} · *Kind:* {kind}"
        f" · *Source:* `{source_path(rule)}`",
        "",
        _fix_text(rule)
        + ("" if rule.default_enabled else " Off by default: enable with `select`."),
        "",
    ]
    for name in _ORDER:
        if name in sections:
            body = sections[name]
            if name == "References":  # bare URLs as links (CommonMark autolinks)
                body = re.sub(r"(?<![<(])\b(https?://[^\s<>()]+[^\s<>().,;])", r"<\1>", body)
            lines += [f"## {name}", "", body, ""]
    for name, body in sections.items():
        if name not in _ORDER:
            lines += [f"## {name}", "", body, ""]
    return "\n".join(lines).rstrip() + "\n"


def index_markdown() -> str:
    lines = [
        "# onnxlint rules",
        "",
        "Generated from the rule classes by `python -m onnxlint.rules.docs`; do not edit by hand.",
        "",
        "Legend: [*] safe fix, [~] unsafe fix (quick fix / `--unsafe-fixes`).",
        "",
    ]
    family = None
    for r in all_rules():
        fam = r.code[:4]
        if fam != family:
            family = fam
            lines += [
                "",
                f"## {fam}xx: {_FAMILIES.get(fam, '')}",
                "",
                "| Code | Name | Severity | Fix | What it does |",
                "|---|---|---|---|---|",
            ]
        fix = {"safe": "[*]", "unsafe": "[~]", "display": ""}.get(
            r.fix_safety.value if r.fix_safety else "", ""
        )
        summary = r.summary().replace("|", "\\|")
        lines.append(
            f"| [{r.code}]({r.code}.md) | `{r.name}` | {r.severity.value} | {fix} | {summary} |"
        )
    return "\n".join(lines).strip() + "\n"


README = DOCS_DIR.parent.parent / "README.md"
_START, _END = "<!-- rules:start -->", "<!-- rules:end -->"


def readme_with_rules(readme: str) -> str:
    """The README with its generated rule table between the markers."""
    if _START not in readme or _END not in readme:
        return readme
    table = index_markdown().split("\n", 6)[-1].replace("](OLX", "](docs/rules/OLX")
    table = table.replace("\n## ", "\n### ")
    head, rest = readme.split(_START, 1)
    _, tail = rest.split(_END, 1)
    return f"{head}{_START}\n{table.strip()}\n{_END}{tail}"


# The rules' page of the documentation site (docs/conf.py, Sphinx + MyST): the index above, and
# every rule page in the site's navigation.
SITE_INDEX = """```{include} README.md
```

```{toctree}
:hidden:
:glob:

OLX*
```
"""


def expected_files() -> dict[str, str]:
    files = {f"{r.code}.md": rule_markdown(r) for r in all_rules()}
    files["README.md"] = index_markdown()
    files["index.md"] = SITE_INDEX
    return files


def main(argv: list[str]) -> int:
    files = expected_files()
    if "--check" in argv:
        drift = [
            name
            for name, body in files.items()
            if not (DOCS_DIR / name).exists() or (DOCS_DIR / name).read_text() != body
        ]
        extra = [p.name for p in DOCS_DIR.glob("*.md") if p.name not in files]
        if README.exists() and README.read_text() != readme_with_rules(README.read_text()):
            drift.append("README.md rules table")
        if drift or extra:
            print(
                f"docs/rules is out of date ({', '.join(drift + extra)}): "
                "run python -m onnxlint.rules.docs"
            )
            return 1
        return 0
    DOCS_DIR.mkdir(parents=True, exist_ok=True)
    for p in DOCS_DIR.glob("*.md"):
        if p.name not in files:
            p.unlink()
    for name, body in files.items():
        (DOCS_DIR / name).write_text(body)
    if README.exists():
        README.write_text(readme_with_rules(README.read_text()))
    print(f"wrote {len(files)} files to {DOCS_DIR} and the README's rules table")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
