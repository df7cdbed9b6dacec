"""Deep fixes (issue 29): for every deep finding of the zoo and of the users' reports, is a
fix offered, proven, and right when checked by an independent real run?

    flock /work/wt/heavy.lock nice python bench/deep_fixes.py [--only NAME,...]
        [--zoo-only | --reports-only] [--json out.json]
    python bench/deep_fixes.py --rescore zoo.json,rerun.json,reports.json

For each model of bench/zoo_models.py (ZOO) and each factory reproduction of
bench/user_reports.py (REPORTS; the script reports too), onnxlint's deep analysis runs
(the worker API, as `onnxlint check --deep`), then `onnxlint.deep.fixes.prove_fixes` asks
every rewrite kind for its candidates on each finding and has the worker prove them (the
finding gone, no new one, the export not worse; eager outputs as the original's; the real
export and onnxruntime against eager). Findings in an installed package's file (the
transformers and MONAI models of the zoo) are proven too, but counted apart: onnxlint does
not offer them to users (`library=True` here only).

Every proven fix is then checked by the bench itself, in two fresh processes that share
nothing with onnxlint's worker (`--check`): the fix's edits are applied to the original
text as a user's editor would (`apply_edits`; a file the fix adds is written with its
text), the rewritten files are served by a small import hook of this script (a script
report: run from a copy of its folder up to its `torch.onnx.export` call, whose model,
inputs, dynamic shapes and `custom_translation_table` are taken), and torch runs for real:

- the original factory, seed 0: its weights, and eager outputs at the example inputs, at
  the example with each requested dynamic dim one larger (where the original runs), and at
  the example with its floating inputs negated;
- the rewritten factory, seed 0, given the original's weights: the same outputs in eager
  mode (`abs 1e-4 + rel 1e-3 x max|eager|`, shapes and integers exactly), then
  `torch.onnx.export(..., dynamo=True)` with the factory's dynamic shapes and onnxruntime
  against eager on the same inputs.

Prints, per rewrite kind: candidates offered, proven, applied-and-exports, outputs-match
(bench's check), and the proof's cost per fix; per finding code: how many findings got a
proven fix; the findings no rewrite answers. The target (issue 29): a proven fix for at least
half of the model-code findings, and no offered fix that fails to export or changes outputs.
"Model code": every finding but those at the example or the export call (OLX822, OLX823,
OLX824, and any finding at a script's export call, such as a removed export API) and those no
rewrite is for (`fixes.NOT_FIXED`: graph breaks that export itself handles, the analysis's own
limits, memory).
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

EXAMPLE_CODES = frozenset({"OLX822", "OLX823", "OLX824"})
ATOL, RTOL = 1e-4, 1e-3


# --------------------------------------------------------------------------- the targets


def zoo_targets(only: set[str]) -> list[tuple[str, Any]]:
    import zoo
    import zoo_models

    from onnxlint.deep.targets import Target

    zoo.ensure_deps()
    out = []
    for name in zoo_models.ZOO:
        if only and name not in only:
            continue
        t = Target(
            name=name,
            factory=f"zoo_models:{name}",
            root=HERE,
            verify=name in zoo_models.VERIFY,
            timeout=1200.0,
        )
        out.append(("zoo", t))
    return out


def report_targets(only: set[str]) -> list[tuple[str, Any]]:
    import user_reports as ur

    from onnxlint.deep.scripts import script_targets
    from onnxlint.deep.targets import Target

    out: list[tuple[str, Any]] = []
    for r in ur.REPORTS:
        if only and r.name not in only:
            continue
        if r.script:
            out += [("reports", t) for t in script_targets(ur.SCRIPTS / r.script, ur.SCRIPTS)]
        else:
            t = Target(
                name=r.name,
                factory=f"user_reports_models:{r.factory}",
                root=HERE,
                opset=r.opset,
                timeout=600.0,
            )
            out.append(("reports", t))
    return out


# --------------------------------------------------------------------------- the check


class _Loader(importlib.machinery.SourceFileLoader):
    files: dict[str, str] = {}

    def get_data(self, path: str) -> bytes:
        text = self.files.get(os.path.realpath(path))
        return text.encode() if text is not None else super().get_data(path)

    def path_stats(self, path: str) -> Any:
        if os.path.realpath(path) in self.files:
            raise OSError("no bytecode")
        return super().path_stats(path)

    def set_data(self, *_a: Any, **_k: Any) -> None:
        return None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or os.path.realpath(spec.origin) not in _Loader.files:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            spec.origin,
            loader=_Loader(fullname, spec.origin),
            submodule_search_locations=spec.submodule_search_locations,
        )


def _build(factory: str, files: dict[str, str]) -> tuple[Any, ...]:
    import torch

    if files:
        _Loader.files = {os.path.realpath(p): t for p, t in files.items()}
        sys.meta_path.insert(0, _Finder())
    mod_name, _, fn = factory.partition(":")
    torch.manual_seed(0)
    made = getattr(importlib.import_module(mod_name), fn)()
    model, args = made[0], tuple(made[1])
    kwargs = dict(made[2]) if len(made) > 2 and made[2] else {}
    ds = made[3] if len(made) > 3 else None
    if isinstance(model, torch.nn.Module):
        model.eval()
    return model, args, kwargs, ds


def _dims(model: Any, args: Any, kwargs: Any, ds: Any) -> list[tuple[str, int, int]]:
    """(input, index or key, dim) of each dim the factory asks to be dynamic."""
    import inspect

    import torch

    out: list[tuple[str, int, int]] = []
    if ds is None:
        return out
    if isinstance(ds, dict):
        try:
            params = list(inspect.signature(model.forward).parameters)
        except (TypeError, ValueError):
            params = []
        items = []
        for key, spec in ds.items():
            if key in kwargs:
                items.append(("kw", key, spec))
            elif key in params and params.index(key) < len(args):
                items.append(("arg", params.index(key), spec))
    else:
        items = [("arg", i, spec) for i, spec in enumerate(ds)]
    for where, key, spec in items:
        value = kwargs.get(key) if where == "kw" else args[key]
        if not isinstance(value, torch.Tensor):
            continue
        if isinstance(spec, dict):
            dims = list(spec)
        elif isinstance(spec, (tuple, list)):
            dims = [i for i, d in enumerate(spec) if d is not None]
        else:
            continue
        out += [(where, key, int(d)) for d in dims]
    return out


def _cases(model: Any, args: Any, kwargs: Any, ds: Any) -> list[tuple[str, Any, Any]]:
    import copy

    import torch

    cases = [("example", copy.deepcopy(args), copy.deepcopy(kwargs))]
    dims = _dims(model, args, kwargs, ds)
    if dims:
        a, k = list(copy.deepcopy(args)), copy.deepcopy(kwargs)
        torch.manual_seed(1)
        for where, key, d in dims:
            box = k if where == "kw" else a
            x = box[key]
            shape = list(x.shape)
            shape[d] += 1
            if x.is_floating_point():
                box[key] = torch.randn(shape, dtype=x.dtype)
            else:
                hi = int(x.max()) + 1 if x.numel() else 2
                box[key] = torch.randint(0, max(hi, 1), shape, dtype=x.dtype)
        cases.append(("one larger", tuple(a), k))
    leaves, spec = torch.utils._pytree.tree_flatten((args, kwargs))
    neg = [-x if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in leaves]
    if any(isinstance(x, torch.Tensor) and x.is_floating_point() for x in leaves):
        a, k = torch.utils._pytree.tree_unflatten(neg, spec)
        cases.append(("negated", tuple(a), dict(k)))
    return cases


def _run(model: Any, args: Any, kwargs: Any) -> Any:
    import copy

    import torch

    a, k = copy.deepcopy((args, kwargs))
    try:
        with torch.no_grad():
            out = model(*a, **k)
    except Exception as e:
        return f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return [
        x.detach().clone() if isinstance(x, torch.Tensor) else x
        for x in torch.utils._pytree.tree_leaves(out)
    ]


def _same(want: Any, got: Any) -> str:
    import torch

    if isinstance(got, str):
        return got
    want_t = [w for w in want if isinstance(w, torch.Tensor)]
    got_t = [torch.as_tensor(g) for g in got if not isinstance(g, (int, float, bool, str))]
    if len(want_t) != len(got_t):
        return f"{len(got_t)} outputs, expected {len(want_t)}"
    for i, (w, g) in enumerate(zip(want_t, got_t, strict=True)):
        if tuple(w.shape) != tuple(g.shape):
            return f"output {i}: shape {tuple(g.shape)}, expected {tuple(w.shape)}"
        if not w.is_floating_point():
            if not torch.equal(w, g.to(w.dtype)):
                return f"output {i}: integer values differ"
            continue
        if not torch.equal(torch.isnan(w), torch.isnan(g)):
            return f"output {i}: NaN differs"
        ok = ~torch.isnan(w)
        wd, gd = w[ok].double(), g[ok].double()
        if wd.numel() == 0:
            continue
        diff = float((wd - gd).abs().nan_to_num(0.0).max())
        ref = float(wd.abs().nan_to_num(0.0).max())
        if diff > ATOL + RTOL * ref:
            return f"output {i}: max abs diff {diff:.3g}"
    return "ok"


def _made(spec: dict[str, Any], files: dict[str, str]) -> tuple[Any, ...]:
    """(model, args, kwargs, dynamic shapes, translation table) of a factory or a script."""
    if spec.get("script"):
        return _run_script(spec["factory"].removeprefix("script:"), files)
    return (*_build(spec["factory"], files), None)


def check_original(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    model, args, kwargs, ds, _table = _made(spec, {})
    cases = _cases(model, args, kwargs, ds)
    outputs = [_run(model, a, k) for _, a, k in cases]
    state = model.state_dict() if isinstance(model, torch.nn.Module) else {}
    torch.save({"state": state, "cases": cases, "outputs": outputs}, spec["file"])
    return {"cases": [c[0] for c in cases], "runs": [not isinstance(o, str) for o in outputs]}


def check_rewritten(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    ref = torch.load(spec["file"], weights_only=False)
    model, args, kwargs, ds, table = _made(spec, spec["files"])
    out: dict[str, Any] = {"eager": {}, "onnx": {}}
    if ref["state"]:
        model.load_state_dict(ref["state"], strict=True)
    for (label, a, k), want in zip(ref["cases"], ref["outputs"], strict=True):
        if isinstance(want, str):
            continue
        out["eager"][label] = _same(want, _run(model, a, k))
    try:
        program = torch.onnx.export(
            model,
            args,
            kwargs=kwargs or None,
            dynamic_shapes=ds,
            opset_version=spec.get("opset"),
            custom_translation_table=table,
            dynamo=True,
            verbose=False,
        )
        out["export"] = "ok"
    except Exception as e:
        out["export"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
        return out
    for (label, a, k), want in zip(ref["cases"], ref["outputs"], strict=True):
        if isinstance(want, str):
            continue
        try:
            got = [torch.as_tensor(t) for t in program(*a, **k)]
        except Exception as e:
            out["onnx"][label] = f"onnxruntime: {type(e).__name__}: {str(e)[:200]}"
            continue
        out["onnx"][label] = _same(want, got)
    return out


def _applied(path: str, fix: Any, apply_edits: Any) -> dict[str, str]:
    """The files a fix writes, as a user's editor writes them: its edits applied to the
    original texts, the files it adds with their text ({} when it changes nothing)."""
    out: dict[str, str] = {}
    if fix.edits:
        out[path] = apply_edits(Path(path).read_text(encoding="utf-8"), list(fix.edits))
    for f in fix.files:
        if f.create:
            out[f.path] = f.text
        else:
            out[f.path] = apply_edits(Path(f.path).read_text(encoding="utf-8"), list(f.edits))
    return {
        p: t for p, t in out.items() if not os.path.exists(p) or t != Path(p).read_text("utf-8")
    }


class _Captured(BaseException):
    pass


def _run_script(script: str, files: dict[str, str]) -> tuple[Any, ...]:
    """Run an export script (as rewritten: `files`) up to its `torch.onnx.export` call, from
    a copy of its folder (the files a fix adds next to it are written there): the call's
    model, args, kwargs, dynamic shapes and custom_translation_table."""
    import shutil

    import torch

    src = Path(script)
    tmp = Path(tempfile.mkdtemp(prefix="deep-fixes-script-"))
    shutil.copytree(src.parent, tmp, dirs_exist_ok=True)
    for path, text in files.items():
        (tmp / Path(path).relative_to(src.parent)).write_text(text, encoding="utf-8")
    seen: dict[str, Any] = {}

    def export(model: Any, args: Any = (), f: Any = None, **kw: Any) -> Any:
        seen.update(model=model, args=args, **kw)
        raise _Captured

    real = torch.onnx.export
    torch.onnx.export = export  # type: ignore[assignment]
    os.chdir(tmp)
    sys.path.insert(0, str(tmp))
    torch.manual_seed(0)
    try:
        import runpy

        runpy.run_path(str(tmp / src.name), run_name="__main__")
    except _Captured:
        pass
    finally:
        torch.onnx.export = real
    model, args = seen["model"], seen.get("args", ())
    args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    if isinstance(model, torch.nn.Module):
        model.eval()
    return (
        model,
        args,
        dict(seen.get("kwargs") or {}),
        seen.get("dynamic_shapes"),
        seen.get("custom_translation_table"),
    )


def independent_check(
    factory: str, files: dict[str, str], opset: int | None, *, script: bool = False
) -> dict[str, Any]:
    """The bench's own real run of the original and of the rewritten code (two processes)."""
    with tempfile.TemporaryDirectory(prefix="deep-fixes-check-") as tmp:
        ref = str(Path(tmp) / "ref.pt")
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(
            json.dumps(
                {"factory": factory, "file": ref, "files": files, "opset": opset, "script": script}
            )
        )
        results = {}
        for mode in ("original", "rewritten"):
            proc = subprocess.run(
                [sys.executable, __file__, "--check", mode, str(spec_file)],
                capture_output=True,
                text=True,
                timeout=1200,
                cwd=str(HERE),
            )
            try:
                results[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
            except (json.JSONDecodeError, IndexError):
                return {"error": f"{mode}: {proc.stderr.strip()[-400:]}"}
    return results["rewritten"]


# --------------------------------------------------------------------------- the run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--zoo-only", action="store_true")
    ap.add_argument("--reports-only", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument(
        "--rescore",
        default="",
        help="summarise --json files again (comma-separated: merged, a later run's targets "
        "replacing an earlier's; no torch)",
    )
    ap.add_argument("--check", nargs=2, help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.rescore:
        return rescore([Path(p) for p in ns.rescore.split(",") if p])
    if ns.check:
        mode, spec_path = ns.check
        spec = json.loads(Path(spec_path).read_text())
        out = check_original(spec) if mode == "original" else check_rewritten(spec)
        print(json.dumps(out, default=str))
        return 0

    from onnxlint.deep import fixes
    from onnxlint.deep.analyzer import DeepAnalyzer
    from onnxlint.source.fixes import apply_edits, parses

    only = {x for x in ns.only.split(",") if x}
    targets = ([] if ns.reports_only else zoo_targets(only)) + (
        [] if ns.zoo_only else report_targets(only)
    )
    analyzer = DeepAnalyzer()
    analyzer.start()
    findings: list[dict[str, Any]] = []
    candidates: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    analysis_s = proof_s = 0.0
    try:
        for source, t in targets:
            t1 = time.perf_counter()
            res = analyzer.analyze(t, use_cache=False)
            analysis_s += time.perf_counter() - t1
            deep = [v for v in res.violations if v.source == "deep"]
            if not deep:
                print(f"{source}:{t.name:28} {res.outcome[:60]}: no deep finding", flush=True)
                continue
            report = fixes.prove_fixes(analyzer, t, res, library=True)
            proof_s += report.seconds
            seen: set[tuple[str, str, int]] = set()
            for v in deep:
                key = (v.code, v.path, v.line)
                if key in seen:
                    continue
                seen.add(key)
                proofs = [
                    p
                    for p in report.proofs
                    if (p.violation.code, p.violation.path, p.violation.line) == key
                ]
                kept = next((p for p in proofs if p.fix is not None), None)
                at_call = bool(
                    t.script is not None
                    and os.path.realpath(v.path) == os.path.realpath(str(t.script))
                    and v.line == t.script_line
                )
                row: dict[str, Any] = {
                    "source": source,
                    "target": t.name,
                    "code": v.code,
                    "file": v.path,
                    "line": v.line,
                    "library": fixes.in_library(v.path),
                    "answerable": v.code not in fixes.NOT_FIXED,
                    "export_call": at_call,
                    "model_code": v.code not in fixes.NOT_FIXED
                    and v.code not in EXAMPLE_CODES
                    and not at_call,
                    "kinds": [p.candidate.kind for p in proofs],
                    "proven": kept is not None,
                    "proven_kind": kept.candidate.kind if kept else "",
                    "title": kept.title if kept else "",
                    "check": None,
                }
                if kept is not None and kept.fix is not None:
                    files = _applied(v.path, kept.fix, apply_edits)
                    applied = bool(files) and all(parses(text) for text in files.values())
                    row["applied"] = applied
                    if applied and t.script is not None:
                        row["check"] = independent_check(
                            f"script:{t.script}", files, t.opset, script=True
                        )
                    elif applied and t.factory:
                        row["check"] = independent_check(t.factory, files, t.opset)
                findings.append(row)
                for p in proofs:
                    candidates.append(
                        {
                            "target": t.name,
                            "code": v.code,
                            "line": v.line,
                            "library": row["library"],
                            "kind": p.candidate.kind,
                            "title": p.candidate.title,
                            "proven": p.proven,
                            "kept": p.fix is not None,
                            "stage": p.stage,
                            "why": p.why,
                            "seconds": round(p.seconds, 1),
                            "check": row["check"] if p is kept else None,
                        }
                    )
                mark = f"PROVEN {kept.candidate.kind}" if kept else "no fix"
                extra = ""
                if row["check"] is not None:
                    extra = "  bench: " + _verdict(row["check"])
                lib = " (library)" if row["library"] else ""
                print(
                    f"{source}:{t.name:28} {v.code} {Path(v.path).name}:{v.line}{lib}: "
                    f"{mark}{extra}"
                    + "".join(
                        f"\n{'':8}{p.candidate.kind}: {p.stage}: {p.why[:150]} ({p.seconds:.1f} s)"
                        for p in proofs
                        if not p.proven
                    ),
                    flush=True,
                )
            if report.reference_error:
                print(f"{'':8}reference run: {report.reference_error[:150]}", flush=True)
    finally:
        analyzer.shutdown()
    total = time.perf_counter() - t0
    summary = summarize(findings, candidates)
    summary.update(
        {"analysis_s": round(analysis_s), "proof_s": round(proof_s), "total_s": round(total)}
    )
    print_summary(summary)
    if ns.json:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
        Path(ns.json).write_text(
            json.dumps(
                {
                    "commit": commit,
                    "date": time.strftime("%Y-%m-%d"),
                    "summary": summary,
                    "findings": findings,
                    "candidates": candidates,
                },
                indent=1,
                default=str,
            )
        )
    return 0


def _merged(paths: list[Path]) -> dict[str, Any]:
    """Several saved runs as one: a later run's targets replace the earlier runs' (the zoo,
    then a re-run of a few models with --only, then the users' reports)."""
    runs = [json.loads(p.read_text()) for p in paths]
    if len(runs) == 1:
        return runs[0]
    findings: list[dict[str, Any]] = []
    candidates: list[dict[str, Any]] = []
    for run in runs:
        again = {f["target"] for f in run["findings"]} | {c["target"] for c in run["candidates"]}
        findings = [f for f in findings if f["target"] not in again] + run["findings"]
        candidates = [c for c in candidates if c["target"] not in again] + run["candidates"]
    summary = {
        k: sum(r["summary"].get(k, 0) for r in runs) for k in ("analysis_s", "proof_s", "total_s")
    }
    return {
        "commit": ", ".join(str(r.get("commit") or "?") for r in runs),
        "date": ", ".join(sorted({str(r.get("date")) for r in runs})),
        "summary": summary,
        "findings": findings,
        "candidates": candidates,
    }


def rescore(paths: list[Path]) -> int:
    """The summary of saved runs (several: merged, see `_merged`), with this script's reading
    of the findings (a run made before `export_call` was recorded: a script target is named
    `file:line` after its call). The times are the runs' sums (a re-run's included)."""
    from onnxlint.deep import fixes

    run = _merged(paths)
    for f in run["findings"]:
        if "export_call" not in f:
            name, _, line = str(f["target"]).rpartition(":")
            f["export_call"] = bool(
                line.isdigit() and int(line) == f["line"] and Path(f["file"]).name == name
            )
        f["model_code"] = (
            f["code"] not in fixes.NOT_FIXED
            and f["code"] not in EXAMPLE_CODES
            and not f["export_call"]
        )
    summary = summarize(run["findings"], run["candidates"])
    for k in ("analysis_s", "proof_s", "total_s"):
        summary[k] = run["summary"].get(k, 0)
    print(f"{', '.join(map(str, paths))}: commit {run.get('commit')}, {run.get('date')}")
    print_summary(summary)
    return 0


def _verdict(check: dict[str, Any]) -> str:
    if check.get("error"):
        return f"check failed: {check['error'][:150]}"
    eager = check.get("eager") or {}
    bad = {k: v for k, v in eager.items() if v != "ok"}
    parts = [f"eager {'ok' if not bad and eager else bad or 'nothing compared'}"]
    parts.append(f"export {check.get('export', '?')[:100]}")
    onnx = check.get("onnx") or {}
    if check.get("export") == "ok":
        bad = {k: v for k, v in onnx.items() if v != "ok"}
        parts.append(f"onnxruntime {'ok' if not bad and onnx else bad or 'nothing compared'}")
    return "; ".join(parts)


def _eager_ok(check: dict[str, Any] | None) -> bool:
    if not check or check.get("error"):
        return False
    eager = check.get("eager") or {}
    return bool(eager) and all(v == "ok" for v in eager.values())


def _onnx_ok(check: dict[str, Any] | None) -> bool:
    if not check or check.get("export") != "ok":
        return False
    onnx = check.get("onnx") or {}
    return bool(onnx) and all(v == "ok" for v in onnx.values())


def summarize(findings: list[dict[str, Any]], candidates: list[dict[str, Any]]) -> dict[str, Any]:
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    for c in candidates:
        k = kinds[c["kind"]]
        k["offered"] += 1
        k["proven"] += int(c["proven"])
        k["kept"] += int(c["kept"])
        if c["kept"]:
            k["seconds"] += c["seconds"]
            chk = c["check"]
            k["checked"] += int(bool(chk) and not chk.get("error"))
            k["exports"] += int(bool(chk) and chk.get("export") == "ok")
            k["outputs_match"] += int(
                _eager_ok(chk) and (_onnx_ok(chk) or chk.get("export") != "ok")
            )
    codes: dict[str, Counter[str]] = defaultdict(Counter)
    for f in findings:
        c = codes[f["code"]]
        c["findings"] += 1
        c["with_candidates"] += int(bool(f["kinds"]))
        c["proven"] += int(f["proven"])
        c["library"] += int(f["library"])
    model = [f for f in findings if f["model_code"]]
    user_model = [f for f in model if not f["library"]]
    wrong = [
        f
        for f in findings
        if f["proven"]
        and f["check"] is not None
        and not f["check"].get("error")
        and (
            not _eager_ok(f["check"])
            or (f["check"].get("export") == "ok" and not _onnx_ok(f["check"]))
            or ("exports;" in f["title"] and f["check"].get("export") != "ok")
        )
    ]
    return {
        "findings": len(findings),
        "answerable": sum(1 for f in findings if f["answerable"]),
        "model_code": len(model),
        "model_code_proven": sum(1 for f in model if f["proven"]),
        "user_model_code": len(user_model),
        "user_model_code_proven": sum(1 for f in user_model if f["proven"]),
        "example": sum(1 for f in findings if f["code"] in EXAMPLE_CODES),
        "example_proven": sum(1 for f in findings if f["code"] in EXAMPLE_CODES and f["proven"]),
        "proven": sum(1 for f in findings if f["proven"]),
        "checked": sum(1 for f in findings if f["check"] and not f["check"].get("error")),
        "wrong": [f"{f['target']} {f['code']}:{f['line']} {_verdict(f['check'])}" for f in wrong],
        "kinds": {k: dict(v) for k, v in sorted(kinds.items())},
        "codes": {k: dict(v) for k, v in sorted(codes.items())},
    }


def print_summary(s: dict[str, Any]) -> None:
    print("\nper rewrite kind (candidates):")
    print(
        f"  {'kind':16} {'offered':>7} {'proven':>6} {'kept':>4} {'exports':>7} "
        f"{'outputs match':>13} {'s per fix':>9}"
    )
    for kind, k in s["kinds"].items():
        per = k.get("seconds", 0) / k["kept"] if k.get("kept") else 0
        print(
            f"  {kind:16} {k.get('offered', 0):7} {k.get('proven', 0):6} {k.get('kept', 0):4} "
            f"{k.get('exports', 0):7} {k.get('outputs_match', 0):13} {per:9.1f}"
        )
    print("per finding code:")
    for code, c in s["codes"].items():
        print(
            f"  {code}: {c['findings']} findings ({c.get('library', 0)} in libraries), "
            f"{c.get('with_candidates', 0)} with a candidate, {c.get('proven', 0)} proven"
        )
    print(
        f"\n{s['findings']} deep findings ({s['answerable']} a rewrite could answer): "
        f"model code {s['model_code_proven']}/{s['model_code']} with a proven fix "
        f"(in the users' own files {s['user_model_code_proven']}/{s['user_model_code']}); "
        f"examples and export calls {s['example_proven']}/{s['example']}; "
        f"proven fixes checked by the bench {s['checked']}/{s['proven']}, "
        f"wrong {len(s['wrong'])}; analysis {s['analysis_s']} s, proofs {s['proof_s']} s, "
        f"whole run {s['total_s']} s"
    )
    for w in s["wrong"]:
        print(f"  WRONG: {w}")


if __name__ == "__main__":
    raise SystemExit(main())
