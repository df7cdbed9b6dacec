"""Fixes for deep findings, proven before they are offered.

For each deep finding that a rewrite kind answers (`onnxlint.deep.rewrites`), each
candidate rewrite is proven by the worker on a copy of the code (its files served by the
worker's overlay, the user's files untouched), in this order, stopping at the first step
that fails:

1. the analysis of the rewritten code: the finding is gone, no finding appears that the
   original did not have, and the export is not worse (it succeeds, or gets further);
2. real tensors (`worker/proof.py`): the rewritten model, given the original's random
   weights, computes the same outputs as the original in eager mode, at the example
   inputs, at a second size of each dynamic dim, and at the example negated (so that a
   condition on the data takes its other branch too);
3. when it exports: `torch.onnx.export` for real, and ONNX Runtime gives the same outputs as
   eager on the same inputs.

The first candidate that is proven becomes the finding's fix (unsafe: offered as a quick
fix, applied with `--fix --unsafe-fixes`), its title saying what was proven
("Rewrite with torch.where (exports; outputs match at 2 sizes)"). A candidate that is not
proven is not offered; why is kept in the report. Proofs cost an analysis and a real run
each, so they run only when fixes are asked for.
"""

from __future__ import annotations

import dataclasses
import os
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlint.core.violation import Edit, FileEdit, Fix, FixSafety, Violation
from onnxlint.deep import codes, rewrites
from onnxlint.deep.result import DeepResult
from onnxlint.deep.rewrites import Candidate, Site, Sources, edits_between, line_map
from onnxlint.deep.targets import Target
from onnxlint.deep.worker import wire

NOT_FIXED = frozenset(
    {"OLX801", "OLX812", "OLX813", "OLX814", "OLX815", "OLX817", "OLX819", "OLX820", "OLX821"}
)
"""Findings no rewrite answers: graph breaks (information), the analysis's own limits, memory."""

Progress = Callable[[str, "int | None"], None]


@dataclass
class Proof:
    """One candidate's proof: how far it got, and what it showed."""

    violation: Violation
    candidate: Candidate
    proven: bool = False
    stage: str = ""  # where it stopped: "analysis", "eager", "export", "onnx", "proven"
    why: str = ""
    title: str = ""
    before: str = ""  # the export's outcome, original and rewritten
    after: str = ""
    exports: bool = False
    eager_match: bool = False
    onnx_match: bool = False
    sizes: dict[str, list[int]] = field(default_factory=dict)
    onnx_sizes: dict[str, str] = field(default_factory=dict)
    """Dims the original runs at one size only, compared at a second one by the rewrite's
    own eager against its ONNX model."""
    seconds: float = 0.0
    fix: Fix | None = None
    found_after: list[Violation] = field(default_factory=list)
    """The findings of the rewritten code (its analysis, step 1)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.violation.code,
            "path": self.violation.path,
            "line": self.violation.line,
            "kind": self.candidate.kind,
            "candidate": self.candidate.title,
            "proven": self.proven,
            "stage": self.stage,
            "why": self.why,
            "title": self.title,
            "before": self.before,
            "after": self.after,
            "exports": self.exports,
            "eager_match": self.eager_match,
            "onnx_match": self.onnx_match,
            "sizes": self.sizes,
            "onnx_sizes": self.onnx_sizes,
            "seconds": round(self.seconds, 2),
            "edits": [e.to_json() for e in self.fix.edits] if self.fix else [],
            "files": [f.to_json() for f in self.fix.files] if self.fix else [],
        }


@dataclass
class FixReport:
    """The proofs of one target's findings."""

    target: Target
    proofs: list[Proof] = field(default_factory=list)
    reference_seconds: float = 0.0
    reference_error: str = ""
    seconds: float = 0.0
    together: Proof | None = None  # the fixes applied at once (a batch)
    before: list[Violation] = field(default_factory=list)  # the analysis's findings

    def after(self) -> list[Violation] | None:
        """The findings once every fix kept is applied (the proof's analysis of exactly that
        code), or None when no fix is kept."""
        kept = [p for p in self.proofs if p.fix is not None]
        if not kept:
            return None
        if len(kept) > 1:
            return list(self.together.found_after) if self.together is not None else None
        return list(kept[0].found_after)

    def fixed(self, violations: list[Violation]) -> list[Violation]:
        """`violations` with the proven fixes on the findings they fix."""
        by_finding = {
            (p.violation.code, p.violation.path, p.violation.line): p for p in self.proofs if p.fix
        }
        out = []
        for v in violations:
            p = by_finding.get((v.code, v.path, v.line))
            out.append(dataclasses.replace(v, fix=p.fix) if p is not None else v)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target.name,
            "reference_seconds": round(self.reference_seconds, 2),
            "reference_error": self.reference_error,
            "seconds": round(self.seconds, 2),
            "proofs": [p.to_json() for p in self.proofs],
        }


