"""The JSON-lines protocol between onnxlint and the worker (stdlib only).

One JSON object per line. The parent sends `{"op": ...}` requests on the
worker's stdin; the worker answers `{"ev": ...}` events on a private file
descriptor (its fd 1 is pointed at stderr so user `print`s cannot corrupt the
stream).
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

PROTOCOL_VERSION = 1

# Set to "1" in the worker's environment when it should yield the CPU to an editor
# (the language server): lower priority, and torch keeps one core free.
BACKGROUND_ENV = "ONNXLINT_WORKER_BACKGROUND"
BACKGROUND_NICE = 10


def in_background() -> bool:
    """In the worker: whether it was started in the background (`BACKGROUND_ENV`)."""
    return os.environ.get(BACKGROUND_ENV) == "1"


# Requests (parent -> zygote)
OP_ANALYZE = "analyze"
OP_CANCEL = "cancel"
OP_SHUTDOWN = "shutdown"

# Events (zygote/child -> parent)
EV_READY = "ready"  # zygote is warm: {"torch": ..., "python": ..., "warm_s": ...}
EV_PROGRESS = "progress"  # {"id", "phase", "percent"}
EV_RESULT = "result"  # {"id", "result": {...}} sent by the child before it exits
EV_END = "end"  # {"id", "status", "detail", "peak_rss", "exit"} sent by the zygote
EV_FATAL = "fatal"  # the zygote itself cannot work (e.g. torch missing)

# A child's result with this key set is not the answer: the zygote runs the analysis
# again in a fresh child with the key set in the target (the model is built with real
# tensors from the start).
RETRY_REAL_TENSORS = "real_tensors"
NOT_REACHED = "not reached by this run"
"""`failed["load"]` of a script run that made other export calls and ended without this one."""

# End statuses
STATUS_OK = "ok"
STATUS_CRASHED = "crashed"
STATUS_TIMEOUT = "timeout"
STATUS_MEMORY = "memory"
STATUS_CANCELLED = "cancelled"

# Finding kinds: the worker says what happened, the parent picks the OLX8xx code.
KIND_GRAPH_BREAK = "graph-break"
KIND_DATA_DEPENDENT = "data-dependent-guard"
KIND_EXPORT_FAILURE = "export-failure"
KIND_DIM_SPECIALIZED = "dynamic-dim-specialized"
KIND_UNSUPPORTED_OP = "unsupported-aten-op"
KIND_CUSTOM_OP_NO_FAKE = "custom-op-without-fake-impl"
KIND_CUSTOM_OP_NO_TRANSLATION = "custom-op-without-translation"
KIND_TRANSLATION_FAILURE = "translation-failure"
KIND_CHECKER_FAILURE = "onnx-checker-failure"
KIND_VERIFY_MISMATCH = "verification-mismatch"
KIND_VERIFY_FAILURE = "verification-failure"
KIND_TARGET_ERROR = "target-error"
KIND_FAKE_MODE_LIMIT = "fake-mode-limitation"
KIND_TORCH_UNSUPPORTED = "torch-version-unsupported"
KIND_OUTPUT_DIM_SPECIALIZED = "output-dim-specialized"
KIND_ORT_MEMORY_LEAK = "onnxruntime-memory-leak"
KIND_ORT_MEMORY_OPTIONS = "onnxruntime-memory-options"
KIND_ALIASED_INPUTS = "aliased-example-inputs"
KIND_SCALAR_INPUT = "python-scalar-example-input"
KIND_NAME_COLLISION = "onnx-name-collision"
KIND_DIM_RELATION = "dynamic-dim-relation"
KIND_AXES_MOVED = "dynamic-axes-moved"
KIND_OPSET_KEPT = "opset-conversion-failed"
KIND_TRAINING_MODE = "export-fails-in-training-mode"
KIND_SYMBOLIC_IGNORED = "autograd-symbolic-ignored"
KIND_EXPORTED_TRAINING = "exported-in-training-mode"

PHASES = ("load", "memory", "explain", "export", "decompose", "translate", "verify")


def encode(obj: dict[str, Any]) -> bytes:
    """One protocol line; `default=str` so an odd value never kills the stream."""
    return (json.dumps(obj, default=str, separators=(",", ":")) + "\n").encode("utf-8")


def decode(line: bytes | str) -> dict[str, Any]:
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError(f"protocol line is not an object: {line!r:.200}")
    return data


def write(stream: IO[bytes], obj: dict[str, Any]) -> None:
    stream.write(encode(obj))
    stream.flush()
