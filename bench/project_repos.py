"""The static rules with the project model on real repositories (issue 30): run, report.

    python bench/project_repos.py run --label main                  # this checkout
    python bench/project_repos.py run --label before30 --onnxlint DIR   # an export of a commit
    python bench/project_repos.py report --before before30 --after main
    python bench/project_repos.py report ... --template /tmp/todo.jsonl   # unjudged, to label
    python bench/project_repos.py libraries    # then `run --libraries`: LIBRARIES on PYTHONPATH

The repositories are the 32 GitHub projects of the export-scripts bench (`SCRIPTS` in
`export_scripts_github.py`: each pinned to a commit, exported by `export_scripts.py fetch`
into `bench/corpus/github/<owner>+<name>/`; `--corpus DIR` reads them from another checkout's
corpus). Unlike the precision corpus's packages, these are projects: model code, their own
export scripts and wrappers, configs, spread over files, so the project model's cross-file
facts (a model's mode, builders, configuration values, sizes followed through calls and files)
have something to follow.

`run` runs `onnxlint check --format json --no-cache` (default settings, every rule) with each
repository as its own root, through `precision_corpus.lint_folder`, and writes every finding to
`bench/results/repos-<label>.json` (gitignored); `--only OWNER+NAME` (repeatable) re-runs some
repositories and keeps the others' findings from the existing file.

`report` joins the findings with `bench/repos_labels.jsonl` (committed; one judged finding a
line, the precision corpus's format and key: package = `owner+name`, version = the pinned
commit, path, code, stripped line text, enclosing function; never the line number) and prints
per rule: findings before and after, new (after only), gone (before only), cross-file (a
finding whose `related` locations are in another file), a deterministic sample of the after
findings (up to N a rule, the precision corpus's sampler) with how many of it were judged true,
and how many of the new, gone and cross-file findings were judged true; then the share of the
findings judged true before that are still reported ("retained"), and every finding still to
judge: the sample's, and every new, gone and cross-file finding.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from export_scripts_github import CORPUS, SCRIPTS
from precision_corpus import (
    RESULTS,
    Key,
    _git_commit,
    _Source,
    key_of,
    lint_folder,
    load_labels,
    onnxlint_env,
    sample,
)

HERE = Path(__file__).resolve().parent
LABELS = HERE / "repos_labels.jsonl"
# The libraries the repositories' code imports a model class from, where a finding depends on
# that class (OLX201 judges a library class by its source): edgeai-mmdeploy's tests export
# mmagic's SRCNNNet, whose base is mmengine's BaseModule. A user's environment holds them; the
# run puts them on PYTHONPATH (`run --libraries`), installed without their own dependencies
# (`libraries`: pip install --no-deps --target). PackNet01 (packnet-sfm, TensorRT's sample)
# is not on PyPI and stays unread.
LIBRARIES = ["mmagic==1.2.0", "mmengine==0.10.7"]
LIBRARIES_DIR = HERE / "corpus" / "libraries"


def repositories() -> dict[str, str]:
    """owner+name -> pinned commit, in SCRIPTS' order (a repository once)."""
    out: dict[str, str] = {}
    for s in SCRIPTS:
        out.setdefault(s.repo.replace("/", "+"), s.commit)
    return out


def _results_path(label: str) -> Path:
    path = Path(label)
    return path if path.suffix == ".json" else RESULTS / f"repos-{label}.json"


def libraries(args: argparse.Namespace) -> None:
    """Install LIBRARIES (no dependencies) into LIBRARIES_DIR."""
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--upgrade"]
    subprocess.run([*cmd, "--target", str(LIBRARIES_DIR), *LIBRARIES], check=True)
    print(f"{', '.join(LIBRARIES)} in {LIBRARIES_DIR}")


