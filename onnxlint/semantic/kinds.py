"""A cheap, flow-insensitive guess of what kind of value an expression holds inside a
function (`Kinds`): a tensor, a shape, a Python number taken from a tensor, ...; the return
kinds of the file's and imported functions, and `isinstance` narrowing."""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Sequence

import libcst as cst

from onnxlint.semantic.calls import is_none
from onnxlint.semantic.index import FunctionInfo
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.walker import dotted, iter_children, iter_descendants


class Kind(str, enum.Enum):
    """What a value is, as far as a cheap local guess can tell."""

    TENSOR = "tensor"
    SHAPE = "shape"  # torch.Size / x.shape
    SIZE = "size"  # one dimension: x.shape[0], x.size(1) (a SymInt under export)
    DATA = "data"  # a Python number/list taken out of a tensor (.item(), .tolist())
    NDARRAY = "ndarray"
    BOOL = "bool"
    NONE = "none"
    OTHER = "other"  # known not to be a tensor
    UNKNOWN = "unknown"


# torch functions that do not return tensors.
_TORCH_NON_TENSOR = {
    "torch.is_tensor": Kind.BOOL,
    "torch.is_floating_point": Kind.BOOL,
    "torch.is_complex": Kind.BOOL,
    "torch.is_grad_enabled": Kind.BOOL,
    "torch.is_inference_mode_enabled": Kind.BOOL,
    "torch.numel": Kind.SIZE,
    "torch.Size": Kind.SHAPE,
    "torch.device": Kind.OTHER,
    "torch.dtype": Kind.OTHER,
    "torch.finfo": Kind.OTHER,
    "torch.iinfo": Kind.OTHER,
    "torch.get_default_dtype": Kind.OTHER,
    "torch.no_grad": Kind.OTHER,
    "torch.enable_grad": Kind.OTHER,
    "torch.inference_mode": Kind.OTHER,
    "torch.autocast": Kind.OTHER,
    "torch.equal": Kind.DATA,
    "torch.broadcast_shapes": Kind.SHAPE,
}
_TORCH_NON_TENSOR_PREFIXES = (
    "torch.jit.",
    "torch.onnx.",
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.export.",
    "torch.library.",
    "torch.utils.",
    "torch.fx.",
    "torch.nn.init.",
    "torch.nn.utils.",
    "torch.autograd.",
    "torch.testing.",
    "torch.overrides.",
    "torch.cond",
    "torch._check",
)
_TORCH_TENSOR_PREFIXES = (
    "torch.nn.functional.",
    "torch.linalg.",
    "torch.fft.",
    "torch.special.",
    "torch.ops.",
)
# Methods that only tensors have (so the receiver is a tensor and so is the result).
TENSOR_METHODS = frozenset(
    [
        "sum",
        "mean",
        "max",
        "min",
        "abs",
        "norm",
        "any",
        "all",
        "argmax",
        "argmin",
        "std",
        "var",
        "prod",
        "float",
        "half",
        "double",
        "long",
        "bool",
        "int",
        "view",
        "reshape",
        "permute",
        "transpose",
        "contiguous",
        "squeeze",
        "unsqueeze",
        "matmul",
        "softmax",
        "log_softmax",
        "sigmoid",
        "tanh",
        "relu",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "pow",
        "clamp",
        "clamp_min",
        "clamp_max",
        "clip",
        "masked_fill",
        "masked_fill_",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "nonzero",
        "to",
        "type_as",
        "expand",
        "expand_as",
        "repeat",
        "flatten",
        "unflatten",
        "detach",
        "clone",
        "cumsum",
        "cumprod",
        "sort",
        "topk",
        "gather",
        "scatter",
        "index_select",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "new_tensor",
        "narrow",
        "chunk",
        "split",
        "unbind",
        "flip",
        "roll",
        "masked_select",
        "where",
        "triu",
        "tril",
        "bmm",
        "mm",
        "sign",
        "floor",
        "ceil",
        "round",
        "fill_",
        "zero_",
        "add_",
        "mul_",
        "sub_",
        "div_",
        "copy_",
        "masked_scatter_",
        "index_put_",
        "scatter_",
        "add",
        "mul",
        "sub",
        "div",
        "neg",
        "reciprocal",
        "logical_not",
        "logical_and",
        "logical_or",
        "isnan",
        "isinf",
        "isfinite",
        "nan_to_num",
        "cos",
        "sin",
        "amax",
        "amin",
        "logsumexp",
        "square",
        "baddbmm",
        "addmm",
        "einsum",
        "repeat_interleave",
        "t",
    ]
)
_DATA_METHODS = {"item": Kind.DATA, "tolist": Kind.DATA, "numpy": Kind.NDARRAY}
# Methods of dicts, strings and lists that tensors do not have.
_NOT_TENSOR_METHODS = frozenset(
    {
        *("get", "keys", "items", "values", "setdefault", "update", "pop", "popitem"),
        *("append", "extend", "insert", "remove", "count", "index", "copy"),
        *("startswith", "endswith", "lower", "upper", "strip", "format", "join", "replace"),
    }
)
_SIZE_METHODS = frozenset({"dim", "ndimension", "numel", "nelement", "element_size", "ndim"})
_BOOL_METHODS = frozenset({"is_contiguous", "is_floating_point", "is_complex", "equal"})
_TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data", "grad"})
_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
# Literals and displays: values that are never tensors.
_OTHER_VALUE_TYPES = frozenset(
    {
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.ConcatenatedString,
        cst.FormattedString,
        cst.List,
        cst.Dict,
        cst.Set,
        cst.ListComp,
        cst.DictComp,
        cst.Tuple,
    }
)
_TENSOR_ANNOTATIONS = ("Tensor", "FloatTensor", "LongTensor", "BoolTensor", "HalfTensor")