def in_library(path: str) -> bool:
    """A file of an installed package or of Python's own library: not the user's to edit."""
    real = os.path.realpath(path)
    if any(part in ("site-packages", "dist-packages") for part in Path(real).parts):
        return True
    stdlib = sysconfig.get_paths().get("stdlib")
    return bool(stdlib) and real.startswith(os.path.realpath(str(stdlib)) + os.sep)


def sites(
    target: Target, result: DeepResult, sources: Sources, *, library: bool = False
) -> list[Site]:
    """The deep findings of a result that a rewrite may answer, with their worker data.
    A finding in an installed package's file is left out (a fix there is not the user's to
    write) unless `library` (the bench measures the rewrites on library code too)."""
    raw = list((result.data or {}).get("findings") or [])
    out: list[Site] = []
    seen: set[tuple[str, str, int]] = set()
    for v in result.violations:
        if v.code in NOT_FIXED or v.source != "deep":
            continue
        if not library and in_library(v.path):
            continue
        key = (v.code, v.path, v.line)
        if key in seen:
            continue
        seen.add(key)
        f = next(
            (
                f
                for f in raw
                if codes.code_for_kind(str(f.get("kind"))) == v.code
                and f.get("file")
                and os.path.realpath(str(f["file"])) == os.path.realpath(v.path)
                and f.get("line") == v.line
            ),
            None,
        )
        if f is None:
            continue
        out.append(
            Site(
                violation=v,
                raw=f,
                data=result.data or {},
                sources=sources,
                target_script=str(target.script) if target.script else None,
                target_factory=target.factory,
                dynamic_shapes=target.dynamic_shapes,
            )
        )
    return out


_RANKS = (
    ("ok", 10),
    ("exports", 8),
    ("incomplete", 7),
    ("fails the ONNX checker", 6),
    ("fails at step 3/3", 5),
    ("fails at step 2/3", 4),
    ("fails at step 1/3", 3),
    ("fails at the script's own call", 2),
)


def outcome_rank(outcome: str) -> int:
    for prefix, rank in _RANKS:
        if outcome.startswith(prefix):
            return rank
    return 0


def exports(outcome: str) -> bool:
    return outcome_rank(outcome) >= 7


