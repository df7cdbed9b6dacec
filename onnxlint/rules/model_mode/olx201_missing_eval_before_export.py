"""OLX201: the exported model is still in training mode."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.chains import Link, analysis_of
from onnxlint.analysis.exported_model import (
    ModelRef,
    exported_model,
    model_callee,
    model_class,
    nested_class,
)
from onnxlint.analysis.exporter import (
    WrapperCall,
    captures_model_mode,
    effective_kind,
    export_wrapper_call,
)
from onnxlint.analysis.mode_sensitivity import (
    class_mode_insensitive,
    made_class_mode_insensitive,
    mode_insensitive,
)
from onnxlint.analysis.modes import Mode
from onnxlint.core.violation import Fix, FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.semantic.calls import ExportCall, ExportKind
from onnxlint.source.walker import dotted

_WHAT = {
    ExportKind.JIT_TRACE: "tracing records Dropout and training-mode BatchNorm",
    ExportKind.TORCH_EXPORT: "`torch.export` captures Dropout and training-mode BatchNorm",
    # torch 2.13's ONNX exporter writes BatchNorm with its running statistics in either mode
    ExportKind.ONNX_DYNAMO: "the exporter keeps Dropout and the `self.training` branches",
}


def eval_fix(rule: Rule, ref: ModelRef, title: str) -> Fix | None:
    """Insert `<model>.eval()` before the export statement (or append `.eval()` inline)."""
    ctx = rule.ctx
    if ref.name is None:
        if isinstance(ref.expr, cst.Call):
            return make_fix(
                title,
                ctx.replace(ref.expr, f"{ctx.code_of(ref.expr)}.eval()"),
                safety=FixSafety.UNSAFE,
            )
        return None
    if ref.one_line_body:
        return None
    return make_fix(
        title,
        ctx.insert_before_statement(ref.statement, f"{ref.name}.eval()"),
        safety=FixSafety.UNSAFE,
    )


class MissingEvalBeforeExport(Rule):
    """
    ## What it does
    Flags an export (`torch.onnx.export`, `torch.export.export`, `torch.jit.trace`) of a
    model that is built in this scope (`Net()`, a local `make_model()` returning `Net()`,
    `torchvision.models.*`, ...) and not switched to eval mode by a `.eval()` or
    `.train(False)` that runs on every path before the export.

    ## Why is this bad?
    A new module is in training mode. The dynamo exporter (the default since torch 2.9),
    `torch.export` and tracing capture the mode the model is in: the graph keeps Dropout
    and the `self.training` branches, so the exported model gives different (and random)
    results at inference; `torch.export` and tracing also record BatchNorm with the batch's
    statistics. (torch 2.13's `torch.onnx.export` writes BatchNorm with its running
    statistics in either mode, so a model whose only mode-dependent layers are BatchNorm,
    as a torchvision ResNet, is not reported for it. A model class that changes nothing with
    the mode is not reported either: one of the project, or one of an installed library,
    whose source onnxlint reads from the environment's `site-packages`, as pyright does:
    the interpreter set as `[tool.onnxlint.deep] python`, else the one onnxlint runs in.
    A class it cannot read is reported.) The `training=` keyword of
    `torch.onnx.export` is ignored by the dynamo exporter, and `with torch.no_grad():` does
    not change the mode either. An `.eval()` in only one branch of an `if` leaves the other
    path in training mode.

    ## Example
    ```python
    model = Net()
    model.load_state_dict(torch.load("weights.pt"))
    with torch.no_grad():
        torch.onnx.export(model, (x,), "model.onnx")
    ```

    ## Use instead
    ```python
    model = Net()
    model.load_state_dict(torch.load("weights.pt"))
    model.eval()
    torch.onnx.export(model, (x,), "model.onnx")
    ```

    ## Fix safety
    Unsafe: inserting `model.eval()` before the export changes the exported graph (to the
    inference graph the user almost always means), and the model stays in eval mode for
    any code after the export in the same scope (e.g. training that continues).

    ## References
    - https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    - torch 2.10+: "UserWarning: Exporting a model while it is in training mode"
    """

    code = "OLX201"
    name = "missing-eval-before-export"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    # "onnx": a call of the project's own export wrapper (`to_onnx(net, path)`).
    requires = ("export", "trace", "onnx")
    file_scope = True

    VALID = [
        Valid(
            dedent(
                """
                import torch
                model = Net().eval()
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                def main():
                    model = Net()
                    model.load_state_dict(torch.load("w.pt"))
                    model.train(False)
                    with torch.no_grad():
                        torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(  # a parameter: the caller decides the mode
            dedent(
                """
                import torch
                def export(model, x):
                    torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(  # a one-layer LSTM drops nothing in training mode (dropout acts between layers)
            dedent(
                """
                import torch
                class Enc(torch.nn.Module):
                    def __init__(self, lstm: torch.nn.LSTM):
                        super().__init__()
                        assert lstm.num_layers == 1
                        self.w = lstm.weight_ih_l0
                        self.rnn = torch.nn.LSTM(4, 4, dropout=0.2)
                    def forward(self, x):
                        return self.rnn(x @ self.w.T)[0]
                enc = Enc(torch.nn.LSTM(4, 4))
                torch.jit.trace(enc, (torch.ones(2, 1, 4),))
                """
            )
        ),
        Valid(  # torchvision's ViT: LayerNorm, and its dropouts are 0.0 unless given
            dedent(
                """
                import torch
                import torchvision
                model = torchvision.models.vit_b_16(num_classes=10)
                torch.export.export(model, (x,))
                """
            )
        ),
        Valid(  # a builder's LSTM copies one layer from a source built with num_layers=1
            dedent(
                """
                import torch
                from torch import nn
                def to_lstm(src):
                    return nn.LSTM(
                        input_size=src.input_size,
                        hidden_size=src.hidden_size,
                        num_layers=src.num_layers,
                        dropout=src.dropout,
                    )
                def test():
                    src = ScaledLSTM(input_size=4, hidden_size=4, num_layers=1, dropout=0.1)
                    lstm = to_lstm(src)
                    torch.jit.trace(lstm, (x,))
                """
            )
        ),
        Valid(  # a local helper that returns `m.eval()`
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        return x
                def load():
                    m = Net()
                    return m.eval()
                model = load()
                torch.export.export(model, (x,))
                """
            )
        ),
        Valid(  # eval in every branch
            dedent(
                """
                import torch
                model = Net()
                if fast:
                    model.eval()
                else:
                    model = model.half().eval()
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(  # training loop that ends each epoch with eval
            dedent(
                """
                import torch
                model = Net()
                for epoch in range(10):
                    model.train()
                    train(model)
                    model.eval()
                    evaluate(model)
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(  # the legacy exporter switches to eval itself (training=EVAL by default)
            "import torch\nmodel = Net()\ntorch.onnx.export(model, (x,), 'm.onnx', dynamo=False)\n"
        ),
        Valid(  # from_pretrained returns a model in eval mode
            dedent(
                """
                import torch
                from transformers import AutoModel
                model = AutoModel.from_pretrained("bert-base-uncased")
                torch.onnx.export(model, (ids,), "m.onnx")
                """
            )
        ),
        Valid(  # a local helper that puts its argument in eval mode
            dedent(
                """
                import torch
                def prepare(m):
                    m.eval()
                    return m
                model = Net()
                prepare(model)
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(  # a wrapper around a model that is in eval mode
            dedent(
                """
                import torch
                net = Net()
                net.eval()
                model = ExportWrapper(net)
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(  # a local module whose layers behave the same in both modes
            dedent(
                """
                import torch
                from torch import nn
                class Head(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.proj = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.LayerNorm(4))
                    def forward(self, x):
                        return self.proj(x)
                torch.onnx.export(Head(), (x,), "m.onnx")
                """
            )
        ),
        Valid(  # the mode is the caller's explicit option
            dedent(
                """
                import torch
                def export(model, x, training=False):
                    if training:
                        model.train()
                    else:
                        model.eval()
                    torch.onnx.export(model, (x,), "m.onnx")
                export(Net(), x)
                """
            )
        ),
        Valid(  # a class a factory makes with type(): its bases are mode-free
            dedent(
                """
                import torch
                import torchvision
                class DeformGS(torchvision.ops.DeformConv2d):
                    def forward(self, feat, offset, mask):
                        return torch.nn.functional.conv2d(feat * mask, self.weight, self.bias)
                def make_dcn_type(base_class, cls_name):
                    class _Factory(base_class):
                        def __init__(self, cin, cout):
                            super().__init__(cin, cout, 3, padding=1)
                            self.conv_offset = torch.nn.Conv2d(cin, 18, 3, padding=1)
                        def forward(self, feat):
                            offset = self.conv_offset(feat)
                            return super().forward(feat, offset, torch.sigmoid(offset))
                    return type(cls_name, (_Factory, base_class), {})
                DCNv2 = make_dcn_type(DeformGS, "DCNv2")
                def run_test():
                    m = DCNv2(8, 16)
                    torch.onnx.export(m, (x,), "dcn.onnx")
                """
            )
        ),
        Valid(  # a subclass of a mode-free torch.nn layer
            dedent(
                """
                import torch
                from torch import nn
                class MeanShift(nn.Conv2d):
                    def __init__(self, sign=-1):
                        super().__init__(3, 3, kernel_size=1)
                        self.bias.data = sign * torch.ones(3)
                torch.onnx.export(MeanShift(), (x,), "m.onnx")
                """
            )
        ),
        Valid(  # BatchNorm is the only mode-dependent part: torch 2.13's ONNX exporter
            # writes it with the running statistics in either mode
            dedent(
                """
                import torch
                import torchvision
                from torch import nn
                class Block(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.conv = nn.Conv2d(3, 8, 3)
                        self.bn = nn.BatchNorm2d(8)
                    def forward(self, x):
                        return torch.relu(self.bn(self.conv(x)))
                torch.onnx.export(Block(), (x,), "block.onnx")
                resnet = torchvision.models.resnet50(weights="DEFAULT")
                torch.onnx.export(resnet, (x,), "resnet.onnx")
                """
            )
        ),
    ]
    INVALID = [
        Invalid(  # a class made with type() from a base that holds Dropout
            dedent(
                """
                import torch
                class Base(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.drop = torch.nn.Dropout(0.1)
                def make_type(base_class, cls_name):
                    class _Factory(base_class):
                        def forward(self, x):
                            return self.drop(x)
                    return type(cls_name, (_Factory, base_class), {})
                Made = make_type(Base, "Made")
                def run_test():
                    m = Made()
                    torch.onnx.export(m, (x,), "m.onnx")
                """
            ),
            line=14,
            message="training mode",
        ),
        Invalid(  # a subclass of BatchNorm: torch.export captures the batch statistics
            dedent(
                """
                import torch
                from torch import nn
                class FrozenBN(nn.BatchNorm2d):
                    pass
                torch.export.export(FrozenBN(3), (x,))
                """
            ),
            line=5,
            message="`torch.export` captures Dropout and training-mode BatchNorm",
        ),
        Invalid(  # a ResNet traced: the trace records batch statistics
            dedent(
                """
                import torch
                import torchvision
                model = torchvision.models.resnet18(weights="DEFAULT")
                traced = torch.jit.trace(model, (x,))
                """
            ),
            line=4,
            message="tracing records",
        ),
        Invalid(  # BatchNorm and Dropout, exported to ONNX: the Dropout is kept
            dedent(
                """
                import torch
                from torch import nn
                class Net(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.bn = nn.BatchNorm2d(3)
                        self.drop = nn.Dropout(0.1)
                    def forward(self, x):
                        return self.drop(self.bn(x))
                torch.onnx.export(Net(), (x,), "m.onnx")
                """
            ),
            line=10,
            message="the exporter keeps Dropout and the `self.training` branches",
        ),
        Invalid(  # stacked LSTM layers with dropout between them
            dedent(
                """
                import torch
                class Enc(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.rnn = torch.nn.LSTM(4, 4, num_layers=2, dropout=0.2)
                    def forward(self, x):
                        return self.rnn(x)[0]
                enc = Enc()
                torch.jit.trace(enc, (torch.ones(2, 1, 4),))
                """
            ),
            line=9,
            message="training mode",
        ),
        Invalid(  # ViT with dropout
            dedent(
                """
                import torch
                import torchvision
                model = torchvision.models.vit_b_16(num_classes=10, dropout=0.1)
                torch.export.export(model, (x,))
                """
            ),
            line=4,
            message="training mode",
        ),
        Invalid(  # the source LSTM has two layers with dropout between them
            dedent(
                """
                import torch
                from torch import nn
                def to_lstm(src):
                    return nn.LSTM(
                        input_size=src.input_size,
                        hidden_size=src.hidden_size,
                        num_layers=src.num_layers,
                        dropout=src.dropout,
                    )
                def test():
                    src = ScaledLSTM(input_size=4, hidden_size=4, num_layers=2, dropout=0.1)
                    lstm = to_lstm(src)
                    torch.jit.trace(lstm, (x,))
                """
            ),
            line=13,
            message="training mode",
        ),
        Invalid(
            dedent(
                """
                import torch
                model = Net()
                model.load_state_dict(torch.load("w.pt"))
                with torch.no_grad():
                    torch.onnx.export(model, (x,), "m.onnx")
                """
            ),
            line=5,
            message="`model` is in training mode",
            fixed=dedent(
                """
                import torch
                model = Net()
                model.load_state_dict(torch.load("w.pt"))
                with torch.no_grad():
                    model.eval()
                    torch.onnx.export(model, (x,), "m.onnx")
                """
            ),
        ),
        Invalid(  # eval only in one branch does not dominate the export
            dedent(
                """
                import torch
                from torchvision import models
                def main(args):
                    model = models.mobilenet_v2()
                    if args.checkpoint:
                        model.load_state_dict(torch.load(args.checkpoint))
                        model.eval()
                    torch.onnx.export(model, (x,), "m.onnx")
                """
            ),
            line=8,
            message="may be in training mode",
            fixed=dedent(
                """
                import torch
                from torchvision import models
                def main(args):
                    model = models.mobilenet_v2()
                    if args.checkpoint:
                        model.load_state_dict(torch.load(args.checkpoint))
                        model.eval()
                    model.eval()
                    torch.onnx.export(model, (x,), "m.onnx")
                """
            ),
        ),
        Invalid(  # a local factory returning a fresh module; torch.jit.trace
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.drop = torch.nn.Dropout(0.1)
                    def forward(self, x):
                        return self.drop(x)
                def make_model():
                    return Net()
                net = make_model()
                traced = torch.jit.trace(net, (x,))
                """
            ),
            line=11,
            message="tracing records",
        ),
        Invalid(  # inline construction: `.eval()` appended
            "import torch\ntorch.export.export(Net(), (x,))\n",
            line=2,
            message="training mode",
            fixed="import torch\ntorch.export.export(Net().eval(), (x,))\n",
        ),
        Invalid(  # before 2.9 the default exporter is the legacy one: only with PRESERVE
            dedent(
                """
                import torch
                model = Net()
                torch.onnx.export(model, (x,), "m.onnx", training=torch.onnx.TrainingMode.PRESERVE)
                """
            ),
            line=3,
            message="training mode",
            config={"target-torch": "2.5"},
        ),
    ]

    def _insensitive_elsewhere(self, ref: ModelRef, batchnorm: bool) -> bool:
        """The class is defined inside a function, or in another project module, or in an
        installed library, or made by a factory of this file with `type(...)`, and has no
        mode-dependent layer (the other module's own submodules judged there)."""
        nested = nested_class(self.ctx, ref)
        if nested is not None:
            bases = tuple(d for d in (dotted(a.value) for a in nested.bases) if d)
            return class_mode_insensitive(
                self.ctx, nested.name.value, nested, bases, batchnorm=batchnorm
            )
        found = model_class(self.ctx, ref)
        if found is None and ref.imported_class is not None and self.ctx.project is not None:
            # not a project class: an installed library's, read from its source
            found = self.ctx.project.library_class_at(self.ctx.path, ref.imported_class)
        if found is not None:
            view, info = found
            return mode_insensitive(analysis_of(view), info.name, batchnorm=batchnorm)
        callee = model_callee(ref)
        return callee is not None and made_class_mode_insensitive(
            self.ctx, callee, batchnorm=batchnorm
        )

    def visit_Call(self, node: cst.Call) -> None:
        call = export_call_or_wrapper(self, node)
        if call is None or not captures_model_mode(self.ctx, call):
            return
        ref = exported_model(self.ctx, call)
        if ref is None:
            return
        modes = ref.modes
        if Mode.TRAIN not in modes or Mode.RETRAIN in modes:
            return  # OLX202 reports a `.train()` that undoes an `.eval()`
        if Mode.EVAL in modes and _mode_is_an_option(ref):
            return  # `if training: model.train() else: model.eval()`: the caller chooses
        # torch 2.13's ONNX exporter writes BatchNorm in inference mode (the running
        # statistics) whatever the model's mode: there only Dropout and `self.training` count.
        kind = effective_kind(self.ctx, call)
        batchnorm = kind is not ExportKind.ONNX_DYNAMO
        info = ref.class_info
        if info is not None and mode_insensitive(self.ctx, info.name, batchnorm=batchnorm):
            return  # no Dropout/BatchNorm/`self.training`: the mode changes nothing
        if ref.class_info is None and self._insensitive_elsewhere(ref, batchnorm):
            return
        if all(
            o.still or (o.batchnorm_only and not batchnorm)
            for o in ref.origins
            if o.mode is Mode.TRAIN
        ):
            return  # a library layer the mode changes nothing in (`nn.LSTM(4, 4)`, ViT)
        who = f"`{ref.name}`" if ref.name else "the model"
        what = _WHAT.get(kind, "the exporter keeps Dropout and training-mode BatchNorm")
        if modes == {Mode.TRAIN}:
            head = f"{who} is in training mode at this export"
        else:
            head = (
                f"{who} may be in training mode at this export "
                "(`.eval()` does not run on every path)"
            )
        notes: tuple[str, ...] = ()
        if ref.in_no_grad:
            notes = ("`torch.no_grad()` turns off gradients but does not switch to eval mode",)
        chain, related = self.ctx.chain(chain_links(call, ref, Mode.TRAIN))
        self.report(
            ref.expr,
            f"{head}: {chain + '; ' if chain else ''}{what}; "
            f"call `{ref.name or 'model'}.eval()` before exporting",
            fix=eval_fix(self, ref, f"Call `{ref.name or 'model'}.eval()` before the export"),
            notes=notes,
            related=related,
        )


_MODE_OPTIONS = frozenset({"training", "train", "train_mode", "training_mode", "is_training"})


def export_call_or_wrapper(rule: Rule, node: cst.Call) -> ExportCall | None:
    """An export call, or a call of the project's own export wrapper (`to_onnx(net, ...)`:
    a function that exports the model it is given in its current mode)."""
    return rule.ctx.export_call(node) or export_wrapper_call(rule.ctx, node)


def chain_links(call: ExportCall, ref: ModelRef, *modes: Mode) -> list[Link]:
    """How the model came to be in one of `modes`, and where a wrapper exports it."""
    links = list(ref.via(*modes))
    if isinstance(call, WrapperCall):
        link = call.link()
        if link is not None:
            links.append(link)
    return links


def _mode_is_an_option(ref: ModelRef) -> bool:
    """The enclosing function takes the mode as a parameter (`def export(model,
    training=False)`): a path that leaves the model training is the caller's choice."""
    func = ref.function
    if func is None:
        return False
    p = func.params
    return any(a.name.value in _MODE_OPTIONS for a in (*p.params, *p.kwonly_params))