def run(args: argparse.Namespace) -> None:
    onnxlint_root, env, probe = onnxlint_env(args.onnxlint)
    if args.libraries:
        if not LIBRARIES_DIR.is_dir():
            sys.exit(f"no {LIBRARIES_DIR} (run `project_repos.py libraries` first)")
        env["PYTHONPATH"] += os.pathsep + str(LIBRARIES_DIR)
    corpus = Path(args.corpus).resolve() if args.corpus else CORPUS
    out = _results_path(args.label)
    only = set(args.only or [])
    result: dict[str, Any] = {"packages": {}, "findings": []}
    if only and out.exists():
        result = json.loads(out.read_text())
        result["findings"] = [f for f in result["findings"] if f["package"] not in only]
    result |= {
        "label": args.label,
        "commit": _git_commit(onnxlint_root),
        "onnxlint": probe,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "corpus": str(corpus),
        "checkout": args.checkout,
        "libraries": LIBRARIES if args.libraries else [],
    }
    source = _Source()
    for name, commit in repositories().items():
        if only and name not in only:
            continue
        folder = corpus / name
        if args.checkout and (Path(args.checkout) / name).is_dir():
            folder = Path(args.checkout).resolve() / name
        if not folder.is_dir():
            print(f"{name}: missing (run `export_scripts.py fetch` first)", file=sys.stderr)
            continue
        info, found = lint_folder(folder, env, args.jobs, name, commit, source)
        result["packages"][name] = info
        result["findings"] += found
        print(
            f"{name}: {info['files']} files, {info['lines']:,} lines, {len(found)} findings, "
            f"{info['seconds']} s",
            flush=True,
        )
        _write(out, result)  # after each repository: a stopped run keeps what it did
    _write(out, result)
    print(f"wrote {out} ({len(result['findings'])} findings, onnxlint {result['commit']})")


