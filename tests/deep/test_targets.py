"""Target validation and discovery (no torch needed)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from onnxlint.deep.analyzer import DeepAnalyzer
from onnxlint.deep.targets import (
    TargetError,
    discover_targets,
    factory_location,
    load_targets,
    marked_functions,
)


def test_a_full_table_is_validated(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[[tool.onnxlint.targets]]\nname = "net"\n')
    [t] = load_targets(
        [
            {
                "name": "net",
                "factory": "pkg.models:make",
                "dynamic_shapes": {"x": {"0": "batch", "1": "seq"}, "mask": None},
                "exporter": {"opset": 18, "translation_table": "pkg.ops:TABLE"},
                "verify": True,
                "timeout": 60,
                "memory_limit_mb": 2048,
            }
        ],
        tmp_path,
    )
    assert t.dynamic_shapes == {"x": {0: "batch", 1: "seq"}, "mask": None}
    assert (t.opset, t.translation_table, t.verify, t.timeout) == (18, "pkg.ops:TABLE", True, 60.0)
    assert (t.decl_path, t.decl_line) == (tmp_path / "pyproject.toml", 2)
    assert t.to_wire()["dynamic_shapes"] == {"x": {"0": "batch", "1": "seq"}, "mask": None}


def test_positional_dynamic_shapes(tmp_path: Path) -> None:
    [t] = load_targets(
        [{"name": "n", "factory": "m:f", "dynamic_shapes": [{"0": "batch"}, {}]}], tmp_path
    )
    assert t.dynamic_shapes == ({0: "batch"}, None)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"factory": "m:f"}, "targets[0]: `name` is required"),
        (
            {"name": "n", "factory": "m.f"},
            "target 'n': `factory` must be \"package.module:function\"",
        ),
        ({"name": "n", "factory": "m:f", "opset": 18}, "target 'n': unknown key 'opset'"),
        (
            {"name": "n", "factory": "m:f", "exporter": {"opset": "18"}},
            "`exporter.opset` must be an integer",
        ),
        (
            {"name": "n", "factory": "m:f", "exporter": {"optimize": True}},
            "unknown key `exporter.optimize`",
        ),
        ({"name": "n", "factory": "m:f", "timeout": -1}, "`timeout` must be a positive number"),
        ({"name": "n", "factory": "m:f", "verify": "yes"}, "`verify` must be true or false"),
        ({"name": "n", "factory": "m:f", "dynamic_shapes": {"x": {"a": "b"}}}, "dim index 'a'"),
        (
            {"name": "n", "factory": "m:f", "dynamic_shapes": {"x": {"0": "1x"}}},
            "`dynamic_shapes.x.0` must be a dim name",
        ),
        (
            {"name": "n", "factory": "m:f", "dynamic_shapes": "batch"},
            "`dynamic_shapes` must be a table",
        ),
        (
            {"name": "n", "factory": "m:f", "memory_limit_mb": 1},
            "`memory_limit_mb` must be an integer >= 64",
        ),
    ],
)
def test_each_error_names_the_target_and_the_key(tmp_path: Path, entry: dict, message: str) -> None:
    with pytest.raises(TargetError) as info:
        load_targets([entry], tmp_path)
    assert message in str(info.value)


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="used by two targets"):
        load_targets([{"name": "a", "factory": "m:f"}, {"name": "a", "factory": "m:g"}], tmp_path)


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_marker_discovery(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/__init__.py", "")
    path = _write(
        tmp_path,
        "pkg/models.py",
        """
        import torch

        class Net(torch.nn.Module):
            pass

        # onnxlint: target
        def make_net():
            return Net(), (torch.randn(2, 3),)

        def make_other():  # onnxlint: target verify
            return Net(), (torch.randn(2, 3),)

        def not_marked():
            return None

        class Holder:
            # onnxlint: target
            def method(self):
                pass
        """,
    )
    assert [(n, line) for n, line, _ in marked_functions(path.read_text())] == [
        ("make_net", 7),
        ("make_other", 10),
    ]
    found = discover_targets([tmp_path], tmp_path)
    assert [(t.name, t.verify, t.decl_line, t.origin) for t in found] == [
        ("pkg.models:make_net", False, 7, "marker"),
        ("pkg.models:make_other", True, 10, "marker"),
    ]
    assert factory_location(found[0]) == (path.resolve(), 7)


def test_targets_in_file_finds_the_factory_and_the_model_class(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/__init__.py", "")
    path = _write(
        tmp_path,
        "pkg/models.py",
        """
        import torch

        class Net(torch.nn.Module):
            pass

        def make():
            return Net(), (torch.randn(2, 3),)
        """,
    )
    [t] = load_targets([{"name": "net", "factory": "pkg.models:make"}], tmp_path)
    analyzer = DeepAnalyzer(targets=[t])  # no worker is started for lookups
    assert analyzer.targets_in_file(path) == [(t, 3), (t, 6)]
    assert analyzer.targets_in_file(tmp_path / "pkg" / "__init__.py") == []
    assert analyzer.worker_pid is None


def test_targets_in_file_follows_classes_imported_into_the_factory_module(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/__init__.py", "")
    det = _write(
        tmp_path, "pkg/detector.py", "import torch\n\n\nclass Head(torch.nn.Module):\n    pass\n"
    )
    cls = _write(
        tmp_path, "pkg/nets/classifier.py", "import torch\nclass Clf(torch.nn.Module):\n    pass\n"
    )
    _write(tmp_path, "pkg/nets/__init__.py", "")
    _write(
        tmp_path,
        "pkg/targets.py",
        """
        import torch
        from .detector import Head
        import pkg.nets.classifier as clf

        def detector():
            return Head().eval(), (torch.randn(2, 3),)

        def classifier():
            return clf.Clf(), (torch.randn(2, 3),)
        """,
    )
    targets = load_targets(
        [
            {"name": "det", "factory": "pkg.targets:detector"},
            {"name": "clf", "factory": "pkg.targets:classifier"},
        ],
        tmp_path,
    )
    analyzer = DeepAnalyzer(targets=targets)
    assert [(t.name, line) for t, line in analyzer.targets_in_file(det)] == [("det", 4)]
    assert [(t.name, line) for t, line in analyzer.targets_in_file(cls)] == [("clf", 2)]


def test_a_marked_factory_that_is_also_declared_is_one_target(tmp_path: Path) -> None:
    from onnxlint.deep.run import collect_targets

    _write(tmp_path, "pkg/__init__.py", "")
    _write(
        tmp_path,
        "pkg/models.py",
        """
        import torch

        # onnxlint: target
        def make():
            return torch.nn.Linear(2, 2), (torch.randn(1, 2),)
        """,
    )
    targets, problems = collect_targets(
        [{"name": "lin", "factory": "pkg.models:make"}], tmp_path, [tmp_path]
    )
    assert [(t.name, t.origin) for t in targets] == [("lin", "pyproject")] and not problems
