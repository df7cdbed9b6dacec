"""`onnxlint check --add-noqa` on the real-code precision corpus (issue 31): does it suppress
every finding, add nothing but comments, and stay put on a second run?

    python bench/precision_corpus.py fetch     # the corpus, once (pinned packages)
    python bench/add_noqa_corpus.py [--keep DIR]

Each package folder of bench/corpus/precision/ is copied into a fresh git repository (a temporary
folder, or DIR), committed, and then, with onnxlint's default settings as precision_corpus.py runs
them:

1. `onnxlint check --format json --no-cache PKG`: the findings before;
2. `onnxlint check --add-noqa --no-cache PKG`: what it says it added;
3. `onnxlint check --format json --no-cache PKG`: the findings after (only OLX000, a file that
   does not parse, may remain: it cannot be suppressed);
4. every changed file still parses (ast), its tokens other than comments are those of the
   committed file, and `git diff --numstat` changes as many lines as it adds (no line added or
   removed: comments at line ends);
5. a second `--add-noqa` says it added 0 and leaves `git diff` byte for byte as it was.

Prints one row per package and the totals, with the date and the onnxlint commit.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus" / "precision"
PROBLEMS = ("not_parsing", "other_tokens", "diff_lines", "after_codes", "second_said")


def _onnxlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nice", sys.executable, "-m", "onnxlint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def _findings(pkg: Path, repo: Path) -> list[dict[str, object]]:
    run = _onnxlint("check", "--format", "json", "--no-cache", pkg.name, cwd=repo)
    assert run.returncode in (0, 1), run.stderr
    found: list[dict[str, object]] = json.loads(run.stdout)
    return found


def _code_tokens(text: str) -> list[tuple[int, str]] | None:
    try:
        return [
            (t.type, t.string)
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
        ]
    except (tokenize.TokenError, SyntaxError):
        return None


def run_package(src: Path, work: Path) -> dict[str, object]:
    repo = work / src.name
    shutil.copytree(src, repo / src.name)
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm", "corpus", cwd=repo)
    pkg = repo / src.name
    files = sum(1 for _ in pkg.rglob("*.py"))
    before = _findings(pkg, repo)
    t0 = time.perf_counter()
    first = _onnxlint("check", "--add-noqa", "--no-cache", pkg.name, cwd=repo)
    seconds = time.perf_counter() - t0
    said = first.stdout.splitlines()[0] if first.stdout else first.stderr
    after = _findings(pkg, repo)
    changed = [line for line in _git("diff", "--name-only", cwd=repo).splitlines() if line]
    not_parsing, other_tokens = [], []
    for name in changed:
        new = (repo / name).read_text(encoding="utf-8")
        old = _git("show", f"HEAD:{name}", cwd=repo)
        try:
            ast.parse(new)
        except SyntaxError:
            not_parsing.append(name)
        if _code_tokens(new) != _code_tokens(old):
            other_tokens.append(name)
    added_lines = removed_lines = 0
    for row in _git("diff", "--numstat", cwd=repo).splitlines():
        a, r, _ = row.split("\t", 2)
        added_lines, removed_lines = added_lines + int(a), removed_lines + int(r)
    diff = _git("diff", cwd=repo)
    second = _onnxlint("check", "--add-noqa", "--no-cache", pkg.name, cwd=repo)
    return {
        "package": src.name,
        "files": files,
        "before": len(before),
        "before_lines": len({(f["path"], f.get("cell"), f["line"]) for f in before}),
        "said": said,
        "added": int(said.split()[1]) if said.startswith("Added ") else -1,
        "changed_files": len(changed),
        "seconds": round(seconds, 1),
        "after": len(after),
        "after_codes": sorted({str(f["code"]) for f in after}),
        "not_parsing": not_parsing,
        "other_tokens": other_tokens,
        "diff_lines": (added_lines, removed_lines),
        "second_said": second.stdout.splitlines()[0] if second.stdout else second.stderr,
        "second_changed": _git("diff", cwd=repo) != diff,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    packages = sorted(p for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith("_"))
    if not packages:
        print("no corpus: run python bench/precision_corpus.py fetch", file=sys.stderr)
        return 2
    commit = _git("rev-parse", "--short", "HEAD", cwd=ROOT).strip()
    dirty = (
        " (with uncommitted changes)" if _git("status", "--porcelain", "onnxlint", cwd=ROOT) else ""
    )
    print(
        f"add-noqa on the precision corpus, {time.strftime('%Y-%m-%d')}, onnxlint {commit}{dirty}"
    )
    work = args.keep or Path(tempfile.mkdtemp(prefix="onnxlint-add-noqa-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'package':<36}{'files':>6}{'before':>8}{'added':>7}{'changed':>8}{'after':>6}", end="")
    print(f"{'2nd':>5}  ok")
    for src in packages:
        row = run_package(src, work)
        rows.append(row)
        ok = (
            not row["not_parsing"]
            and not row["other_tokens"]
            and row["diff_lines"][0] == row["diff_lines"][1]
            and not row["second_changed"]
            and str(row["second_said"]).startswith("Added 0 ")
            and set(row["after_codes"]) <= {"OLX000"}
        )
        row["ok"] = ok
        print(
            f"{row['package']:<36}{row['files']:>6}{row['before']:>8}{row['added']:>7}"
            f"{row['changed_files']:>8}{row['after']:>6}"
            f"{str(row['second_said']).split()[1] if row['second_said'] else '?':>5}  "
            f"{'yes' if ok else 'NO ' + json.dumps({k: row[k] for k in PROBLEMS})}"
        )
    total = {
        k: sum(int(r[k]) for r in rows)
        for k in ("files", "before", "before_lines", "added", "changed_files", "after")
    }  # type: ignore[call-overload]
    print(
        f"{'total':<36}{total['files']:>6}{total['before']:>8}{total['added']:>7}"
        f"{total['changed_files']:>8}{total['after']:>6}"
    )
    print(
        f"{total['before']} findings on {total['before_lines']} lines before; {total['added']} "
        f"comments added in {total['changed_files']} files; {total['after']} findings after "
        f"(OLX000 only: {all(set(r['after_codes']) <= {'OLX000'} for r in rows)}); every changed "
        f"file parses and differs only in comments: {all(r['ok'] for r in rows)}"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if not args.keep:
        shutil.rmtree(work)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
