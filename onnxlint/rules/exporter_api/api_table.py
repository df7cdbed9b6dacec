"""What torch.onnx removed, deprecated or ignores, and when: the facts OLX4xx/OLX5xx rate by.

Every entry comes from `../shared/research/field-and-peers.md` section 3 (diffs of
`torch/onnx/__init__.py` across the 2.4-2.13 wheels, the release notes, and runs on 2.13),
and was re-checked against the installed torch 2.13 (`hasattr(torch.onnx, name)`).
Versions are `(major, minor)` tuples compared with `config.torch_version`.

`export_path()` decides which exporter a `torch.onnx.export` call really takes for the
target torch: the default flipped from TorchScript to dynamo in 2.9.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Context
from onnxlint.semantic.calls import ExportCall, ExportKind, literal_bool
from onnxlint.source.walker import iter_descendants

Version = tuple[int, int]

DYNAMO_DEFAULT_SINCE: Version = (2, 9)  # `dynamo=True` is the default (PR #159646)
LEGACY_DEPRECATED_SINCE: Version = (2, 8)  # `dynamo=False` emits a DeprecationWarning
IGNORED_KWARGS_SINCE: Version = (2, 6)  # legacy keywords documented as ignored with dynamo
FALLBACK_ADDED: Version = (2, 5)
FALLBACK_DEFAULT_FALSE: Version = (2, 9)  # PR #162726
FALLBACK_REMOVED: Version = (2, 11)  # PR #173189: TypeError
TRANSLATION_TABLE_ADDED: Version = (2, 6)
TRANSLATION_LIST_REJECTED: Version = (2, 11)  # TypeError: "... not a sequence"
TORCHLIB_OPSET = 18  # lowest opset the dynamo exporter implements; lower is version-converted
DEFAULT_OPSET = 20
MAX_OPSET = 23  # torch 2.13 `ONNX_MAX_OPSET`: the newest opset its exporter documents
# onnx 1.23 (`onnx.defs.onnx_opset_version()`): above it the version conversion fails and the
# model silently stays at opset 18 (measured with torch 2.13; 24 converts fine).
ONNX_MAX_KNOWN_OPSET = 28
PROTOBUF_LIMIT_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class ApiFact:
    """A public torch.onnx name that was deprecated and/or removed."""

    qualname: str
    deprecated: Version | None  # None: removed without a deprecation period we know of
    removed: Version | None  # None: deprecated but still present in the newest torch
    replacement: str  # what to use instead ("" when there is nothing)

    def severity(self, target: Version) -> Severity | None:
        """Error when removed in `target`, info when only deprecated, None before that."""
        if self.removed is not None and target >= self.removed:
            return Severity.ERROR
        if self.deprecated is not None and target >= self.deprecated:
            return Severity.INFO
        return None


def _v(s: str) -> Version:
    major, minor = s.split(".")
    return int(major), int(minor)


_VERIFY = (
    "`torch.onnx.verification.verify_onnx_program(onnx_program)` "
    "(or `torch.onnx.testing.assert_onnx_program`, torch 2.10+)"
)
_LOGGING = "print the returned `ONNXProgram`, or configure `logging`"

# name -> (deprecated, removed, replacement)
_FACTS: dict[str, tuple[str | None, str | None, str]] = {
    "torch.onnx.dynamo_export": (
        "2.7",
        "2.9",
        "`torch.onnx.export(model, args, kwargs=kwargs)` (dynamo is the default)",
    ),
    "torch.onnx.ExportOptions": (
        "2.7",
        "2.9",
        "keyword arguments of `torch.onnx.export` (`dynamic_shapes=`, `opset_version=`, ...)",
    ),
    "torch.onnx.enable_fake_mode": (
        "2.7",
        "2.9",
        "build the model under `FakeTensorMode()`, `torch.export.export` it, then "
        "`torch.onnx.export(ep, optimize=False)` and `save(..., include_initializers=False)`",
    ),
    "torch.onnx.OnnxRegistry": ("2.7", "2.8", "`custom_translation_table=` of `torch.onnx.export`"),
    "torch.onnx.DiagnosticOptions": (
        None,
        "2.8",
        "`report=True` / `verbose=` of `torch.onnx.export`",
    ),
    "torch.onnx.ONNXRuntimeOptions": (
        "2.7",
        "2.8",
        "call the `ONNXProgram` (or `initialize_inference_session`), or use onnxruntime directly",
    ),
    "torch.onnx.is_onnxrt_backend_supported": (None, "2.9", "use onnxruntime directly"),
    "torch.onnx.symbolic_caffe2": (None, "2.9", ""),
    "torch.onnx.ExportTypes": (None, "2.6", "save the `ONNXProgram` with `.save(path)`"),
    "torch.onnx.export_to_pretty_string": (None, "2.6", "print the returned `ONNXProgram`"),
    "torch.onnx.disable_log": (None, "2.6", _LOGGING),
    "torch.onnx.enable_log": (None, "2.6", _LOGGING),
    "torch.onnx.is_onnx_log_enabled": (None, "2.6", _LOGGING),
    "torch.onnx.set_log_stream": (None, "2.6", _LOGGING),
    "torch.onnx.log": (None, "2.6", _LOGGING),
    "torch.onnx.CheckerError": (None, "2.5", "`onnx.checker.check_model` and its errors"),
    "torch.onnx.InvalidExportOptionsError": (None, "2.5", "`torch.onnx.OnnxExporterError`"),
    "torch.onnx.ONNXProgramSerializer": (None, "2.5", "`ONNXProgram.save(path)`"),
    "torch.onnx.SymbolicContext": (None, "2.5", ""),
    # Deprecated, still present in 2.13 (info):
    "torch.onnx.select_model_mode_for_export": (
        "2.7",
        None,
        "call `model.eval()` (or `model.train()`) before exporting",
    ),
    "torch.onnx.utils.select_model_mode_for_export": (
        "2.7",
        None,
        "call `model.eval()` (or `model.train()`) before exporting",
    ),
    "torch.onnx.utils.unconvertible_ops": ("2.7", None, "`torch.onnx.export(..., report=True)`"),
    "torch.onnx.utils.setup_onnx_logging": ("2.7", None, ""),
    "torch.onnx.utils.exporter_context": ("2.7", None, ""),
    "torch.onnx.utils.disable_apex_o2_state_dict_hook": ("2.7", None, ""),
}
for _name in (
    "find_mismatch",
    "verify",
    "GraphInfo",
    "GraphInfoPrettyPrinter",
    "VerificationOptions",
    "OnnxBackend",
    "check_export_model_diff",
    "OnnxTestCaseRepro",
    "verify_aten_graph",
):
    _FACTS[f"torch.onnx.verification.{_name}"] = ("2.7", "2.9", _VERIFY)

API_FACTS: dict[str, ApiFact] = {
    name: ApiFact(name, _v(dep) if dep else None, _v(rem) if rem else None, repl)
    for name, (dep, rem, repl) in _FACTS.items()
}

# Keywords of `torch.onnx.export` the dynamo exporter accepts and silently drops
# (deprecated in 2.6; not forwarded to `_compat.export_compat`), with what to do instead.
IGNORED_BY_DYNAMO: dict[str, str] = {
    "training": "set the mode with `model.eval()` / `model.train()` before exporting",
    "operator_export_type": "only ONNX is supported",
    "do_constant_folding": "the optimizer folds constants (`optimize=True`, the default)",
    "custom_opsets": "use `custom_translation_table=`",
    "export_modules_as_functions": "the dynamo exporter does not support it",
    "autograd_inlining": "it has no effect",
}

# Keywords only the dynamo exporter reads: the TorchScript path silently ignores them.
DYNAMO_ONLY_KWARGS = (
    "report",
    "verify",
    "optimize",
    "custom_translation_table",
    "external_data",
    "profile",
    "dump_exported_program",
    "artifacts_dir",
)

# `torch.ops.<ns>` namespaces that are torch's own (or already translated): not custom ops.
BUILTIN_OP_NAMESPACES = frozenset(
    {
        "aten",
        "prims",
        "prim",
        "higher_order",
        "onnx",
        "torchvision",  # torch 2.13 ships translations for nms, roi_align, roi_pool, deform_conv2d
        "quantized",
        "quantized_decomposed",
        "_quantized",
        "_c10d_functional",
        "c10d_functional",
        "_c10d_functional_autograd",
        "c10d",
        "_dtensor",
        "profiler",
        "debugprims",
        "rngprims",
        "inductor",
        "mkldnn",
        "_caffe2",
        "symm_mem",
        "fsdp",
        "streams",
    }
)


class ExportPath(str, enum.Enum):
    DYNAMO = "dynamo"
    TORCHSCRIPT = "torchscript"
    UNKNOWN = "unknown"  # `dynamo=<expr>` or `**kwargs` we cannot read


def export_path(ctx: Context, call: ExportCall) -> ExportPath | None:
    """The exporter a `torch.onnx.export` / `utils.export` call takes; None for other calls."""
    if call.kind is ExportKind.ONNX_TORCHSCRIPT:
        return ExportPath.TORCHSCRIPT
    if call.kind is not ExportKind.ONNX_DYNAMO:
        return None
    dyn = call.arg("dynamo")
    if dyn is None:
        if any(a.star == "**" for a in call.node.args):
            return ExportPath.UNKNOWN
        if ctx.config.torch_version >= DYNAMO_DEFAULT_SINCE:
            return ExportPath.DYNAMO
        return ExportPath.TORCHSCRIPT
    flag = literal_bool(dyn.value)
    if flag is None:
        return ExportPath.UNKNOWN
    return ExportPath.DYNAMO if flag else ExportPath.TORCHSCRIPT


def onnx_export_on_dynamo(ctx: Context, node: cst.Call) -> ExportCall | None:
    """The export call at `node` if it is a `torch.onnx.export` taking the dynamo path."""
    call = ctx.export_call(node)
    if call is None or export_path(ctx, call) is not ExportPath.DYNAMO:
        return None
    return call


def torch_module_name(ctx: Context) -> str | None:
    """The name `torch` is bound to in the file (`import torch`), if any."""
    for bound, full in ctx.semantic.imports.items():
        if full == "torch":
            return bound
    return None


def fmt_version(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


def assigned_values(ctx: Context, name: str) -> list[cst.BaseExpression]:
    """Values assigned to `name` in the enclosing function (or at module level): a
    flow-insensitive look-up for literals such as `buf = io.BytesIO()` or `OPSET = 17`.

    Reads other top-level blocks when at module level: rules using it are file-scoped.
    """
    func = ctx.function
    scope: cst.CSTNode | list[cst.BaseStatement]
    out: list[cst.BaseExpression] = []
    if func is not None:
        scope = func.node.body
        nodes = iter_descendants(scope)
    else:
        nodes = (n for stmt in ctx.semantic.module_body for n in iter_descendants(stmt))
    for n in nodes:
        if isinstance(n, cst.Assign):
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets):
                out.append(n.value)
        elif (
            isinstance(n, cst.AnnAssign)
            and n.value is not None
            and isinstance(n.target, cst.Name)
            and n.target.value == name
        ):
            out.append(n.value)
    if func is not None and not out:  # a module-level constant used inside a function
        for stmt in ctx.semantic.module_body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name
                        for t in small.targets
                    ):
                        out.append(small.value)
    return out


def single_value(ctx: Context, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` itself, or the one value a local name is assigned (see `assigned_values`)."""
    if isinstance(expr, cst.Name):
        values = assigned_values(ctx, expr.value)
        if len(values) == 1:
            return values[0]
    return expr


