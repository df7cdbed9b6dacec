"""What a script stop says: why the run could not go on, in plain words, and what to do.

A bare `AssertionError` names the assertion; an `exit()` with no code says what the script
printed before it; a module that a release removed says which release and what replaced
it; a call to an export function this torch does not have says that the call fails here.
"""

from __future__ import annotations

import inspect
import io
import linecache
import os
import re
from typing import Any

import torch

# Modules that releases removed, which projects written for older releases still import:
# module -> (which release removed it, what to use instead).
REMOVED_MODULES: dict[str, tuple[str, str]] = {
    "torchvision.transforms.functional_tensor": (
        "torchvision 0.17 removed it (deprecated since 0.15)",
        "its functions are in torchvision.transforms.functional (for example "
        "rgb_to_grayscale); change the import, or use a release of the library that "
        "imports it made for torchvision 0.17 or later",
    ),
    "torch._six": (
        "torch 2.0 removed it",
        "use the standard library instead (math.inf, str for string_classes, collections.abc)",
    ),
}

# Export functions that are gone from recent torch (the capture puts them back for the run).
REMOVED_CALLS: dict[str, str] = {
    "torch.onnx._export": "removed in torch 2.9",
    "torch.onnx.dynamo_export": "use torch.onnx.export(..., dynamo=True)",
}


def removed_call(call: Any) -> str | None:
    """What to say when the script's own export call is to a function this torch lacks
    (the analysis goes on as if it were `torch.onnx.export`), else None."""
    if call.original is not None:
        return None
    name = call.name
    why = REMOVED_CALLS.get(name, "")
    return (
        f"`{name}` does not exist in torch {torch.__version__}"
        f"{f' ({why})' if why else ''}: the script's own call at this line raises "
        "AttributeError when it runs, so it exports nothing (even where the script catches "
        "the error and exits 0). The analysis is of what torch.onnx.export would export "
        "from the same arguments: call torch.onnx.export instead."
    )


def refused_arguments(call: Any) -> str | None:
    """What to say when the script's own export call passes arguments this torch's function
    does not take (`use_external_data_format=`, `enable_onnx_checker=`, `example_outputs=`,
    written for older torch): the call raises TypeError before it exports anything; the
    analysis goes on with the arguments the function takes. Else None."""
    if call.original is None:
        return None
    try:
        inspect.signature(call.original).bind(*call.args, **call.kwargs)
    except TypeError as e:
        return (
            f"`{call.name}` of torch {torch.__version__} refuses this call's arguments: the "
            f"script's own call at this line raises TypeError ({e}) when it runs, so it "
            "exports nothing (even where the script catches the error and exits 0). The "
            "analysis is of the same call without them: remove them, or pass what replaced "
            "them."
        )
    except ValueError:  # a signature inspect cannot read: nothing to say
        return None
    return None


def unsaveable_destination(call: Any, arguments: dict[str, Any]) -> str | None:
    """What to say when the script's own `torch.onnx.export` on the dynamo exporter is given
    an open file (`with open(path, "wb") as f:`, as the TorchScript exporter took it): with
    `external_data=True`, the default, torch saves to a path, so the call exports and then
    raises TypeError at the save, and writes nothing. A `BytesIO` is taken (deprecated), and
    `external_data=False` saves into the file. Else None."""
    if call.kind != "onnx" or call.kwargs.get("dynamo") is False:
        return None
    f = arguments.get("f")
    if f is None or isinstance(f, (str, bytes, os.PathLike, io.BytesIO)):
        return None
    if not arguments.get("external_data", True):
        return None
    kind = type(f).__name__
    return (
        f"the script's own call passes an open file ({kind}) as `f`: torch.onnx.export of "
        f"torch {torch.__version__} (the dynamo exporter) saves to a path, so this call "
        'exports and then raises TypeError at the save ("expected str, bytes or '
        f"os.PathLike object, not {kind}\"), and writes nothing. Pass the file's path, or "
        "`external_data=False` to save into the open file as the TorchScript exporter did."
    )


# What torch.onnx.export (the dynamo exporter, torch 2.13's default) imports when it runs.
EXPORTER_IMPORTS = ("onnx", "onnxscript", "onnx_ir", "ml_dtypes")