class Prover:
    """Proves the candidate fixes of one target's findings with one analyzer (its warm
    worker): one reference run of the original code, then each candidate in turn."""

    def __init__(
        self,
        analyzer: Any,
        target: Target,
        result: DeepResult,
        *,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
        max_candidates: int = 4,
        library: bool = False,
    ) -> None:
        self.analyzer = analyzer
        self.target = target
        self.result = result
        self.progress = progress or (lambda _phase, _pct: None)
        self.cancel = cancel or threading.Event()
        self.max_candidates = max_candidates
        self.library = library
        self.sources = Sources()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._reference: str | None = None
        self.report = FixReport(target, before=list(result.violations))

    def prove_all(self, *, together: bool = False) -> FixReport:
        """Prove every finding's candidates. `together` (a batch that applies them all at
        once): when several are proven, they are proven together too, and only the first
        is kept if together they are not."""
        start = time.perf_counter()
        try:
            proven: list[tuple[Site, Proof]] = []
            for site in sites(self.target, self.result, self.sources, library=self.library):
                if self.cancel.is_set():
                    break
                p = self.prove_site(site)
                if p is not None and p.fix is not None:
                    proven.append((site, p))
            if together and len(proven) > 1 and not self.cancel.is_set():
                self._together(proven)
        finally:
            if self._tmp is not None:
                self._tmp.cleanup()
            self.report.seconds = time.perf_counter() - start
        return self.report

    def prove_site(self, site: Site) -> Proof | None:
        """Prove the candidates of one finding in order; the first proven one is kept."""
        for cand in rewrites.candidates(site)[: self.max_candidates]:
            if self.cancel.is_set():
                return None
            proof = self.prove(site, cand)
            self.report.proofs.append(proof)
            if proof.proven:
                return proof
        return None

    def _together(self, proven: list[tuple[Site, Proof]]) -> None:
        """Prove the fixes of one target applied at once; if they are not proven together,
        keep the first alone (each was proven on its own)."""
        from onnxlint.source.fixes import apply_edits

        edits: dict[str, list[Edit]] = {}
        created: dict[str, str] = {}
        kept: list[tuple[Site, Proof]] = []
        for site, p in proven:
            assert p.fix is not None
            mine = {site.path: list(p.fix.edits)} if p.fix.edits else {}
            for f in p.fix.files:
                if not f.create:
                    mine.setdefault(f.path, []).extend(f.edits)
            new = {f.path: f.text for f in p.fix.files if f.create}
            if set(new) & set(created) or any(
                _touch(e, t) for path, es in mine.items() for e in es for t in edits.get(path, [])
            ):
                p.fix = None
                p.why = "proven alone; it overlaps the fix of another finding"
                continue
            for path, es in mine.items():
                edits.setdefault(path, []).extend(es)
            created.update(new)
            kept.append((site, p))
        if len(kept) < 2:
            return
        files = {
            path: apply_edits(self.sources.text(path) or "", found) for path, found in edits.items()
        }
        files.update(created)
        merged = Candidate("together", "the fixes together", files, frozenset(created))
        check = Proof(kept[0][0].violation, merged, before=self.result.outcome)
        t0 = time.perf_counter()
        self._prove_all_sites([s for s, _ in kept], merged, check)
        check.seconds = time.perf_counter() - t0
        self.report.together = check
        if not check.proven:
            for _s, p in kept[1:]:
                p.fix = None
                p.why = f"proven alone, but not together with the others: {check.why}"

    # ------------------------------------------------------------------ the steps

    def _reference_file(self) -> str | None:
        if self._reference is not None or self.report.reference_error:
            return self._reference
        self._tmp = tempfile.TemporaryDirectory(prefix="onnxlint-proof-")
        path = str(Path(self._tmp.name) / "reference.pt")
        t0 = time.perf_counter()
        res = self.analyzer.analyze(
            self.target,
            self.progress,
            self.cancel,
            use_cache=False,
            wire_extra={"real_run": {"mode": "reference", "file": path}},
        )
        self.report.reference_seconds = time.perf_counter() - t0
        proof = (res.data or {}).get("proof") or {}
        if res.status != wire.STATUS_OK or proof.get("error") or not os.path.exists(path):
            self.report.reference_error = str(
                proof.get("error") or res.detail or "the original model did not run for real"
            )
            return None
        self._reference = path
        return path

    def prove(self, site: Site, cand: Candidate) -> Proof:
        proof = Proof(site.violation, cand, before=self.result.outcome)
        t0 = time.perf_counter()
        try:
            self._prove(site, cand, proof)
        finally:
            proof.seconds = time.perf_counter() - t0
        return proof

    def _prove(self, site: Site, cand: Candidate, proof: Proof) -> None:
        self._prove_all_sites([site], cand, proof)
        if not proof.proven:
            return
        proof.title = f"{cand.title} ({self._what(proof)})"
        proof.fix = fix_of(self.sources, site.path, cand, proof.title)

    def _target_for(self, cand: Candidate) -> Target:
        """The target as the rewritten code has it: a script's export call moved with the
        lines the rewrite added or removed above it."""
        t = self.target
        if t.script is None or t.script_line is None:
            return t
        for path, text in cand.files.items():
            if path not in cand.created and _same(path, str(t.script)):
                line = line_map(self.sources.text(path) or "", text)(t.script_line)[0]
                return dataclasses.replace(t, script_line=line)
        return t

    def _prove_all_sites(self, targeted: list[Site], cand: Candidate, proof: Proof) -> None:
        overlay = dict(cand.files)
        target = self._target_for(cand)
        # 1. the analysis of the rewritten code
        proof.stage = "analysis"
        after = self.analyzer.analyze(
            target, self.progress, self.cancel, wire_extra={"overlay": overlay}
        )
        proof.after = after.outcome
        proof.found_after = list(after.violations)
        why = self._judge_analysis(targeted, cand, after)
        if why:
            proof.why = why
            return
        # 2. the same outputs in eager mode, then 3. under ONNX Runtime
        proof.stage = "eager"
        reference = self._reference_file()
        if reference is None:
            proof.why = f"the original model cannot be run for real: {self.report.reference_error}"
            return
        real = self.analyzer.analyze(
            target,
            self.progress,
            self.cancel,
            use_cache=False,
            wire_extra={"overlay": overlay, "real_run": {"mode": "candidate", "file": reference}},
        )
        report = (real.data or {}).get("proof") or {}
        if real.status != wire.STATUS_OK or report.get("error") or "eager" not in report:
            proof.why = str(report.get("error") or real.detail or "the rewritten model did not run")
            return
        proof.sizes = {k: list(v) for k, v in (report.get("sizes") or {}).items()}
        proof.onnx_sizes = dict(report.get("onnx_sizes") or {})
        bad = [r for r in report["eager"] if r.get("status") != "ok" and not r.get("skipped")]
        compared = [r for r in report["eager"] if not r.get("skipped")]
        if bad or not compared:
            r = bad[0] if bad else {"case": "every input", "status": "nothing compared"}
            proof.why = (
                f"the outputs differ from the original's in eager mode on {r['case']}: "
                f"{r['status']}"
            )
            return
        proof.eager_match = True
        proof.stage = "export"
        proof.exports = report.get("export") == "ok"
        if exports(after.outcome) and not proof.exports:
            proof.why = str(report.get("export") or "torch.onnx.export failed")
            return
        if proof.exports:
            proof.stage = "onnx"
            rows = [r for r in report.get("onnx") or [] if not r.get("skipped")]
            bad = [r for r in rows if r.get("status") != "ok"]
            if bad or not rows:
                r = bad[0] if bad else {"case": "every input", "status": "nothing compared"}
                proof.why = (
                    f"onnxruntime and eager PyTorch disagree on the rewritten model's "
                    f"{r['case']}: {r['status']}"
                )
                return
            proof.onnx_match = True
        elif outcome_rank(after.outcome) <= outcome_rank(self.result.outcome):
            proof.why = f"the export does not get further: {after.outcome}"
            return
        proof.stage = "proven"
        proof.proven = True

    def _what(self, proof: Proof) -> str:
        sizes = [len(v) for v in proof.sizes.values()]
        if sizes:
            where = f"at {min(sizes)} sizes" if min(sizes) > 1 else "at the example size"
        else:
            where = "on the example inputs"
        if proof.exports and proof.onnx_sizes and proof.onnx_match:
            return f"exports; outputs match {where}; the ONNX model matches eager at 2 sizes"
        if proof.exports:
            return f"exports; outputs match {where}"
        return f"gets further: {proof.after}; eager outputs match {where}"

    def _judge_analysis(self, targeted: list[Site], cand: Candidate, after: DeepResult) -> str:
        """Why the analysis of the rewritten code does not prove the rewrite ("" if it does)."""
        if after.status != wire.STATUS_OK:
            return (
                f"the analysis of the rewritten code did not finish: {after.detail or after.status}"
            )
        maps = {
            os.path.realpath(p): line_map(self.sources.text(p) or "", text)
            for p, text in cand.files.items()
            if p not in cand.created
        }

        def mapped(path: str, line: int) -> tuple[int, int]:
            m = maps.get(os.path.realpath(path))
            return m(line) if m is not None else (line, line)

        for site in targeted:
            v0 = site.violation
            lo, hi = mapped(v0.path, v0.line)
            for v in after.violations:
                if v.code == v0.code and _same(v.path, v0.path) and lo <= v.line <= hi:
                    return f"the finding is still there: {v.code} {v.message}"
        before = self.result.violations
        for v in after.violations:
            if v.code in ("OLX801", "OLX817", "OLX819", "OLX821"):
                continue
            known = any(
                b.code == v.code
                and _same(b.path, v.path)
                and (lambda r: r[0] <= v.line <= r[1])(mapped(b.path, b.line))
                for b in before
            )
            if not known:
                return f"a new finding appears: {v.code} at line {v.line}: {v.message}"
        if outcome_rank(after.outcome) < outcome_rank(self.result.outcome):
            return f"the export gets less far: {after.outcome}"
        return ""


