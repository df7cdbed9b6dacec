"""The engine's own guarantees: block splitting, reuse after edits, positions, robustness."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from onnxlint.engine import Engine
from onnxlint.semantic.index import index_block
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.blocks import ParseCache, split_blocks

SOURCE = '''\
"""Module docstring
with a line at column 0
class NotAClass:
"""
import torch
import torch.onnx as tox
from torch import nn


@decorator(
    arg=1,
)
class Net(nn.Module):
    def forward(self, x):
        return helper(x)


class Deeper(Net):
    pass


def helper(x):
    return x * 2


DATA = [
1,
2]

if True:
    pass
else:
    pass

try:
    import numpy
except ImportError:
    numpy = None

tox.export(Net(), (torch.zeros(1),), "m.onnx", dynamo=False)
'''


def test_blocks_cover_the_file_exactly_and_all_parse() -> None:
    blocks = split_blocks(SOURCE, ParseCache())
    assert "".join(b.text for b in blocks) == SOURCE
    assert all(b.module is not None for b in blocks)
    starts = [b.text.lstrip("\n").split("\n", 1)[0] for b in blocks]
    assert '"""Module docstring' in starts[0]
    assert not any(s.startswith("class NotAClass") for s in starts)
    assert any(s.startswith("@decorator(") for s in starts)
    assert any(s.startswith("DATA = [") for s in starts)
    assert not any(s.startswith(("else", "except", "1,")) for s in starts)
    # Line numbers add up.
    line = 1
    for b in blocks:
        assert b.start_line == line
        line += b.text.count("\n")


def test_semantic_model_resolves_imports_modules_and_reachability() -> None:
    blocks = split_blocks(SOURCE, ParseCache())
    indexes = [index_block(b.module) for b in blocks if b.module]
    model = SemanticModel.build(indexes, [])
    assert model.imports["tox"] == "torch.onnx"
    assert model.resolve("nn.Module") == "torch.nn.Module"
    assert model.classes["Net"].is_module and model.classes["Deeper"].is_module
    assert (None, "helper") in model.reachable and ("Net", "forward") in model.reachable
    assert [e.kind.value for e in model.export_calls] == ["onnx-torchscript"]


def test_finding_position_matches_whole_file_positions() -> None:
    engine = Engine()
    found = engine.check("m.py", SOURCE)
    v = next(v for v in found if v.code == "OLX401")
    module = cst.parse_module(SOURCE)
    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)
    arg = next(
        n
        for n in positions
        if isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value == "dynamo"
    )
    rng = positions[arg]
    assert (v.span.line, v.span.column) == (rng.start.line, rng.start.column + 1)
    assert (v.span.end_line, v.span.end_column) == (rng.end.line, rng.end.column + 1)


def test_an_edit_reparses_and_rewalks_only_what_changed() -> None:
    engine = Engine()
    first = engine.check("m.py", SOURCE)
    edited = SOURCE.replace("return x * 2", "y = x * 3\n    return y")
    second = engine.check("m.py", edited)
    stats = engine.last_stats
    assert stats.blocks_from_cache >= stats.blocks - 3
    assert [v.code for v in first] == [v.code for v in second]
    # The export call moved one line down: its finding moved with it.
    line1 = next(v.line for v in first if v.code == "OLX401")
    line2 = next(v.line for v in second if v.code == "OLX401")
    assert line2 == line1 + 1


def test_results_after_edits_equal_a_fresh_check() -> None:
    warm = Engine()
    text = SOURCE
    for i in range(30):
        text = text.replace("pass\nelse:", f"x{i} = {i}\n    pass\nelse:", 1)
        warm.check("m.py", text)
    assert warm.check("m.py", text) == Engine().check("m.py", text)


def test_a_syntax_error_in_one_block_keeps_the_others_checked() -> None:
    broken = SOURCE.replace("def helper(x):", "def helper(x)")
    found = Engine().check("m.py", broken)
    codes = [v.code for v in found]
    assert "OLX000" in codes and "OLX401" in codes
    err = next(v for v in found if v.code == "OLX000")
    assert err.line == SOURCE.splitlines().index("def helper(x):") + 1