def annotation_kind(ann: cst.Annotation | None) -> Kind | None:
    """TENSOR for `Tensor`-like annotations (also inside Optional/Union), OTHER for plain
    scalars and containers, None when there is no annotation or it says nothing."""
    if ann is None:
        return None
    code = _plain_dotted(ann.annotation) or cst.Module([]).code_for_node(ann.annotation)
    tensorish = any(
        code.endswith(t) or f"{t}]" in code or f"{t} |" in code for t in _TENSOR_ANNOTATIONS
    )
    containers = ("list", "List", "tuple", "Tuple", "dict", "Dict", "Sequence")
    if tensorish and not code.startswith(containers):
        if re.search(r"\b(int|float)\b", code):
            return Kind.UNKNOWN  # `int | torch.Tensor`: either, callers decide
        return Kind.TENSOR
    return Kind.OTHER


def _plain_dotted(expr: cst.BaseExpression) -> str | None:
    """The code of `a.b.c` written without parentheses or spaces (most annotations:
    `torch.Tensor`), without libcst's code generation; None for anything else."""
    parts: list[str] = []
    node = expr
    while type(node) is cst.Attribute:
        dot = node.dot
        if (
            node.lpar
            or node.rpar
            or not (_no_space(dot.whitespace_before) and _no_space(dot.whitespace_after))
        ):
            return None
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name or node.lpar or node.rpar:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _no_space(ws: cst.BaseParenthesizableWhitespace) -> bool:
    return type(ws) is cst.SimpleWhitespace and ws.value == ""


# `forward(self, hidden_states, output_attentions)`: the switches Hugging Face-style layers
# take positionally, without a default, are Python bools (config flags), not inputs.
FLAG_PARAM = re.compile(
    r"^(output_(attentions|hidden_states|router_logits|\w+_attentions)|return_dict|use_cache"
    r"|return_\w+_weights)$"
)

_LEARN_TYPES = frozenset({cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For})