def fix_of(sources: Sources, path: str, cand: Candidate, title: str) -> Fix | None:
    """The fix that makes `cand`'s files: edits of the finding's file (`path`), edits of the
    other files it changes, and the files it adds (None when nothing changes)."""
    own: tuple[Edit, ...] = ()
    others: list[FileEdit] = []
    for p, text in cand.files.items():
        if p in cand.created:
            if os.path.exists(p):
                return None  # never overwrite a file of the user's
            others.append(FileEdit(p, create=True, text=text))
            continue
        edits = edits_between(sources.text(p) or "", text)
        if _same(p, path):
            own = edits
        elif edits:
            if p.lower().endswith(".ipynb"):
                return None  # a notebook's edits are in its cells: only for its own findings
            others.append(FileEdit(p, edits))
    fix = Fix(title, own, FixSafety.UNSAFE, tuple(others))
    return fix if fix.changes else None


def _touch(a: Edit, b: Edit) -> bool:
    """Two whole-line edits that overlap or touch."""
    return not (a.span.end_line < b.span.line or b.span.end_line < a.span.line)


def _same(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def prove_fixes(
    analyzer: Any,
    target: Target,
    result: DeepResult,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    together: bool = False,
    library: bool = False,
) -> FixReport:
    """Prove the candidate fixes of `result`'s findings; see the module docstring."""
    prover = Prover(analyzer, target, result, progress=progress, cancel=cancel, library=library)
    return prover.prove_all(together=together)