def export_destination(
    ctx: Context, call: ExportCall
) -> tuple[cst.Arg | None, cst.BaseExpression | None]:
    """The export call's `f` argument and what it is: its value, the one value a local name
    is assigned, or the context manager an enclosing `with ... as name:` binds it to
    (`with open(path, "wb") as f:`); (None, None) without an `f`."""
    f = call.arg("f", 2)
    if f is None or f.star:
        return None, None
    value: cst.BaseExpression | None = single_value(ctx, f.value)
    if value is f.value and isinstance(f.value, cst.Name):
        value = _with_target(ctx, f.value.value)
    return f, value


def _with_target(ctx: Context, name: str) -> cst.BaseExpression | None:
    """The context manager bound to `name` by an enclosing `with ... as name:`."""
    for anc in reversed(ctx.ancestors):
        if isinstance(anc, cst.With):
            for item in anc.items:
                if (
                    item.asname is not None
                    and isinstance(item.asname.name, cst.Name)
                    and item.asname.name.value == name
                ):
                    return item.item
    return None


def int_literal(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    return None


_VERSION_WORDS = ("version", "torch_greater", "torch_less", "pytorch_after", "torch_ge", "torch_lt")


def in_version_branch(ctx: Context) -> bool:
    """Whether the node being visited sits in an `if`/`else` (or ternary) that tests a
    version (`torch.__version__`, `Version(...)`, `is_torch_greater_or_equal(...)`): code
    written for another torch, where a removed API is deliberate. A test onnxlint can
    evaluate for `target-torch` (see `onnxlint.semantic.versions`) is not counted here: its
    dead branch is dropped for every rule, its live branch is judged like any code."""
    from onnxlint.semantic.versions import evaluate

    for anc in ctx.ancestors:
        if isinstance(anc, (cst.If, cst.IfExp)):
            test = ctx.code_of(anc.test).lower()
            if any(w in test for w in _VERSION_WORDS) and (
                evaluate(anc.test, ctx.config.torch_version) is None
            ):
                return True
    return False


# `torch.onnx.export`'s keywords in torch 2.13 (no `**kwargs` since 2.7: others are a TypeError).
EXPORT_KEYWORDS_2_13 = frozenset(
    {
        "model",
        "args",
        "f",
        "kwargs",
        "verbose",
        "input_names",
        "output_names",
        "opset_version",
        "dynamo",
        "external_data",
        "dynamic_shapes",
        "custom_translation_table",
        "report",
        "optimize",
        "verify",
        "profile",
        "dump_exported_program",
        "artifacts_dir",
        "export_params",
        "keep_initializers_as_inputs",
        "dynamic_axes",
        "training",
        "operator_export_type",
        "do_constant_folding",
        "custom_opsets",
        "export_modules_as_functions",
        "autograd_inlining",
    }
)
UNKNOWN_KWARGS_REJECTED_SINCE: Version = (2, 7)  # PR #146003 removed the `**_` catch-all
# Keywords of older `torch.onnx.export` signatures, with what became of them.
OLD_EXPORT_KEYWORDS = {
    "example_outputs": "outputs come from running the model",
    "_retain_param_name": "parameter names are always kept",
    "strip_doc_string": "use `verbose=`",
    "enable_onnx_checker": "check the saved model with `onnx.checker.check_model`",
    "use_external_data_format": "use `external_data=`",
}