def shadowed_exporter(call: Any, shadowed: list[str]) -> str | None:
    """What to say when a package of the project takes the name of a library that the
    exporter imports (MODNet's `onnx/`, run as `python -m onnx.export_onnx`): the run
    imported the project's package under that name, and torch's exporter then imports it
    in place of the library, so the script's call fails when it runs; else None."""
    names = [n for n in shadowed if n in EXPORTER_IMPORTS]
    if not names or call.kind not in ("onnx", "dynamo_export"):
        return None
    if call.kwargs.get("dynamo") is False:
        return None  # the TorchScript exporter does not import them
    folders = ", ".join(f"`{n}/`" for n in names)
    return (
        f"the project's own package {folders} takes the name of the library that "
        f"torch.onnx.export imports in torch {torch.__version__}: run this way, the "
        f"script imported the project's `{names[0]}` first, so the exporter's `import "
        f"{names[0]}` gets the project's package and this call fails (ModuleNotFoundError: "
        f"No module named '{names[0]}.…'). The analysis is of what the call would export "
        "with the library in place: rename the project's folder, or run the script so that "
        "it is not imported under that name."
    )


def assertion_text(error: AssertionError, text: str) -> str:
    """`assert <condition>` failed, with the condition's source (a bare AssertionError says
    nothing by itself)."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    source = ""
    if tb is not None:
        source = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).strip()
    said = f"`{source}` failed" if source.startswith("assert") else "an assertion failed"
    return f"{said}: {text}" if text else said


def exit_text(
    exit_code: SystemExit, where: str, usage: str, stdout: str, stderr: list[str]
) -> tuple[str, list[str]]:
    """(message, notes) for a script that ended itself before the export call."""
    code = exit_code.code
    printed = [ln.strip() for ln in (*stdout.strip().splitlines(), *stderr) if ln.strip()]
    last = printed[-1] if printed else ""
    if usage:
        return f"the script exited (exit code {code}) before {where}: {usage.strip()}", []
    if isinstance(code, str):
        return f"the script exited before {where}: {code}", []
    how = f"with exit code {code}" if code not in (None, 0) else "by itself"
    msg = f"the script ended {how} (exit() or sys.exit()) before {where}"
    caught = swallowed_error("\n".join(stderr), stdout) if code not in (None, 0) else ""
    if caught:
        msg += f", after printing the error: {caught}"
    elif last:
        msg += f", after printing: {last!r}"
    notes = [
        "A real run ends there too: the script chose to stop (often after checking that a "
        "file or a setting it needs is there). Give it what it checks for in `argv`, or "
        "declare a factory (`# onnxlint: target`)."
    ]
    return msg, notes


def advice(error: BaseException) -> list[str]:
    """Advice for errors that say too little by themselves; [] when none applies."""
    if isinstance(error, ModuleNotFoundError) and error.name:
        name = error.name
        for removed, (when, instead) in REMOVED_MODULES.items():
            if name == removed or name.startswith(removed + "."):
                return [
                    f"{removed!r} is not a package to install: {when}. A real run stops "
                    f"here too. {instead[0].upper()}{instead[1:]}."
                ]
        parent = name.rpartition(".")[0]
        if parent:
            import importlib.util

            try:
                found = importlib.util.find_spec(parent.split(".")[0]) is not None
            except (ImportError, ValueError):
                found = False
            if found:
                top = parent.split(".")[0]
                return [
                    f"{top!r} is installed, but this release of it has no module {name!r}: "
                    "the code was written for another release. A real run stops here too; "
                    "install the release it was written for, or update the import."
                ]
    return []


_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception|Interrupt)\b:?.*)$")


def swallowed_error(stderr: str, stdout: str) -> str:
    """The last `SomeError: message` line the script printed (a traceback that a decorator
    such as loguru's `logger.catch`, or an `except` that prints, kept from ending the run),
    or ""."""
    for text in (stderr, stdout):
        for line in reversed(text.splitlines()):
            m = _ERROR_LINE.match(line)
            if m and len(m.group(1)) > len("Error"):
                return m.group(1).strip()[:300]
    return ""
