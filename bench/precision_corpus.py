"""Real-code precision corpus for the OLX1xx/OLX2xx rules (issue 12): fetch, run, report.

    python bench/precision_corpus.py fetch               # pinned packages, unpacked
    python bench/precision_corpus.py run --label before  # onnxlint check on each package
    python bench/precision_corpus.py report              # hits, sampled, true, precision
    python bench/precision_corpus.py report --after after  # + before/after, retained

`fetch` downloads pinned versions of model-code-heavy packages with `pip download --no-deps`
(wheels where there are pure ones, else sdists) and unpacks their `.py` files into
`bench/corpus/precision/<pkg>-<ver>/` (gitignored: the corpus is never committed).

`run` runs `python -m onnxlint check --format json --no-cache` (default settings) on each
package folder, one at a time, under `nice`, and writes every finding, with its source line and
enclosing function, to `bench/results/precision-<label>.json` (gitignored), stamped with the
commit of the onnxlint it ran (`--onnxlint PATH` runs another checkout, e.g. a worktree).

`report` samples up to N findings per rule (default 15) deterministically: a finding's rank is a
seeded hash of its label key, so a finding present before and after a change is sampled in
both. It joins them with `bench/precision_labels.jsonl` (committed; one judged finding per line,
keyed by package + path + code + stripped line text + enclosing function, never by line number,
so labels survive line shifts) and prints per rule hits, sampled, true and precision, then the
sampled findings still to judge. With two result files it also prints the hit counts before and
after, and the share of findings judged true before that are still reported after ("retained").
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from registry import pip_download, unpack

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus" / "precision"
DOWNLOADS = CORPUS / "_downloads"
RESULTS = HERE / "results"
LABELS = HERE / "precision_labels.jsonl"

# (distribution, exact version, top-level folders to keep or None for every .py file)
PACKAGES: list[tuple[str, str, tuple[str, ...] | None]] = [
    ("ultralytics", "8.4.190", None),
    ("timm", "1.0.31", None),
    ("kornia", "0.9.0", None),
    ("open_clip_torch", "3.3.0", None),
    ("segmentation-models-pytorch", "0.6.0", None),
    ("speechbrain", "1.1.2", None),
    ("torchmetrics", "1.9.0", None),
    ("mmdet", "3.3.0", None),
    ("yolov5", "7.0.14", None),
    ("monai", "1.6.1", None),
    ("diffusers", "0.42.1", None),
    ("super-gradients", "3.7.1", None),
    ("facenet-pytorch", "2.6.0", None),
    ("effdet", "0.4.1", None),
    (
        "transformers",
        "5.23.0",
        tuple(
            f"transformers/models/{m}/"
            for m in (
                "bert",
                "clip",
                "convnext",
                "deformable_detr",
                "detr",
                "dinov2",
                "gpt2",
                "llama",
                "mask2former",
                "mobilevit",
                "owlvit",
                "rt_detr",
                "sam",
                "segformer",
                "swin",
                "t5",
                "vit",
                "wav2vec2",
                "whisper",
                "yolos",
            )
        ),
    ),
]

RULE_PREFIXES = ("OLX1", "OLX2")


def _norm(dist: str) -> str:
    return dist.replace("-", "_").lower()


def package_dir(dist: str, version: str) -> Path:
    return CORPUS / f"{_norm(dist)}-{version}"


def _keep(name: str, subset: tuple[str, ...] | None) -> bool:
    if not name.endswith(".py"):
        return False
    return subset is None or name.startswith(subset)


def _find_archive(dist: str, version: str) -> Path | None:
    stem = _norm(dist)
    for path in sorted(DOWNLOADS.iterdir()) if DOWNLOADS.is_dir() else []:
        name = path.name.lower().replace("-", "_")
        if name.startswith(f"{stem}_{version}") or name.startswith(f"{stem}-{version}"):
            return path
    return None


def fetch(args: argparse.Namespace) -> None:
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    for dist, version, subset in PACKAGES:
        dest = package_dir(dist, version)
        if dest.is_dir() and any(dest.rglob("*.py")):
            print(f"{dest.name}: present")
            continue
        archive = _find_archive(dist, version)
        if archive is None:
            spec = f"{dist}=={version}"
            # A pure wheel first (no build step); else the sdist.
            proc = pip_download(
                DOWNLOADS, "--only-binary", ":all:", "--platform", "any", spec, check=False
            )
            if proc.returncode != 0:
                pip_download(DOWNLOADS, "--no-binary", ":all:", spec)
            archive = _find_archive(dist, version)
        if archive is None:
            print(f"{dist}=={version}: download produced no archive", file=sys.stderr)
            continue
        n = unpack(archive, dest, functools.partial(_keep, subset=subset))
        print(f"{dest.name}: {n} files from {archive.name}")


def _git_commit(path: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    commit = proc.stdout.strip() or "unknown"
    dirty = subprocess.run(
        ["git", "-C", str(path), "status", "--porcelain", "--", "onnxlint"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return commit + ("-dirty" if dirty else "")


def _scopes(tree: ast.AST) -> list[tuple[int, int, str]]:
    """(first line, last line, dotted name) of every def and class, outermost first."""
    out: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append((first, child.end_lineno or child.lineno, name))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


class _Source:
    def __init__(self) -> None:
        self.cache: dict[Path, tuple[list[str], list[tuple[int, int, str]]]] = {}

    def get(self, path: Path) -> tuple[list[str], list[tuple[int, int, str]]]:
        if path not in self.cache:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:  # a dangling link
                text = ""
            try:
                scopes = _scopes(ast.parse(text))
            except (SyntaxError, ValueError):
                scopes = []
            self.cache[path] = (text.splitlines(), scopes)
        return self.cache[path]

    def describe(self, path: Path, line: int) -> tuple[str, str]:
        lines, scopes = self.get(path)
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        scope = ""
        for first, last, name in scopes:
            if first <= line <= last:
                scope = name  # later entries are nested deeper
        return text, scope or "<module>"


def _line_count(folder: Path) -> tuple[int, int]:
    files = lines = 0
    for path in folder.rglob("*.py"):
        if not path.is_file():  # a dangling link
            continue
        files += 1
        with path.open("rb") as f:
            lines += sum(1 for _ in f)
    return files, lines


def onnxlint_env(onnxlint: str | None) -> tuple[Path, dict[str, str], str]:
    """The checkout to import onnxlint from (default: this one), the environment that makes it
    the one imported, and the module file it imports from (checked)."""
    onnxlint_root = Path(onnxlint).resolve() if onnxlint else ROOT
    env = dict(os.environ, PYTHONPATH=str(onnxlint_root))
    probe = subprocess.run(
        [sys.executable, "-c", "import onnxlint; print(onnxlint.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.strip()
    if not Path(probe).resolve().is_relative_to(onnxlint_root):
        sys.exit(f"onnxlint imports from {probe}, not from {onnxlint_root}")
    return onnxlint_root, env, probe


def lint_folder(
    folder: Path,
    env: dict[str, str],
    jobs: int,
    package: str,
    version: str,
    source: _Source,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`onnxlint check --format json --no-cache` on one folder (its own root): the folder's
    stats, and every finding with its source line, enclosing function and the other files its
    related locations are in."""
    t = time.perf_counter()
    cmd = ["nice", "-n", "10", sys.executable, "-m", "onnxlint", "check"]
    cmd += ["--format", "json", "--no-cache", "--exit-zero", "--jobs", str(jobs), "."]
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
        sys.exit(f"{folder.name}: onnxlint exited {proc.returncode}")
    found = json.loads(proc.stdout or "[]")
    files, lines = _line_count(folder)
    info = {
        "version": version,
        "files": files,
        "lines": lines,
        "findings": len(found),
        "seconds": round(time.perf_counter() - t, 1),
    }
    out = []
    for v in found:
        rel = Path(v["path"])
        path = rel if rel.is_absolute() else folder / rel
        rel_path = _relative(folder, str(path))
        text, scope = source.describe(path, v["line"])
        others = sorted(
            {
                _relative(folder, r["path"])
                for r in v.get("related") or ()
                if _relative(folder, r["path"]) != rel_path
            }
        )
        out.append(
            {
                "package": package,
                "version": version,
                "path": rel_path,
                "line": v["line"],
                "column": v["column"],
                "code": v["code"],
                "severity": v.get("severity"),
                "message": v["message"],
                "text": text,
                "scope": scope,
                # other files its related locations are in (a cross-file finding)
                "other_files": others,
            }
        )
    return info, out