def test_a_failing_rule_drops_only_its_own_results(monkeypatch) -> None:
    from onnxlint.rules.exporter_api import olx401_legacy_torchscript_exporter as mod

    calls = []

    def boom(self, node):
        calls.append(node)
        raise RuntimeError("rule bug")

    engine = Engine()
    before = {v.code for v in engine.check("m.py", SOURCE)}
    monkeypatch.setattr(mod.LegacyTorchScriptExporter, "visit_Call", boom)
    engine = Engine()
    found = engine.check("m.py", SOURCE)
    assert {v.code for v in found} == before - {"OLX401"}
    assert any("OLX401" in e for e in engine.last_stats.rule_errors)
    assert len(calls) == 1  # disabled for the rest of the file after its first failure


def test_prefilter_skips_files_without_torch_words() -> None:
    engine = Engine()
    assert engine.check("m.py", "x = 1\n" * 1000) == []
    assert engine.last_stats.skipped_by_prefilter


def test_deeply_nested_code_does_not_crash() -> None:
    text = "import torch\nx = " + "(" * 400 + "1" + ")" * 400 + "\n"
    found = Engine().check("m.py", text)
    assert all(v.code == "OLX000" for v in found)


def test_block_offsets_agree_with_position_provider_on_every_node() -> None:
    from onnxlint.source.blocks import ParseCache, split_blocks
    from onnxlint.source.positions import node_span

    tail = "x = (1 +\r 2)  # comment\n\nclass A:\n\n    y: int = 3\n"
    text = SOURCE.replace("\n", "\r\n", 3) + tail
    whole = cst.parse_module(text)
    assert whole.code == text
    for block in split_blocks(text, ParseCache()):
        assert block.module is not None
        expected = MetadataWrapper(block.module, unsafe_skip_copy=True).resolve(PositionProvider)
        assert expected
        for node, rng in expected.items():
            span = node_span(block, node)
            assert span is not None
            shift = block.start_line - 1
            assert (span.line - shift, span.column - 1) == (rng.start.line, rng.start.column)
            assert (span.end_line - shift, span.end_column - 1) == (rng.end.line, rng.end.column)


def test_a_long_bracket_or_string_at_column_0_is_not_a_syntax_error() -> None:
    from onnxlint.source.blocks import ParseCache, split_blocks

    rows = "".join(f"{i},\n" for i in range(20))
    lines = "".join(f"line {i}\n" for i in range(20))
    text = (
        "import torch\n"
        f"TABLE = [\n{rows}]\n"
        'QUOTE = \'"""\'  # a one-line string holding triple quotes\n'
        f'DOC = """\n{lines}"""\n'
        "@torch.no_grad()\n\n@staticmethod\ndef f(x):\n    return x\n"
    )
    assert not [v for v in Engine().check("m.py", text) if v.code == "OLX000"]
    blocks = split_blocks(text, ParseCache())
    assert all(b.module is not None for b in blocks)
    assert "".join(b.text for b in blocks) == text
    assert blocks[-1].text.startswith("@torch.no_grad()")
    # A real error is still one.
    broken = text.replace("def f(x):", "def f(x:")
    assert [v.line for v in Engine().check("m.py", broken) if v.code == "OLX000"]


def test_parsing_without_node_validation_gives_the_validated_tree() -> None:
    from pathlib import Path

    from onnxlint.source.fast_nodes import unvalidated_nodes

    root = Path(__file__).resolve().parents[2]
    sources = [p.read_text(encoding="utf-8") for p in sorted(root.glob("examples/**/*.py"))]
    sources += [p.read_text(encoding="utf-8") for p in sorted(root.glob("onnxlint/*/*.py"))]
    assert len(sources) > 10
    for text in sources:
        validated = cst.parse_module(text)
        with unvalidated_nodes():
            fast = cst.parse_module(text)
        assert fast.code == text
        assert fast.deep_equals(validated)

    # Nodes built by hand inside the block take the same defaults (default factories too).
    def built() -> cst.CSTNode:
        return cst.Call(cst.Attribute(cst.Name("a"), cst.Name("b")), [cst.Arg(cst.Integer("1"))])

    with unvalidated_nodes():
        fast_node = built()
    assert fast_node.deep_equals(built())
    # Outside the block, hand-built nodes are validated again.
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_parse_cache_bounds_entries_and_characters_and_keeps_pinned_texts() -> None:
    cache = ParseCache(max_entries=3, max_chars=10)
    for text in ("a = 1\n", "b = 2\n", "c = 3\n"):  # 6 characters each
        split_blocks(text, cache)
    # 18 characters > 10: the oldest go until the bound holds.
    assert len(cache) == 1 and cache.chars == 6 and cache.get("c = 3\n") is not None
    cache.pinned = {"c = 3\n"}
    for text in ("d = 4\n", "e = 5\n"):
        split_blocks(text, cache)
    # The pinned entry outlives newer unpinned ones.
    assert cache.get("c = 3\n") is not None and cache.get("d = 4\n") is None
    cache.trim(0, 0)
    assert len(cache) == 1 and cache.chars == 6  # only the pinned one is left
    cache.clear()
    assert len(cache) == 0 and cache.chars == 0


