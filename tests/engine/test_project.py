"""Model classes imported from other modules of the project (onnxlint.project): found the
way `import` would find them, read as text and never run, and recorded as dependencies."""

from __future__ import annotations

from pathlib import Path

from onnxlint.core.config import Config
from onnxlint.engine import Engine
from onnxlint.source.fixes import fix_text

MODEL = """\
import torch.nn as nn


class Net(nn.Module):
    def forward(self, input_ids, attention_mask):
        return input_ids * attention_mask
"""

EXPORT = """\
import torch
{imp}

model = Net().eval()
ids = torch.zeros(2, 8, dtype=torch.long)
mask = torch.ones(2, 8)
torch.onnx.export(model, (ids, mask), "m.onnx", dynamic_shapes={{"ids": {{0: "b"}}}})
"""

AXES = """\
import torch
from model import Net

model = Net().eval()
x = torch.zeros(2, 8)
torch.onnx.export(
    model, (x, x), "m.onnx",
    input_names=["ids", "mask"],
    dynamic_axes={"ids": {0: "batch"}, "mask": {0: "batch"}},
)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _check(path: Path, config: Config | None = None) -> tuple[list[str], Engine]:
    engine = Engine()
    found = engine.check(str(path), path.read_text(), config or Config(root=path.parent))
    return [f"{v.code}:{v.message}" for v in found], engine


def test_a_class_imported_from_a_sibling_module_is_read(tmp_path: Path) -> None:
    _write(tmp_path, {"model.py": MODEL, "export.py": EXPORT.format(imp="from model import Net")})
    found, engine = _check(tmp_path / "export.py")
    assert any(
        "OLX305" in f and "'ids'" in f and "['input_ids', 'attention_mask']" in f for f in found
    ), found
    assert "of `Net` (in model.py)" in next(f for f in found if f.startswith("OLX305"))
    model = str(tmp_path / "model.py")
    assert engine.last_deps[model] is not None  # read: its content hash
    assert engine.last_deps[str(tmp_path / "model" / "__init__.py")] is None  # looked for first


def test_relative_import_re_export_and_a_base_class_in_a_third_module(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .net import Net\n",
            "pkg/base.py": MODEL.replace("class Net", "class Base"),
            "pkg/net.py": "from .base import Base\n\n\nclass Net(Base):\n    pass\n",
            "pkg/export.py": EXPORT.format(imp="from . import Net"),
        },
    )
    found, _ = _check(tmp_path / "pkg" / "export.py", Config(root=tmp_path))
    assert any("OLX305" in f and "['input_ids', 'attention_mask']" in f for f in found), found
    assert any("`Net` (in base.py)" in f for f in found), found  # where `forward` is


def test_src_layout_from_the_project_root(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "src/mylib/__init__.py": "",
            "src/mylib/models.py": MODEL,
            "scripts/export.py": EXPORT.format(imp="from mylib.models import Net"),
        },
    )
    found, _ = _check(tmp_path / "scripts" / "export.py", Config(root=tmp_path))
    assert any("OLX305" in f for f in found), found


def test_the_dynamic_axes_fix_is_keyed_by_the_imported_forward_parameters(tmp_path: Path) -> None:
    _write(tmp_path, {"model.py": MODEL, "export.py": AXES})
    path = tmp_path / "export.py"
    engine = Engine()
    config = Config(root=tmp_path)
    found = engine.check(str(path), AXES, config)
    result = fix_text(AXES, found, lambda t: engine.check(str(path), t, config), unsafe=True)
    assert 'dynamic_shapes={"input_ids": {0: "batch"}, "attention_mask": {0: "batch"}}' in (
        result.text
    ), result.text


def test_unresolvable_or_star_forward_falls_back_quietly(tmp_path: Path) -> None:
    star = MODEL.replace("self, input_ids, attention_mask", "self, *inputs")
    _write(tmp_path, {"model.py": star, "export.py": EXPORT.format(imp="from model import Net")})
    assert not [f for f in _check(tmp_path / "export.py")[0] if f.startswith("OLX305")]
    _write(tmp_path, {"export.py": EXPORT.format(imp="from transformers import Net")})
    assert not [f for f in _check(tmp_path / "export.py")[0] if f.startswith("OLX305")]
    # A tuple fix (input order) when the class cannot be read.
    _write(tmp_path, {"export.py": AXES.replace("from model", "from elsewhere")})
    engine = Engine()
    path = tmp_path / "export.py"
    text = path.read_text()
    found = engine.check(str(path), text, Config(root=tmp_path))
    fixed = fix_text(text, found, lambda t: engine.check(str(path), t, Config()), unsafe=True)
    assert 'dynamic_shapes=({0: "batch"}, {0: "batch"})' in fixed.text, fixed.text


def test_other_modules_are_read_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hostile = f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n" + MODEL
    _write(tmp_path, {"model.py": hostile, "export.py": EXPORT.format(imp="from model import Net")})
    found, _ = _check(tmp_path / "export.py")
    assert any("OLX305" in f for f in found)
    assert not marker.exists()


def test_a_changed_module_is_read_again(tmp_path: Path) -> None:
    _write(tmp_path, {"model.py": MODEL, "export.py": EXPORT.format(imp="from model import Net")})
    engine = Engine()
    path = tmp_path / "export.py"
    config = Config(root=tmp_path)

    def unknown_key() -> bool:
        found = engine.check(str(path), path.read_text(), config)
        return any("'ids' is not a `forward` parameter" in v.message for v in found)

    assert unknown_key()
    (tmp_path / "model.py").write_text(MODEL.replace("input_ids", "ids"))
    assert not unknown_key()


def test_the_reader_can_serve_unsaved_text(tmp_path: Path) -> None:
    _write(tmp_path, {"export.py": EXPORT.format(imp="from model import Net")})
    buffers = {str(tmp_path / "model.py"): MODEL}
    engine = Engine(read=buffers.get)
    path = tmp_path / "export.py"
    found = engine.check(str(path), path.read_text(), Config(root=tmp_path))
    assert any(v.code == "OLX305" for v in found)


def test_processes_of_one_run_share_module_summaries(tmp_path: Path, monkeypatch) -> None:
    """The CLI's pool workers summarise an imported module once between them: a second
    process reads the first one's summary (also of a module that does not parse)."""
    import onnxlint.project.index as index_module
    from onnxlint.project.summary import SummaryStore

    store = tmp_path / "shared"
    store.mkdir()
    _write(
        tmp_path,
        {
            "base.py": MODEL.replace("class Net", "class Base"),
            "broken.py": "class Broken(\n",
            "a.py": "from base import Base\nfrom broken import Broken\n\n\nclass A(Base):\n"
            "    def forward(self, x):\n        if x.sum() > 0:\n            return x\n"
            "        return -x\n\n\nclass B(Broken):\n    pass\n",
        },
    )
    config = Config(root=tmp_path)

    def check(engine: Engine) -> list[str]:
        engine.project.shared_summaries = SummaryStore(str(store))
        path = tmp_path / "a.py"
        return [v.code for v in engine.check(str(path), path.read_text(), config)]

    first = check(Engine())
    assert first == ["OLX101"]  # A is a module through base.py's Base
    assert len(list(store.iterdir())) == 2  # base.py's summary, and broken.py's "no parse"

    def fail(text: str, digest: str) -> None:
        raise AssertionError("summarised again")

    monkeypatch.setattr(index_module, "summarise", fail)
    assert check(Engine()) == first
    assert SummaryStore(str(tmp_path / "missing")).get("0" * 32) == (False, None)
