"""The generated-code cache (onnxlint.core.codecache): hits give classes that behave the same."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import attr
import pytest

from onnxlint.core.codecache import cache_file, generated_code_cache


def _define() -> tuple[object, object]:
    @attr.define
    class Point:
        x: int
        label: str = "p"

    @dataclasses.dataclass(frozen=True)
    class Pair:
        a: int
        b: int = 2

    return Point(1), Pair(1)


def test_second_use_is_served_from_the_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("ONNXLINT_NO_CODE_CACHE", raising=False)
    with generated_code_cache() as first:
        p1, q1 = _define()
    assert first is not None and first.missed > 0
    assert cache_file().is_file() and str(cache_file()).startswith(str(tmp_path))
    with generated_code_cache() as second:
        p2, q2 = _define()
    assert second is not None and second.missed == 0 and second.used
    assert repr(p1) == repr(p2) == "Point(x=1, label='p')"
    assert repr(q1) == repr(q2) and repr(q2).endswith("Pair(a=1, b=2)")
    assert p2 == type(p2)(1) and q2 == type(q2)(1, 2)  # type: ignore[call-arg,operator]
    # Outside the block attrs and dataclasses are back to the builtins.
    import attr._make as make

    assert "compile" not in vars(make) and "exec" not in vars(dataclasses)


def test_a_corrupt_file_is_ignored_and_replaced(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("ONNXLINT_NO_CODE_CACHE", raising=False)
    cache_file().parent.mkdir(parents=True)
    cache_file().write_bytes(b"not marshal data")
    with generated_code_cache() as stats:
        point, _ = _define()
    assert stats is not None and stats.missed > 0
    assert repr(point) == "Point(x=1, label='p')"
    with generated_code_cache() as again:
        _define()
    assert again is not None and again.missed == 0


def test_switched_off_by_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("ONNXLINT_NO_CODE_CACHE", "1")
    with generated_code_cache() as stats:
        _define()
    assert stats is None and not cache_file().exists()


@pytest.mark.parametrize("cached", [False, True])
def test_the_server_and_cli_import_with_and_without_it(tmp_path: Path, cached: bool) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    if not cached:
        env["ONNXLINT_NO_CODE_CACHE"] = "1"
    code = (
        "from onnxlint.core.codecache import generated_code_cache\n"
        "with generated_code_cache():\n"
        "    from onnxlint.server import create_server\n"
        "    s = create_server(); s.load_engine()\n"
        "src = 'import torch\\ntorch.onnx.export(m, (x,), dynamo=False)\\n'\n"
        "print(len(s.engine.check('m.py', src)))\n"
    )
    for _ in range(2):  # the second run reads the file the first one wrote
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert int(out.stdout) >= 1
    written = list((tmp_path / "onnxlint").glob("generated-code-*.marshal"))
    assert bool(written) is cached