class Kinds:
    """Flow-insensitive kinds of the local names of one function (or a module body)."""

    def __init__(
        self,
        model: SemanticModel,
        func: FunctionInfo | None,
        param_kinds: dict[str, Kind] | None = None,
    ) -> None:
        self.model = model
        self.func = func
        self.names: dict[str, Kind] = {}
        if func is not None:
            is_forward = func.name == "forward"
            for p in func.params():
                kind = annotation_kind(p.annotation)
                if kind in (None, Kind.UNKNOWN) and param_kinds:
                    kind = param_kinds.get(p.name.value, kind)  # what every caller passes
                if kind is None:
                    if p.default is not None:
                        kind = Kind.UNKNOWN if is_none(p.default) else Kind.OTHER
                    else:
                        tensor = is_forward and not FLAG_PARAM.match(p.name.value)
                        kind = Kind.TENSOR if tensor else Kind.UNKNOWN
                self.names[p.name.value] = kind
            if func.node.params.star_arg and isinstance(func.node.params.star_arg, cst.Param):
                self.names[func.node.params.star_arg.name.value] = Kind.OTHER
            if func.node.params.star_kwarg is not None:
                self.names[func.node.params.star_kwarg.name.value] = Kind.OTHER
            self._learn(func.node.body)

    def _assign(self, target: cst.BaseExpression, kind: Kind) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            old = self.names.get(name)
            if old is None or old == kind:
                self.names[name] = kind
            elif {old, kind} <= {Kind.TENSOR, Kind.UNKNOWN}:
                self.names[name] = Kind.TENSOR if kind is Kind.TENSOR else old
            elif old is Kind.NONE:
                self.names[name] = kind
            elif kind is not Kind.NONE:
                self.names[name] = Kind.UNKNOWN
        elif isinstance(target, (cst.Tuple, cst.List)):
            elem = Kind.SIZE if kind is Kind.SHAPE else Kind.UNKNOWN
            for el in target.elements:
                if isinstance(el, cst.Element):
                    self._assign(el.value, elem)

    def _learn(self, body: cst.CSTNode) -> None:
        for node in iter_descendants(body, leaves=False):
            if type(node) not in _LEARN_TYPES:  # cheap skip of most nodes
                continue
            if type(node) is cst.Assign:
                value = node.value
                for t in node.targets:
                    target = t.target
                    if (
                        type(target) in (cst.Tuple, cst.List)
                        and type(value) in (cst.Tuple, cst.List)
                        and len(target.elements) == len(value.elements)  # type: ignore[attr-defined]
                    ):
                        # `H, W = x.shape[2], x.shape[3]`: element by element.
                        for te, ve in zip(target.elements, value.elements, strict=True):  # type: ignore[attr-defined]
                            self._assign(te.value, self.of(ve.value))
                    else:
                        self._assign(target, self.of(value))
            elif type(node) is cst.AnnAssign and node.value is not None:
                self._assign(node.target, annotation_kind(node.annotation) or self.of(node.value))
            elif type(node) is cst.AugAssign:
                if self.of(node.value) is Kind.TENSOR:
                    self._assign(node.target, Kind.TENSOR)
            elif type(node) is cst.For:
                it = self.of(node.iter)
                if isinstance(node.iter, cst.Call) and self.model.qualname(node.iter.func) in (
                    "builtins.range",
                ):
                    self._assign(node.target, Kind.SIZE)
                elif it is Kind.TENSOR:
                    self._assign(node.target, Kind.TENSOR)
                else:
                    self._assign(node.target, Kind.UNKNOWN)

    def of(self, expr: cst.BaseExpression) -> Kind:
        """The kind of value `expr` evaluates to."""
        # Exact types, not isinstance(): libcst's classes are ABCs, whose isinstance() runs
        # Python code, and these are concrete classes (this is called ~400 times a file).
        if type(expr) is cst.Name:
            if expr.value == "None":
                return Kind.NONE
            if expr.value in ("True", "False"):
                return Kind.BOOL
            return self.names.get(expr.value, Kind.UNKNOWN)
        if type(expr) in _OTHER_VALUE_TYPES:
            return Kind.OTHER
        if type(expr) is cst.Attribute:
            base = self.of(expr.value)
            attr = expr.attr.value
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return Kind.BOOL if attr == "training" else Kind.UNKNOWN
            if base is Kind.TENSOR:
                if attr == "shape":
                    return Kind.SHAPE
                if attr in _TENSOR_ATTRS:
                    return Kind.TENSOR
                if attr == "ndim":
                    return Kind.SIZE
                return Kind.OTHER
            return Kind.UNKNOWN
        if type(expr) is cst.Subscript:
            base = self.of(expr.value)
            if base is Kind.TENSOR:
                return Kind.TENSOR
            if base is Kind.SHAPE:
                one = len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
                return Kind.SIZE if one else Kind.SHAPE
            return Kind.UNKNOWN
        if type(expr) is cst.Call:
            return self._call(expr)
        if type(expr) is cst.BinaryOperation:
            left, right = self.of(expr.left), self.of(expr.right)
            if Kind.TENSOR in (left, right):
                return Kind.TENSOR
            if Kind.DATA in (left, right):
                return Kind.DATA
            if Kind.SIZE in (left, right) and {left, right} <= {Kind.SIZE, Kind.OTHER}:
                return Kind.SIZE
            return Kind.UNKNOWN
        if type(expr) is cst.UnaryOperation:
            inner = self.of(expr.expression)
            if isinstance(expr.operator, cst.Not):
                return Kind.BOOL if inner is not Kind.TENSOR else Kind.TENSOR
            return inner
        if type(expr) is cst.Comparison:
            kinds = [self.of(expr.left)] + [self.of(c.comparator) for c in expr.comparisons]
            ops = [c.operator for c in expr.comparisons]
            if all(isinstance(op, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for op in ops):
                return Kind.BOOL
            if all(isinstance(op, (cst.Equal, cst.NotEqual)) for op in ops) and (
                Kind.NONE in kinds
                or any(
                    isinstance(e, _STRINGS)
                    for e in (expr.left, *(c.comparator for c in expr.comparisons))
                )
            ):
                # `t == None`, `t == "coco"`: Tensor.__eq__ of None or a str is the Python
                # False (torch 2.13; an export of `if t == "coco":` passes)
                return Kind.BOOL
            if Kind.TENSOR in kinds:
                return Kind.TENSOR
            if Kind.DATA in kinds:
                return Kind.DATA
            return Kind.BOOL
        if type(expr) is cst.BooleanOperation:
            sides = {self.of(expr.left), self.of(expr.right)}
            if Kind.TENSOR in sides:
                return Kind.TENSOR
            return Kind.BOOL if sides <= {Kind.BOOL} else Kind.UNKNOWN
        if type(expr) is cst.IfExp:
            a, b = self.of(expr.body), self.of(expr.orelse)
            return a if a == b else Kind.UNKNOWN
        return Kind.UNKNOWN

    def _call(self, call: cst.Call) -> Kind:
        func = call.func
        callee = self._project_callee(func)
        if callee is not None:
            return return_kind(self.model, callee)
        q = self.model.qualname(func)
        if q is not None and self.model.imported_return_kind is not None:
            imported = imported_return_kind(self.model, q)
            if imported is not None:
                return imported
        if q is not None:
            if q in _TORCH_NON_TENSOR:
                return _TORCH_NON_TENSOR[q]
            if q.startswith("builtins."):
                if q in _CONVERTERS and call.args:
                    inner = self.of(call.args[0].value)
                    if inner in (Kind.TENSOR, Kind.DATA):
                        return Kind.DATA  # `int(t)`, `float(t.sum())`: a value out of a tensor
                return {
                    "builtins.len": Kind.SIZE,
                    "builtins.int": Kind.SIZE,
                    "builtins.float": Kind.OTHER,
                    "builtins.bool": Kind.BOOL,
                    "builtins.isinstance": Kind.BOOL,
                    "builtins.hasattr": Kind.BOOL,
                    "builtins.callable": Kind.BOOL,
                }.get(q, Kind.UNKNOWN)
            if q.startswith(_TORCH_TENSOR_PREFIXES):
                return Kind.TENSOR
            if q.startswith("torch.is_") and q.count(".") == 1:
                return Kind.BOOL  # torch.is_autocast_enabled(), torch.is_nonzero() reads data
            if q.startswith(("torch.get_", "torch.set_", "torch.use_")) and q.count(".") == 1:
                return Kind.OTHER
            if q.startswith(_TORCH_NON_TENSOR_PREFIXES):
                return Kind.OTHER
            if q.startswith("torch.") and q.count(".") == 1 and q[6:7].islower():
                return Kind.TENSOR
            if q.startswith(("numpy.", "math.")):
                return Kind.OTHER
            return Kind.UNKNOWN
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            base = self.of(func.value)
            if base in (Kind.TENSOR, Kind.UNKNOWN):
                if method in _DATA_METHODS:
                    return _DATA_METHODS[method]  # whatever has `.numpy()` gives NumPy
                if method == "size" and (base is Kind.TENSOR or len(call.args) <= 1):
                    return Kind.SIZE if call.args else Kind.SHAPE
                if method in _NOT_TENSOR_METHODS:
                    return Kind.UNKNOWN  # a dict/str/list method: not a tensor after all
                if base is Kind.TENSOR:
                    if method in _SIZE_METHODS:
                        return Kind.SIZE
                    if method in _BOOL_METHODS:
                        return Kind.BOOL
                    return Kind.TENSOR
                if method in TENSOR_METHODS:
                    return Kind.TENSOR
            if base is Kind.SHAPE and method == "numel":
                return Kind.SIZE
            if base is Kind.NDARRAY:
                return Kind.NDARRAY  # `.cumsum(0)`, `.astype(...)`: NumPy in, NumPy out
        return Kind.UNKNOWN

    def _project_callee(self, func: cst.BaseExpression) -> FunctionInfo | None:
        """The function of this file a call runs: `helper(x)`, or `self.method(x)` of
        the enclosing class."""
        if type(func) is cst.Name:
            return self.model.functions.get(func.value)
        if (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and self.func is not None
            and self.func.class_name is not None
        ):
            cls = self.model.classes.get(self.func.class_name)
            return cls.methods.get(func.attr.value) if cls is not None else None
        return None


def return_kind(model: SemanticModel, func: FunctionInfo) -> Kind:
    """What a function of the file returns: its annotation (`-> torch.Tensor`), else
    the kind every `return` agrees on (UNKNOWN when they differ or none returns)."""
    key = ("return kind", func.class_name, func.name)
    found = model.memo.get(key)
    if not isinstance(found, Kind):
        model.memo[key] = Kind.UNKNOWN  # recursion guard: a recursive helper is unknown
        found = annotation_kind(func.node.returns)
        if found is None:
            inner = Kinds(model, func)
            kinds = {inner.of(r.value) for r in _returns(func.node.body) if r.value is not None}
            found = kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
        model.memo[key] = found
    used = model.memo.get(RETURN_KINDS_USED)
    if isinstance(used, set):
        used.add((func.class_name, func.name, found))
    return found


_LIBRARY_PREFIXES = ("torch.", "builtins.", "numpy.", "math.", "typing.", "os.", "re.")
_IMPORTED = "<import>"  # the class slot of an imported function in RETURN_KINDS_USED


def imported_return_kind(model: SemanticModel, qualname: str) -> Kind | None:
    """The kind an imported project function returns, None when unknown."""
    if model.imported_return_kind is None or qualname.startswith(_LIBRARY_PREFIXES):
        return None
    answer = model.imported_return_kind(qualname)
    kind = {"tensor": Kind.TENSOR, "other": Kind.OTHER}.get(answer or "")
    used = model.memo.get(RETURN_KINDS_USED)
    if isinstance(used, set):
        used.add((_IMPORTED, qualname, kind))
    return kind


# model.memo key of the set of (class, function, kind) return kinds a block's check used:
# the block's cached findings stay valid while those functions return the same kinds.
RETURN_KINDS_USED = "return kinds used"


def still_returns(
    model: SemanticModel, used: Collection[tuple[str | None, str, Kind | None]]
) -> bool:
    """Whether every function in `used` still exists and returns the kind recorded."""
    for cls_name, name, kind in used:
        if cls_name == _IMPORTED:
            if imported_return_kind(model, name) is not kind:
                return False
            continue
        if cls_name is None:
            func = model.functions.get(name)
        else:
            cls = model.classes.get(cls_name)
            func = cls.methods.get(name) if cls is not None else None
        if func is None or return_kind(model, func) is not kind:
            return False
    return True


def _returns(node: cst.CSTNode) -> list[cst.Return]:
    """The `return` statements of a function body (not of nested defs or lambdas)."""

    out: list[cst.Return] = []
    stack = [node]
    while stack:
        for child in iter_children(stack.pop()):
            t = type(child)
            if t is cst.Return:
                out.append(child)  # type: ignore[arg-type]
            elif t not in _NO_RETURN_INSIDE:
                stack.append(child)
    return out


# Nodes the walk for a function's `return`s does not descend into: nested scopes, and
# expressions (no statement hides in them).
_NO_RETURN_INSIDE = frozenset(
    {
        cst.FunctionDef,
        cst.Lambda,
        cst.ClassDef,
        cst.Call,
        cst.Attribute,
        cst.Name,
        cst.Subscript,
        cst.BinaryOperation,
        cst.Comparison,
        cst.SimpleString,
        cst.Integer,
        cst.Float,
        cst.Tuple,
        cst.List,
        cst.Dict,
    }
)


_CONVERTERS = frozenset({"builtins.int", "builtins.float", "builtins.bool"})


def narrowed_kind(
    model: SemanticModel, ancestors: Sequence[cst.CSTNode], name: cst.Name
) -> Kind | None:
    """The kind an enclosing `if isinstance(name, T):` (or its `else`, or an `elif`
    after it) gives `name`, innermost first; None when no test narrows it."""
    for i in range(len(ancestors) - 1, 0, -1):
        parent, child = ancestors[i - 1], ancestors[i]
        if type(parent) is not cst.If or child is parent.test:
            continue
        tensor = _isinstance_tensor(model, parent.test, name.value)
        if tensor is None:
            continue
        in_body = child is parent.body
        if in_body:
            return Kind.TENSOR if tensor else Kind.OTHER
        if tensor:  # the else/elif of `isinstance(x, torch.Tensor)`
            return Kind.OTHER
    return None


def _isinstance_tensor(model: SemanticModel, test: cst.BaseExpression, name: str) -> bool | None:
    """For `isinstance(name, T)`: True when T is a tensor type, False when it names only
    other types; None when the test is something else."""
    if not (
        type(test) is cst.Call
        and model.qualname(test.func) == "builtins.isinstance"
        and len(test.args) == 2
        and type(test.args[0].value) is cst.Name
        and test.args[0].value.value == name
    ):
        return None
    types = test.args[1].value
    elems = (
        [e.value for e in types.elements] if type(types) in (cst.Tuple, cst.List) else [types]  # type: ignore[attr-defined]
    )
    names = [model.qualname(e) or dotted(e) or "" for e in elems]
    if any(n.rsplit(".", 1)[-1] in _TENSOR_ANNOTATIONS for n in names):
        return True if len(names) == 1 else None
    return False