def test_engine_reports_the_blocks_of_its_last_check() -> None:
    engine = Engine()
    engine.check("m.py", SOURCE)
    assert "".join(engine.last_block_texts) == SOURCE


def test_words_in_text_agrees_with_searching_every_word() -> None:
    from onnxlint.engine import words_in_text
    from onnxlint.rules import all_rules

    words = {w for r in all_rules() for w in r.requires}
    for text in (
        SOURCE,
        "torch.onnx.dynamo_export(m, x)",  # `dynamo_export` with `export` and `dynamo`
        "x.view(2, 12)  # no export words",
        "",
        "dynamic_axes=None; is_onnxrt_backend_supported()",
    ):
        assert words_in_text(text) == {w for w in words if w in text}


def test_a_cached_syntax_error_keeps_no_traceback() -> None:
    # A kept traceback would hold the parser's frames (and, through a cycle, the partial
    # parse) until a full garbage collection: memory would climb while the user types.
    cache = ParseCache()
    text = "def f(:\n    pass\n"
    blocks = split_blocks(text, cache)
    assert blocks[0].module is None and blocks[0].error is not None
    assert blocks[0].error.line == 1
    entry = cache.get(text)
    assert entry is not None
    err = entry[1]
    assert isinstance(err, cst.ParserSyntaxError)
    assert err.__traceback__ is None and err.__context__ is None


def test_a_helpers_return_kind_is_used_and_its_edit_rechecks_the_caller() -> None:
    """`heat = self._heat(x)`: the helper's return kind decides whether iterating over
    `heat` iterates over a tensor; editing the helper (another block) re-checks forward."""
    from onnxlint.core.config import parse_table
    from onnxlint.engine import Engine

    text = (
        "import torch\n\n\n"
        "def heat_of(x):\n    return torch.sigmoid(x)\n\n\n"
        "class Head(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        for hm in heat_of(x):\n"
        "            x = x + hm\n"
        "        return x\n"
    )
    cfg = parse_table({"select": ["OLX108"]}, None)
    engine = Engine()
    assert [v.line for v in engine.check("m.py", text, cfg)] == [10]
    as_list = text.replace("return torch.sigmoid(x)", "return [torch.sigmoid(x)]")
    assert engine.check("m.py", as_list, cfg) == []
    assert [v.line for v in engine.check("m.py", text, cfg)] == [10]


def test_removing_the_import_that_made_a_class_a_module_is_seen_by_its_unchanged_block() -> None:
    """The class block is unchanged (its cached index is reused), but without `nn` it is
    no longer a torch module: its forward is not judged any more."""
    from onnxlint.core.config import parse_table
    from onnxlint.engine import Engine

    text = (
        "import torch\nfrom torch import nn\n\n\n"
        "class M(nn.Module):\n    def forward(self, x):\n"
        "        if x.sum() > 0:\n            return x\n        return x\n"
    )
    cfg = parse_table({"select": ["OLX101"]}, None)
    engine = Engine()
    assert [v.line for v in engine.check("m.py", text, cfg)] == [7]
    assert engine.check("m.py", text.replace("from torch import nn\n", ""), cfg) == []
    assert [v.line for v in engine.check("m.py", text, cfg)] == [7]