def run(args: argparse.Namespace) -> None:
    onnxlint_root, env, probe = onnxlint_env(args.onnxlint)
    result: dict[str, Any] = {
        "label": args.label,
        "commit": _git_commit(onnxlint_root),
        "onnxlint": probe,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "packages": {},
        "findings": [],
    }
    source = _Source()
    only = set(args.only or [])
    for dist, version, _ in PACKAGES:
        folder = package_dir(dist, version)
        if only and _norm(dist) not in only:
            continue
        if not folder.is_dir():
            print(f"{folder.name}: missing (run `fetch` first)", file=sys.stderr)
            continue
        info, found = lint_folder(folder, env, args.jobs, _norm(dist), version, source)
        result["packages"][folder.name] = {"dist": dist, **info}
        result["findings"] += found
        print(
            f"{folder.name}: {info['files']} files, {info['lines']:,} lines, "
            f"{len(found)} findings, {info['seconds']} s",
            flush=True,
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"precision-{args.label}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} ({len(result['findings'])} findings, onnxlint {result['commit']})")


def _relative(folder: Path, path: str) -> str:
    # absolute, not resolved: a link (icefall's recipes link each other's files) keeps its path
    p = Path(os.path.abspath(folder / path))
    try:
        return p.relative_to(os.path.abspath(folder)).as_posix()
    except ValueError:
        return p.as_posix()


