"""onnxlint.semantic.branches: which parameters hold targets, and the parts of a function an export
never runs (what reachability and the OLX1xx rules skip)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from onnxlint.semantic.branches import iter_live, optional_targets


def _function(src: str) -> cst.FunctionDef:
    node = cst.parse_module(textwrap.dedent(src)).body[0]
    assert isinstance(node, cst.FunctionDef)
    return node


def _targets(src: str) -> frozenset[str]:
    func = _function(src)
    return optional_targets(func, func.params.params)


@pytest.mark.parametrize(
    "doc",
    [
        # numpydoc (speechbrain's FastSpeech2)
        """
        mel : torch.Tensor
            batch of mel spectrograms
            (used only for training)
        pitch : torch.Tensor
            predicted when None
        """,
        # Google
        """
        Args:
            mel (Tensor): ground-truth spectrograms for teacher forcing.
            pitch (Tensor): predicted when None.
        """,
        # Sphinx
        """
        :param torch.Tensor mel: only used during training
        :param pitch: predicted when None
        """,
    ],
)
def test_a_parameter_documented_as_ground_truth_holds_targets(doc: str) -> None:
    body = textwrap.indent(textwrap.dedent(doc).strip("\n"), "    ")
    src = f'def forward(x, mel=None, pitch=None):\n    """Run.\n\n{body}\n    """\n'
    assert _targets(src) == {"mel"}


def test_targets_need_a_none_default_and_names_alone_still_count() -> None:
    src = '''
    def forward(x, mel, labels=None, prompt=None):
        """mel: ground truth, but required. prompt: an optional input."""
    '''
    assert _targets(src) == {"labels"}


def test_iter_live_skips_the_parts_an_export_never_runs() -> None:
    func = _function(
        """
        def forward(self, x, labels=None):
            if self.training:
                x = noise(x)
            if labels is not None:
                loss = criterion(x, labels)
            if not self.training or keep(x):
                x = scale(x)
            if torch.onnx.is_in_onnx_export():
                return head(x)
            return decode(x)
        """
    )
    called = {
        n.func.value
        for n in iter_live(func, frozenset({"labels"}))
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)
    }
    assert called == {"scale", "head"}
