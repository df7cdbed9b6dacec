"""Each fault for real: segfault, os._exit, infinite loop, memory hog, cancel, a killed worker.

Every one must end that analysis with a clear finding and leave a worker that
analyses the next target normally.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from onnxlint.deep.targets import Target

from .conftest import line_of

pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]


def _t(project: Path, factory: str, **kw: object) -> Target:
    return Target(name=factory, factory=factory, root=project, **kw)  # type: ignore[arg-type]


def _still_works(analyzer, project: Path) -> None:
    res = analyzer.analyze(_t(project, "deepproj.models:clean"))
    assert res.status == "ok" and res.violations == []


def test_the_worker_is_warm_and_independent_of_onnxlint(analyzer) -> None:
    info = analyzer.info
    assert info["torch"].startswith("2.")
    assert info["imports_onnxlint"] is False
    assert info["warm_error"] is None
    assert info["nice"] == os.nice(0)  # the CLI's worker runs at our priority


def test_the_servers_worker_yields_the_cpu_to_the_editor(project: Path) -> None:
    """The language server starts its worker in the background: a lower priority and one
    core left free, so keystroke checks keep their latency during an analysis."""
    from onnxlint.deep.analyzer import DeepAnalyzer

    with DeepAnalyzer(background=True) as a:
        info = a.start()
        assert info["nice"] == min(os.nice(0) + 10, 19)
        assert info["torch_threads"] == max(1, (os.cpu_count() or 1) - 1)
        _still_works(a, project)


def test_segfault_is_a_finding_on_the_factory(project: Path, analyzer) -> None:
    pid = analyzer.worker_pid
    res = analyzer.analyze(_t(project, "deepproj.faults:segfault"))
    assert res.status == "crashed"
    assert [v.code for v in res.violations] == ["OLX813"]
    v = res.violations[0]
    assert "SIGSEGV" in v.message
    faults = project / "deepproj" / "faults.py"
    assert (v.path, v.line) == (str(faults), line_of(faults, "def segfault"))
    assert analyzer.worker_pid == pid  # only the forked child died
    _still_works(analyzer, project)


def test_os_exit_is_a_finding(project: Path, analyzer) -> None:
    res = analyzer.analyze(_t(project, "deepproj.faults:hard_exit"))
    assert res.status == "crashed"
    assert "exited with code 3" in res.violations[0].message
    _still_works(analyzer, project)


def test_infinite_loop_times_out(project: Path, analyzer) -> None:
    start = time.monotonic()
    res = analyzer.analyze(_t(project, "deepproj.faults:spin", timeout=2.0))
    assert time.monotonic() - start < 15
    assert res.status == "timeout"
    assert [v.code for v in res.violations] == ["OLX814"]
    assert "longer than 2 s" in res.violations[0].message
    _still_works(analyzer, project)


def test_memory_hog_is_stopped_at_the_limit(project: Path, analyzer) -> None:
    res = analyzer.analyze(_t(project, "deepproj.faults:hog", memory_limit_mb=900))
    assert res.status == "memory"
    assert [v.code for v in res.violations] == ["OLX815"]
    assert "memory" in res.violations[0].message
    _still_works(analyzer, project)


def test_cancel_stops_a_running_analysis(project: Path, analyzer) -> None:
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    start = time.monotonic()
    res = analyzer.analyze(_t(project, "deepproj.faults:spin", timeout=60.0), cancel=cancel)
    assert res.status == "cancelled"
    assert res.violations == []
    assert time.monotonic() - start < 10
    _still_works(analyzer, project)


def test_a_killed_worker_is_replaced(project: Path, analyzer) -> None:
    pid = analyzer.worker_pid
    assert pid is not None
    timer = threading.Timer(1.0, lambda: os.kill(pid, signal.SIGKILL))
    timer.start()
    res = analyzer.analyze(_t(project, "deepproj.faults:spin", timeout=60.0))
    timer.join()
    assert res.status == "crashed"
    assert [v.code for v in res.violations] == ["OLX813"]
    assert "worker process died" in res.violations[0].message
    _still_works(analyzer, project)  # a fresh worker, started on demand
    assert analyzer.worker_pid not in (None, pid)


def test_an_interpreter_without_torch_is_one_finding(project: Path) -> None:
    from onnxlint.deep.analyzer import DeepAnalyzer

    with DeepAnalyzer("/nonexistent/python3") as a:
        res = a.analyze(_t(project, "deepproj.models:clean"))
    assert res.status == "error"
    assert [v.code for v in res.violations] == ["OLX813"]
    assert "cannot run '/nonexistent/python3'" in res.violations[0].message


def test_shutdown_during_an_analysis_does_not_wait_for_it(project: Path) -> None:
    from onnxlint.deep.analyzer import DeepAnalyzer

    a = DeepAnalyzer()
    a.start()
    results: list[object] = []
    runner = threading.Thread(
        target=lambda: results.append(a.analyze(_t(project, "deepproj.faults:spin", timeout=120)))
    )
    runner.start()
    time.sleep(1.5)
    start = time.monotonic()
    a.shutdown()
    runner.join(timeout=20)
    assert not runner.is_alive()
    assert time.monotonic() - start < 10
    assert [r.status for r in results] == ["cancelled"]  # type: ignore[attr-defined]


def test_an_onnxlint_error_while_loading_is_a_finding_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In process (no worker): the load phase's own error must come back as the phase's
    # finding; it used to crash the worker on an unbound result.
    pytest.importorskip("torch")
    from onnxlint.deep.worker import analysis, script

    def broken(rec: object) -> bool:
        raise RuntimeError("a bug in onnxlint's script run")

    monkeypatch.setattr(script, "run", broken)
    target = {"name": "export.py:3", "script": str(tmp_path / "export.py"), "root": str(tmp_path)}
    result = analysis.run(target, lambda *a: None)
    assert result["first_failed_phase"] == "load", result
    messages = [f["message"] for f in result["findings"]]
    assert any("onnxlint's load phase failed: RuntimeError" in m for m in messages), messages