Key = tuple[str, str, str, str, str]


def key_of(d: dict[str, Any]) -> Key:
    return (d["package"], d["path"], d["code"], d["text"], d["scope"])


def load_labels(path: Path = LABELS) -> dict[Key, dict[str, Any]]:
    labels: dict[Key, dict[str, Any]] = {}
    if path.exists():
        for n, raw in enumerate(path.read_text().splitlines(), 1):
            if raw.strip():
                try:
                    d = json.loads(raw)
                except json.JSONDecodeError as exc:
                    sys.exit(f"{path.name}:{n}: {exc}")
                if d.get("verdict") not in ("true", "false"):
                    sys.exit(f"{path.name}:{n}: verdict must be 'true' or 'false'")
                labels[key_of(d)] = d
    return labels


def _results(name: str) -> dict[str, Any]:
    path = Path(name)
    if not path.exists():
        path = RESULTS / f"precision-{name}.json"
    if not path.exists():
        sys.exit(f"no results file {path} (run `run --label {name}` first)")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def sample(findings: list[dict[str, Any]], n: int, seed: int) -> list[dict[str, Any]]:
    """Up to n findings, one per label key, ranked by a seeded hash of the key."""
    by_key: dict[Key, dict[str, Any]] = {}
    for f in sorted(findings, key=lambda f: (f["package"], f["path"], f["line"], f["column"])):
        by_key.setdefault(key_of(f), f)

    def rank(k: Key) -> str:
        return hashlib.sha256("\0".join((str(seed), *k)).encode()).hexdigest()

    return [by_key[k] for k in sorted(by_key, key=rank)[:n]]


def _rules(findings: list[dict[str, Any]], all_rules: bool) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in findings:
        if all_rules or f["code"].startswith(RULE_PREFIXES):
            out[f["code"]].append(f)
    return out