def _write(out: Path, result: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")


def _load(label: str) -> dict[str, Any]:
    path = _results_path(label)
    if not path.exists():
        sys.exit(f"no results file {path} (run `run --label {label}` first)")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# The static rules (OLX000, a file that does not parse, says nothing about an export).
RULE_PREFIXES = ("OLX1", "OLX2", "OLX3", "OLX4", "OLX5")


def _by_rule(findings: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in findings:
        if f["code"].startswith(RULE_PREFIXES):
            out[f["code"]].append(f)
    return out


def _true(keys: set[Key], labels: dict[Key, dict[str, Any]]) -> str:
    """'true/judged' of these keys ('-' when none)."""
    judged = [labels[k]["verdict"] for k in keys if k in labels]
    return f"{judged.count('true')}/{len(judged)}" if keys else "-"


def report(args: argparse.Namespace) -> None:
    labels = load_labels(LABELS)
    after = _load(args.after)
    before = _load(args.before)
    print(f"before: {before['label']} (onnxlint {before['commit']}, {before['created']})")
    print(f"after:  {after['label']} (onnxlint {after['commit']}, {after['created']})")
    lines = sum(p["lines"] for p in after["packages"].values())
    files = sum(p["files"] for p in after["packages"].values())
    print(f"corpus: {len(after['packages'])} repositories, {files:,} files, {lines:,} lines\n")
    a_rules, b_rules = _by_rule(after["findings"]), _by_rule(before["findings"])
    head = (
        f"{'rule':8} {'before':>6} {'after':>6} {'new':>4} {'gone':>5} {'cross-file':>10} "
        f"{'sampled':>7} {'true':>5} {'judged':>6} {'true%':>6} {'new true':>9} "
        f"{'gone true':>9} {'cross true':>10}"
    )
    print(head)
    todo: dict[Key, dict[str, Any]] = {}
    totals = [0] * 5
    for code in sorted(set(a_rules) | set(b_rules)):
        a_keys = {key_of(f) for f in a_rules.get(code, [])}
        b_keys = {key_of(f) for f in b_rules.get(code, [])}
        new, gone = a_keys - b_keys, b_keys - a_keys
        cross = {key_of(f) for f in a_rules.get(code, []) if f.get("other_files")}
        picked = sample(a_rules.get(code, []), args.n, args.seed)
        judged = [labels[key_of(f)] for f in picked if key_of(f) in labels]
        true = sum(1 for d in judged if d["verdict"] == "true")
        share = f"{true / len(judged):.0%}" if judged else "-"
        print(
            f"{code:8} {len(b_rules.get(code, [])):>6} {len(a_rules.get(code, [])):>6} "
            f"{len(new):>4} {len(gone):>5} {len(cross):>10} {len(picked):>7} {true:>5} "
            f"{len(judged):>6} {share:>6} {_true(new, labels):>9} {_true(gone, labels):>9} "
            f"{_true(cross, labels):>10}"
        )
        counts = (len(b_rules.get(code, [])), len(a_rules.get(code, [])), len(new), len(gone))
        totals = [t + n for t, n in zip(totals, (*counts, len(cross)), strict=True)]
        wanted = {key_of(f) for f in picked} | new | gone | cross
        for f in [*a_rules.get(code, []), *b_rules.get(code, [])]:
            if key_of(f) in wanted and key_of(f) not in labels:
                todo.setdefault(key_of(f), f)
    print(f"{'all':8} {totals[0]:>6} {totals[1]:>6} {totals[2]:>4} {totals[3]:>5} {totals[4]:>10}")
    b_true = {
        key_of(f)
        for fs in b_rules.values()
        for f in fs
        if labels.get(key_of(f), {}).get("verdict") == "true"
    }
    a_all = {key_of(f) for fs in a_rules.values() for f in fs}
    if b_true:
        kept = len(b_true & a_all)
        share = f"{kept / len(b_true):.0%}"
        print(f"\nretained: {kept}/{len(b_true)} findings judged true before ({share})")
    if todo:
        print(f"\n{len(todo)} findings without a label (add them to {LABELS.name}):")
        for f in todo.values():
            print(
                f"  {f['package']}/{f['path']}:{f['line']} {f['code']} [{f['scope']}] "
                f"{f['text'][:100]}"
            )
            if args.verbose:
                print(f"      {f['message'][:300]}")
    if args.template and todo:
        with open(args.template, "w") as out:
            for f in todo.values():
                row = {k: f[k] for k in ("package", "version", "path", "code", "text", "scope")}
                row |= {"line": f["line"], "message": f["message"], "other_files": f["other_files"]}
                row |= {"verdict": "", "reason": ""}
                out.write(json.dumps(row) + "\n")
        print(f"wrote a template for them to {args.template}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run onnxlint over each repository")
    p_run.add_argument("--label", default="after")
    p_run.add_argument("--onnxlint", help="checkout to import onnxlint from (default: this one)")
    p_run.add_argument("--corpus", help=f"folder of the repositories (default: {CORPUS})")
    p_run.add_argument(
        "--checkout",
        help="folder of checkout-like copies (`cp -al` + an empty .git) of the repositories "
        "without a project marker, used instead of the corpus's",
    )
    p_run.add_argument("--jobs", type=int, default=2)
    p_run.add_argument("--only", action="append", help="only this owner+name (repeatable)")
    p_run.add_argument(
        "--libraries", action="store_true", help="LIBRARIES on PYTHONPATH (see `libraries`)"
    )
    sub.add_parser("libraries", help=f"install {', '.join(LIBRARIES)} for `run --libraries`")
    p_rep = sub.add_parser("report", help="per rule: before/after, new, gone, cross-file, true")
    p_rep.add_argument("--before", default="before30", help="label or path of the before run")
    p_rep.add_argument("--after", default="main", help="label or path of the after run")
    p_rep.add_argument("-n", type=int, default=15, help="after findings sampled per rule")
    p_rep.add_argument("--seed", type=int, default=12)
    p_rep.add_argument("--verbose", "-v", action="store_true", help="show the todo's messages")
    p_rep.add_argument("--template", help="write the unlabeled findings as JSONL here")
    args = parser.parse_args()
    {"run": run, "report": report, "libraries": libraries}[args.command](args)


if __name__ == "__main__":
    main()