def report(args: argparse.Namespace) -> None:
    labels = load_labels()
    main = _results(args.after or args.before)
    print(f"results: {main['label']} (onnxlint {main['commit']}, {main['created']})")
    total_lines = sum(p["lines"] for p in main["packages"].values())
    print(f"corpus: {len(main['packages'])} packages, {total_lines:,} lines\n")
    rules = _rules(main["findings"], args.all_rules)
    print(
        f"{'rule':8} {'hits':>6} {'sampled':>8} {'true':>5} {'judged':>7} {'precision':>10} "
        f"{'cross-file':>11}"
    )
    todo: list[dict[str, Any]] = []
    for code in sorted(rules):
        picked = sample(rules[code], args.n, args.seed)
        judged = [labels[key_of(f)] for f in picked if key_of(f) in labels]
        true = sum(1 for d in judged if d["verdict"] == "true")
        todo += [f for f in picked if key_of(f) not in labels]
        prec = f"{true / len(judged):.0%}" if judged else "-"
        # findings whose related locations are in other files (runs before this column: -)
        cross: int | str = "-"
        if any("other_files" in f for f in rules[code]):
            cross = sum(1 for f in rules[code] if f.get("other_files"))
        print(
            f"{code:8} {len(rules[code]):>6} {len(picked):>8} {true:>5} {len(judged):>7} "
            f"{prec:>10} {cross:>11}"
        )
    if args.after:
        before = _results(args.before)
        b_rules = _rules(before["findings"], args.all_rules)
        after_keys = {key_of(f) for f in main["findings"]}
        print(
            f"\nbefore: {before['label']} (onnxlint {before['commit']}); "
            f"after: {main['label']} (onnxlint {main['commit']})"
        )
        print(f"{'rule':8} {'before':>7} {'after':>6} {'true before':>12} {'retained':>9}")
        kept_all = true_all = 0
        for code in sorted(set(b_rules) | set(rules)):
            b_keys = {key_of(f) for f in b_rules.get(code, [])}
            true_keys = {k for k in b_keys if labels.get(k, {}).get("verdict") == "true"}
            kept = len(true_keys & after_keys)
            kept_all += kept
            true_all += len(true_keys)
            share = f"{kept / len(true_keys):.0%}" if true_keys else "-"
            print(
                f"{code:8} {len(b_rules.get(code, [])):>7} {len(rules.get(code, [])):>6} "
                f"{len(true_keys):>12} {share:>9}"
            )
        if true_all:
            print(f"{'all':8} {'':>7} {'':>6} {true_all:>12} {kept_all / true_all:>9.0%}")
    if todo:
        print(f"\n{len(todo)} sampled findings without a label (add them to {LABELS.name}):")
        for f in todo:
            print(
                f"  {f['package']}-{f['version']}/{f['path']}:{f['line']} {f['code']} "
                f"[{f['scope']}] {f['text'][:100]}"
            )
            if args.verbose:
                print(f"      {f['message'][:200]}")
    if args.template and todo:
        with open(args.template, "w") as out:
            for f in todo:
                row = {k: f[k] for k in ("package", "version", "path", "code", "text", "scope")}
                row |= {"line": f["line"], "verdict": "", "reason": ""}
                out.write(json.dumps(row) + "\n")
        print(f"wrote a template for them to {args.template}")


def counts(args: argparse.Namespace) -> None:
    data = _results(args.label)
    by = Counter(f["code"] for f in data["findings"])
    for code, n in sorted(by.items()):
        print(f"{code} {n}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="download and unpack the pinned packages")
    p_run = sub.add_parser("run", help="run onnxlint over each package")
    p_run.add_argument("--label", default="after")
    p_run.add_argument("--onnxlint", help="checkout to import onnxlint from (default: this one)")
    p_run.add_argument("--jobs", type=int, default=1)
    p_run.add_argument("--only", action="append", help="only this package (repeatable)")
    p_rep = sub.add_parser("report", help="precision per rule, and before/after")
    p_rep.add_argument("--before", default="before", help="label or path of the before results")
    p_rep.add_argument("--after", help="label or path of the after results")
    p_rep.add_argument("-n", type=int, default=15, help="findings sampled per rule")
    p_rep.add_argument("--seed", type=int, default=12)
    p_rep.add_argument("--all-rules", action="store_true", help="every rule, not only OLX1xx/2xx")
    p_rep.add_argument("--verbose", "-v", action="store_true", help="show messages of todo items")
    p_rep.add_argument("--template", help="write unlabeled sampled findings as JSONL here")
    p_cnt = sub.add_parser("counts", help="findings per rule in one results file")
    p_cnt.add_argument("label")
    args = parser.parse_args()
    {"fetch": fetch, "run": run, "report": report, "counts": counts}[args.command](args)


if __name__ == "__main__":
    main()
