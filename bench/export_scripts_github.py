"""Projects' own export scripts from GitHub, run the way their READMEs say (issue 26).

    python bench/export_scripts.py fetch    # each pinned commit, from the fetched snapshot
    python bench/export_scripts.py env      # a venv over this Python + what the scripts import
    python bench/export_scripts.py run      # onnxlint analyze SCRIPT --argv <README's args>
    python bench/export_scripts.py truth    # the same command, run for real (random weights)
    python bench/export_scripts.py report   # analysed / stopped (cause, line, real run) / wrong

The corpus rule, fixed on 2026-11-26 before the first run (`bench/README.md` says it too):

1. Domains, in this order: detection, segmentation, pose, face, speech, matting, depth,
   tracking, super-resolution, style transfer, OCR, classification.
2. Per domain, the query "<domain> pytorch export onnx README python export script" in the
   search tool's code corpus, then "<domain> export_onnx.py torch.onnx.export", then, for a
   domain still short of 3, "<domain> onnx export script README usage python". The results
   that name a repository, in rank order, are the candidates (a repository once).
3. A candidate's snapshot (the search tool's `fetch`, newest stored commit: the pin) is taken
   when a README or other doc of the repository (`*.md`, `*.rst`, `*.txt`, `*.sh`, `*.cmd`,
   the root's README first) gives a command `python [-m] FILE ARGS` whose FILE or ARGS say
   `onnx` or `export`, FILE being a program of the repository that calls an ONNX export
   (`torch.onnx.export` / `_export` / `dynamo_export`, `.export(format="onnx")`,
   `.to_onnx(`), itself or in a module of the repository it imports. Its ARGS are the run's
   argv, as written (placeholders such as `$1` or `path/to/x` kept). Else, the file the search
   result named, when it is such a program: its own usage line's ARGS, else none.
4. At most 3 a domain, 4 when three queries a domain leave the corpus under 30; a script
   byte-identical to one already taken (a fork's copy) is skipped. Nothing is dropped after a
   run. The working directory is the folder the command is given for (the root, or the
   doc's folder when FILE is relative to it).

The snapshots come from the search tool's `fetch` (`/work/.mirror/<owner>+<name>/repo`);
`fetch` here exports each pinned commit into `bench/corpus/github/` (gitignored: the
fetched code is never committed). A repository missing there is listed with what to fetch.

`truth` runs the same command for real, in the same venv: weights are the model's own
initialisation (a checkpoint that is not here reads as an empty one, `load_state_dict`
keeps the initial weights), `.cuda()` stays on the CPU, no network. Every ONNX export call
is wrapped to record its real outcome (reached, exported, or the exception), so that a
script that swallows the error is still seen. Where the real run stops before its export
call, that is where a real run with the weights absent stops.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MIRROR = Path("/work/.mirror")
CORPUS = HERE / "corpus" / "github"
VENV = CORPUS / "_venv"
RESULTS = HERE / "results"
RESULT_FILE = RESULTS / os.environ.get("ONNXLINT_BENCH_RESULT", "export-scripts-github.json")
TRUTH_FILE = RESULTS / os.environ.get("ONNXLINT_BENCH_TRUTH", "export-scripts-github-truth.json")


@dataclass(frozen=True)
class GitHubScript:
    """One project's export script, pinned, with its README's command line."""

    domain: str
    repo: str  # owner/name
    commit: str
    script: str  # path in the repository
    argv: str  # the documented command's arguments, as written
    doc: str  # where the command is documented ("(none)": no documented arguments)
    module: bool = False  # documented as `python -m pkg.module`
    root: str = ""  # the folder the command runs from, inside the repository

    @property
    def folder(self) -> Path:
        return CORPUS / self.repo.replace("/", "+")

    @property
    def cwd(self) -> Path:
        return self.folder / self.root

    @property
    def args(self) -> list[str]:
        return shlex.split(self.argv, comments=True)


S = GitHubScript
SCRIPTS: list[GitHubScript] = [
    S(
        "detection",
        "LuZhengy-e/mmdetection",
        "fd97f1ab29ed0f325f18b1af30d74cfd105408ad",
        "tools/deployment/pytorch2onnx.py",
        "$1 $2 --output-file $3 --input-img demo/demo.jpg --test-img tests/data/color.jpg "
        "--shape 800 800 --show --dynamic-export --cfg-options model.test_cfg.deploy_nms_pre=-1",
        "export_onnx.sh",
    ),
    S(
        "detection",
        "realphongha/simple-image-classification",
        "c2f404de1af55d5f462781f170c2f55d728abdca",
        "export.py",
        "--weights outputs/train/gender95/best.pth --config outputs/train/gender95/configs.txt "
        "--format onnx --output outputs/train/gender95/Shufflenetv2_1x_gender_fs15_30eps_5e-4.onnx "
        "--device cpu --opset 11",
        "scripts/export.sh",
    ),
    S(
        "detection",
        "TexasInstruments/edgeai-tensorlab",
        "f272548ef0fe96046f1bf2c3833e040a1ecf8e44",
        "edgeai-hf-transformers/examples/pytorch/image-classification/run_image_classification.py",
        "--trust_remote_code True --dataset_name data/datasets/imagenet2012 "
        "--model_name_or_path ${MODEL_NAME_OR_PATH} --output_dir outputs "
        "--remove_unused_columns False --do_train True --do_eval True "
        "--per_device_train_batch_size 128 --per_device_eval_batch_size 128 "
        "--overwrite_output_dir --size 256 --crop_size 224 --rescale_factor 1.0 "
        '--image_mean "123.675 116.28 103.53" --image_scale "0.017125 0.017507 0.017429" '
        "--label_names labels --ignore_mismatched_sizes True --dataloader_drop_last True "
        "--save_strategy no --do_onnx_export True --dataloader_num_workers 12 --quantization 3 "
        "--quantize_type PTQ",
        "edgeai-hf-transformers/run_image_classification_test.sh",
        root="edgeai-hf-transformers",
    ),
    S(
        "detection",
        "Itssubho-cache/edge-object-detection-tensorrt",
        "5f92bd595df0af75b646f14631a5df94771812ea",
        "scripts/export_to_onnx.py",
        "",
        "(none)",
    ),
    S(
        "segmentation",
        "PINTO0309/human-instance-segmentation",
        "b81e093f2ca2eb35024abf66281ebc197869252a",
        "export_hierarchical_instance_peopleseg_onnx.py",
        "experiments/*/checkpoints/best_model_b0_*.pth --output models/b0_model.onnx "
        "--image_size 640,640",
        "README.md",
    ),
    S(
        "segmentation",
        "RightTr/RIGHT-Infer",
        "37960688e7cb765ed153f6def1e76b843c35fd85",
        "yolov8/export.py",
        "",
        "(none)",
    ),
    S(
        "segmentation",
        "daveSkkr/VideoSegmentation",
        "fb7a5b1f2457ce83af44183de299654ea05c28b0",
        "unet/ONNX_Export.py",
        "",
        "(none)",
    ),
    S(
        "pose",
        "nnn112358/drowsiness_yolo11-pose",
        "d161a7a7133b49f661ad20370d51a0a0da9aae36",
        "model_convert/yolo11-pose_nms_export.py",
        "",
        "(none)",
    ),
    S(
        "pose",
        "StepMan91/RealsenseBodyPose",
        "dcb43c347481dc98d5f7ff7ffa4e27acbaa14ca0",
        "ThirdParty/TensorRT-8.6.1.6/samples/sampleOnnxMnistCoordConvAC/mnist_coord_conv_train.py",
        "--save-onnx",
        "ThirdParty/TensorRT-8.6.1.6/samples/sampleOnnxMnistCoordConvAC/README.md",
        root="ThirdParty/TensorRT-8.6.1.6/samples/sampleOnnxMnistCoordConvAC",
    ),
    S(
        "face",
        "tamoharu/YOLOv8-example",
        "365bbf37df32399f00207fd025cf151bd76cc554",
        "modules/export_onnx.py",
        "",
        "(none)",
    ),
    S(
        "face",
        "Alen-Chen/MobileFaceNet",
        "1531ce13642332fa846cdd5a577a23469c8fee8a",
        "convert2onnx.py",
        "",
        "(none)",
    ),
    S(
        "speech",
        "OgrodowskiJedrzej/audio-artifacts-classification",
        "08379c3909b24e91d43154f1a4182bff4f3549cd",
        "scripts/conversion_to_onnx.py",
        "",
        "(none)",
    ),
    S(
        "speech",
        "William1617/ctc_kws",
        "20c7975e1f0c7b5a1d17ff4aa0b3d859ffa5fc48",
        "bin/export_onnx.py",
        "",
        "(none)",
    ),
    S(
        "speech",
        "ruwedmushraff16/Text-detection-and-recognition-in-digital-videos",
        "fc191c4dfe0bc6465b60e9d0687ebe386f35c623",
        "convert.py",
        "",
        "(none)",
    ),
    S(
        "speech",
        "k2-fsa/icefall",
        "36e0420c7e3e849a25b3d24dbf913c424f3d23c9",
        "icefall/rnn_lm/export-onnx.py",
        "--exp-dir ./icefall-librispeech-rnn-lm/exp --epoch 99 --avg 1 --vocab-size 500 "
        "--embedding-dim 2048 --hidden-dim 2048 --num-layers 3 --tie-weights 1",
        "icefall/rnn_lm/export-onnx.sh",
        root="icefall/rnn_lm",
    ),
    S(
        "matting",
        "WuChenDi/MODNet",
        "0df0004de6d35a8bca9c595d37aa668f61369ac9",
        "onnx/export_onnx.py",
        "--ckpt-path=pretrained/modnet_photographic_portrait_matting.ckpt "
        "--output-path=pretrained/modnet_photographic_portrait_matting.onnx",
        "onnx/README.md",
        module=True,
    ),
    S(
        "matting",
        "erpapa/MODNet",
        "36a99495225a642c12e82c68e824dffc0d3a3425",
        "onnx/export_onnx.py",
        "--ckpt-path=pretrained/modnet_photographic_portrait_matting.ckpt "
        "--output-path=pretrained/modnet_photographic_portrait_matting.onnx",
        "onnx/README.md",
        module=True,
    ),
    S(
        "matting",
        "ZHKKKe/MODNet",
        "28165a451e4610c9d77cfdf925a94610bb2810fb",
        "onnx/export_onnx.py",
        "--ckpt-path=pretrained/modnet_photographic_portrait_matting.ckpt "
        "--output-path=pretrained/modnet_photographic_portrait_matting.onnx",
        "onnx/README.md",
        module=True,
    ),
    S(
        "depth",
        "devonsuper/monodepth2",
        "2ca8f17f068973f82ed27af6d0edbd2ab5c4db48",
        "export_onnx.py",
        "--model_name=mono+stereo_640x192",
        "README.md",
    ),
    S(
        "depth",
        "yester31/TensorRT_Examples",
        "1e48fd0fa6a574d134dc2c31b3827d7a6fc420f9",
        "general_models/BEN2/onnx_export.py",
        "",
        "general_models/BEN2/README.md",
        root="general_models/BEN2",
    ),
    S(
        "tracking",
        "naziherrahel/Bachelor_project",
        "060692186682c9c09b02063207215f021ae3958b",
        "yolo_export.py",
        "",
        "(none)",
    ),
    S(
        "tracking",
        "ifzhang/ByteTrack",
        "d1bf0191adff59bc8fcfeaa0b33d3d1642552a99",
        "tools/export_onnx.py",
        "--output-name bytetrack_s.onnx -f exps/example/mot/yolox_s_mix_det.py "
        "-c pretrained/bytetrack_s_mot17.pth.tar",
        "deploy/ONNXRuntime/README.md",
    ),
    S(
        "super-resolution",
        "jiwoong-choi/EDSR-PyTorch",
        "e025cc246210dc2c1c742e78ff0185069c578a18",
        "src/onnxport.py",
        "--model EDSR --pre_train download --cpu --res_scale 0.1 --n_resblocks 32 --n_feats 256 "
        "--scale 2 --batches-per-step 9 --width 80 --height 80 --pad-factor 2",
        "src/onnxport.sh",
        root="src",
    ),
    S(
        "super-resolution",
        "ilinwgl/ModelDeployment",
        "ca1c0ec24f20c1ba4f14c1d137d9b0a8abd29704",
        "ONNX_Model/srcnn/dynamic_scale/pytorch2onnx.py",
        "",
        "(none)",
    ),
    S(
        "style-transfer",
        "HajarHAMDOUCH01/Fast-neural-style-transfer",
        "1e609550976fba65cd6e4e28f137b255b5a666eb",
        "onnx_version/onnx_model.py",
        "",
        "(none)",
    ),
    S(
        "style-transfer",
        "kleinicke/onnx_small_style",
        "8da20025c5e0f41f664d41e97ffc7dc1a80eb378",
        "neural_style/neural_style.py",
        "eval --content-image images/content-images/birds135.jpeg "
        "--model model/rain_princess.model "
        "--output-image results/rain135.jpg --cuda 0 --export_onnx model/rain135.onnx",
        "createModels.sh",
    ),
    S(
        "ocr",
        "sesmond/pytorchOCR",
        "d599ae0d812928cad0aa126d1117007117dc3455",
        "script/pytorch_to_onnx.py",
        "--config ./config/det_PSE_mobilev3.yaml --model_path "
        "checkpoint/ag_PSE_bb_mobilenet_v3_small_he_FPN_Head_bs_2_ep_50_logs/PSE_0.pth.tar "
        "--img_path ./data/icdar2015/test.images/img_1.jpg --save_path ./onnx/PSEnet_001.onnx "
        "--batch_size 2 --max_size 1536 --algorithm PSE --add_padding",
        "bin/convert_onnx.sh",
    ),
    S(
        "ocr",
        "realphongha/pose-classification",
        "71e38669e266e2f4dedd1df8c76566b87a791b0a",
        "export.py",
        "--weights weights/fc_net.pth --config configs/exam_ds/fc_net.yaml --format onnx "
        "--file weights/fc_net.onnx --device cpu --batch 1 --opset 12",
        "scripts/export_onnx.cmd",
    ),
    S(
        "classification",
        "YCAyca/MLFLOW-Tutorial",
        "efee7507afe7d2e21e1ad75c8a8dbb56ff068c25",
        "scripts/export_onnx.py",
        "",
        "(none)",
    ),
    S(
        "classification",
        "Dhruv23/DNNPartitioning",
        "b3068f4a92ab3a9b421ac5546655952235489c92",
        "ResNet50-to-ONNX.py",
        "",
        "(none)",
    ),
    S(
        "classification",
        "void-programmer-0-1/Pytorch-Cat-Dog-Classifier",
        "bef6ed690abd2c2f717631dc255c81515154ae13",
        "WebApp/pet/For-React/torch2onnx.py",
        "",
        "(none)",
    ),
    S(
        "face",
        "wonseok289/AIsystem-2502",
        "68c4ae3860be0d9830547a825d32e6c98e2edb13",
        "DockerFRTriton/convert_to_onnx.py",
        "--weights-path weights/your_fr_model.pth "
        "--onnx-path model_repository/fr_model/1/model.onnx",
        "DockerFRTriton/README.md",
        root="DockerFRTriton",
    ),
]
del S

# What the scripts import beyond torch and this Python's packages: installed by `env` into
# VENV (a venv over this Python, --system-site-packages), pinned, constrained to torch 2.13.0.
DEPS = [
    "setuptools<81",
    "onnxsim==0.4.36",
    "onnx-graphsurgeon",
    "opencv-python-headless",
    "loguru==0.7.3",
    "einops==0.8.2",
    "torchsummary==1.5.1",
    "pyyaml",
    "pillow",
    "matplotlib",
    "scipy",
    "tqdm",
    "py-cpuinfo",
    "ultralytics-thop",
    "psutil",
    "polars",
    "pandas",
    "tabulate",
    "thop",
    "easydict",
    "yacs",
    # after the first run, each a stop at an import that installs beside torch 2.13 (pinned):
    "tensorboard==2.21.0",  # PINTO0309/human-instance-segmentation
    "typeguard==4.6.1",  # William1617/ctc_kws
    "imageio==2.38.1",  # jiwoong-choi/EDSR-PyTorch
    "lhotse==1.33.0",  # k2-fsa/icefall (k2 itself has no build for torch 2.13)
    "swanlab==0.10.3",  # WuChenDi/MODNet
    "evaluate==0.4.6",  # TexasInstruments/edgeai-tensorlab
    "hydra-core==1.3.2",
    "pycocotools==2.0.11",  # PINTO0309/human-instance-segmentation (the real run's import)
    "scikit-image==0.26.0",  # devonsuper/monodepth2 (the real run's import)
    "seaborn==0.13.2",  # PINTO0309/human-instance-segmentation
]
# With --no-deps (their requirements would replace torch or pull a CUDA torchvision).
NO_DEPS = ["ultralytics==8.3.235"]


def _mirror(repo: str) -> Path | None:
    base = MIRROR / repo.replace("/", "+") / "repo"
    for git_dir in (base, base / ".git"):
        if (git_dir / "objects").is_dir():
            return git_dir
    return None


def fetch(args: argparse.Namespace) -> None:
    """Export each pinned commit of the fetched snapshots into CORPUS."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    missing = []
    for s in SCRIPTS:
        if (s.folder / s.script).is_file():
            print(f"{s.repo}: present")
            continue
        git_dir = _mirror(s.repo)
        if git_dir is None:
            missing.append(s.repo)
            continue
        if s.folder.exists():
            shutil.rmtree(s.folder)
        s.folder.mkdir(parents=True)
        absent = _export(git_dir, s.commit, s.folder)
        if absent is None:
            print(f"{s.repo}: commit {s.commit} not in the snapshot", file=sys.stderr)
            continue
        said = f" ({absent} files absent from the snapshot: 4 MiB or more)" if absent else ""
        print(f"{s.repo}@{s.commit[:10]}: exported{said}")
    for repo in missing:
        print(
            f"{repo}: no snapshot here; fetch github:{repo} with the search tool", file=sys.stderr
        )


def _export(git_dir: Path, commit: str, folder: Path) -> int | None:
    """The commit's files into `folder` (a snapshot lacks files of 4 MiB and more: those are
    left out); how many were absent, or None when the commit is not there."""
    git = ["git", "--git-dir", str(git_dir)]
    tree = subprocess.run([*git, "ls-tree", "-r", "-z", commit], capture_output=True)
    if tree.returncode != 0:
        return None
    entries = []
    for item in tree.stdout.split(b"\0"):
        if not item:
            continue
        meta, path = item.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode, sha.decode(), path.decode("utf-8", "surrogateescape")))
    batch = subprocess.run(
        [*git, "cat-file", "--batch"],
        input="".join(f"{sha}\n" for _, sha, _ in entries).encode(),
        capture_output=True,
    ).stdout
    absent = 0
    pos = 0
    for mode, _sha, path in entries:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            absent += 1
            continue
        size = int(header[2])
        data = batch[pos : pos + size]
        pos += size + 1
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":  # a symbolic link, as a checkout makes it (icefall's recipes)
            target.unlink(missing_ok=True)
            target.symlink_to(data.decode("utf-8", "surrogateescape"))
            continue
        target.write_bytes(data)
        if mode == b"100755":
            target.chmod(0o755)
    return absent


def env(args: argparse.Namespace) -> None:
    """VENV over this Python, with DEPS and NO_DEPS, and torchvision (see export_scripts)."""
    import export_scripts

    if not (VENV / "bin" / "python").is_file():
        subprocess.run(
            [sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], check=True
        )
    freeze = subprocess.run(
        [sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    keep = [ln for ln in freeze if ln.split("==")[0].lower() in export_scripts.PINNED]
    constraints = CORPUS / "_constraints.txt"
    constraints.write_text("\n".join(["torch==2.13.0", *keep]) + "\n")
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(constraints)]
    subprocess.run([*pip, *DEPS], check=True)
    subprocess.run([*pip, "--no-deps", *NO_DEPS], check=True)
    # what this interpreter sees (onnxlint's own dependencies: onnxscript, onnxruntime, ...)
    # comes after the venv's own packages
    purelib = subprocess.run(
        [
            str(VENV / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    seen = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    (Path(purelib) / "zz-onnxlint-bench-base.pth").write_text("\n".join(seen) + "\n")
    export_scripts.VENV = VENV  # the torchvision workaround, in this venv
    export_scripts._torchvision(pip)
    out = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"{VENV.relative_to(ROOT)}: torch {out}")
    if not out.startswith("2.13.0"):
        sys.exit("torch moved: the bench expects torch 2.13.0")


def _python() -> str:
    venv_python = VENV / "bin" / "python"
    return str(venv_python) if venv_python.is_file() else sys.executable


def _src() -> str:
    """The onnxlint the runs use: this checkout, or ONNXLINT_BENCH_SRC (another checkout, to
    measure the code before a change)."""
    return os.environ.get("ONNXLINT_BENCH_SRC") or str(ROOT)


def _env() -> dict[str, str]:
    return dict(
        os.environ,
        PYTHONPATH=_src(),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        YOLO_OFFLINE="1",
        MPLBACKEND="Agg",
    )


def _key(s: GitHubScript) -> str:
    return f"{s.repo}/{s.script}"


def _selected(args: argparse.Namespace) -> list[GitHubScript]:
    only = getattr(args, "only", None) or []
    return [s for s in SCRIPTS if not only or any(o in _key(s) for o in only)]


def _analyze(s: GitHubScript, timeout: float) -> dict[str, Any]:
    script = os.path.relpath(s.folder / s.script, s.cwd)
    command = [_python(), "-m", "onnxlint", "analyze", script, "--format", "json", "--no-cache"]
    command.append(f"--argv={shlex.join(s.args)}")  # (an argv may start with "--")
    start = time.monotonic()
    try:
        proc = subprocess.run(
            ["nice", "-n", "10", *command],
            cwd=s.cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return {"rc": None, "timeout": True, "wall": round(time.monotonic() - start, 1)}
    record: dict[str, Any] = {"rc": proc.returncode, "wall": round(time.monotonic() - start, 1)}
    try:
        record["json"] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        record["stdout"] = proc.stdout[-4000:]
    record["stderr"] = proc.stderr[-4000:]
    return record


def _save(path: Path, runs: dict[str, Any], only: bool) -> None:
    import export_scripts

    RESULTS.mkdir(parents=True, exist_ok=True)
    previous = json.loads(path.read_text())["runs"] if only and path.is_file() else {}
    commit = export_scripts._git_commit()
    if os.environ.get("ONNXLINT_BENCH_SRC"):
        src = os.environ["ONNXLINT_BENCH_SRC"]
        head = subprocess.run(
            ["git", "-C", src, "rev-parse", "HEAD"], capture_output=True, text=True
        )
        commit = f"{head.stdout.strip() or 'unknown'} (ONNXLINT_BENCH_SRC={src})"
    stamp = {"commit": commit, "python": _python(), "when": time.ctime()}
    path.write_text(json.dumps({"stamp": stamp, "runs": {**previous, **runs}}, indent=1))


def run(args: argparse.Namespace) -> None:
    runs: dict[str, Any] = {}
    for s in _selected(args):
        if not (s.folder / s.script).is_file():
            print(f"{_key(s)}: not fetched (run `fetch`)", file=sys.stderr)
            continue
        runs[_key(s)] = _analyze(s, args.timeout)
        print(f"{_key(s)}: {_outcome(runs[_key(s)])[0]}", flush=True)
    _save(RESULT_FILE, runs, bool(args.only))


# The real run: the script as `python SCRIPT ARGS` (or `python -m`), with every export call
# recorded and weights that are not here replaced by the model's own initialisation.
TRUTH_RUNNER = r"""
import builtins, importlib, io, json, os, runpy, socket, sys, traceback

REPORT = os.environ["ONNXLINT_TRUTH_REPORT"]
SCRIPT = os.path.realpath(sys.argv[1])
MODULE = os.environ.get("ONNXLINT_TRUTH_MODULE")
sys.argv = sys.argv[1:]
# as `python SCRIPT` (its folder first) or `python -m MODULE` (the working folder first),
# with the project root after it, as onnxlint's run has it (a README's `pip install -e .`
# or `export PYTHONPATH=$PWD`)
sys.path[0] = os.getcwd() if MODULE else os.path.dirname(SCRIPT)
sys.path.append(os.getcwd())
if MODULE:
    importlib.import_module(MODULE.split(".")[0])  # the project's package, before torch
import torch
calls = []
WEIGHTS = (".pt", ".pth", ".pth.tar", ".ckpt", ".bin", ".tar", ".pkl", ".model", ".safetensors")

def first(e):
    said = str(e).strip()
    return f"{type(e).__name__}: {said.splitlines()[0] if said else ''}"

def is_weights(p):
    return isinstance(p, (str, os.PathLike)) and str(p).lower().endswith(WEIGHTS)

def script_line():
    f = sys._getframe(1)
    while f is not None:
        if os.path.realpath(f.f_code.co_filename) == SCRIPT:
            return f.f_lineno
        f = f.f_back
    return None

def wrap(mod, name):
    real = getattr(mod, name, None)
    if real is None:
        return
    def export(*a, **k):
        entry = {"call": f"{mod.__name__}.{name}", "line": script_line()}
        calls.append(entry)
        f = k.get("f", a[2] if len(a) > 2 else None)
        if isinstance(f, (str, os.PathLike)) and os.path.dirname(os.fspath(f)):
            # the folder the output goes to is the user's (where the weights are, or
            # Colab's /content): made here, so that the export itself is what is judged
            os.makedirs(os.path.dirname(os.fspath(f)), exist_ok=True)
        try:
            out = real(*a, **k)
        except BaseException as e:
            entry["error"] = first(e)
            raise
        entry["ok"] = True
        return out
    setattr(mod, name, export)

wrap(torch.onnx, "export")
onnx_getattr = getattr(torch.onnx, "__getattr__", None)
def missing(name):
    # a call to an export function this torch lacks fails at its line (AttributeError),
    # also where the script's own decorator swallows the error
    if name in ("_export", "dynamo_export"):
        calls.append({
            "call": f"torch.onnx.{name}",
            "line": script_line(),
            "error": f"AttributeError: module 'torch.onnx' has no attribute '{name}'",
        })
    if onnx_getattr is not None:
        return onnx_getattr(name)
    raise AttributeError(f"module 'torch.onnx' has no attribute '{name}'")
torch.onnx.__getattr__ = missing
real_load = torch.load
class Empty(dict):
    def __missing__(self, k):
        return Empty()
real_exists, real_isfile = os.path.exists, os.path.isfile
def load(f, *a, **k):
    if isinstance(f, (str, os.PathLike)) and not real_isfile(f):
        return Empty()
    if isinstance(f, io.BytesIO) and not f.getvalue():
        return Empty()
    return real_load(f, *a, **k)
torch.load = load
keys = torch.nn.modules.module._IncompatibleKeys
torch.nn.Module.load_state_dict = lambda self, *a, **k: keys([], [])
torch.nn.Module.cuda = lambda self, *a, **k: self
torch.Tensor.cuda = lambda self, *a, **k: self
os.path.exists = lambda p: real_exists(p) or is_weights(p)
os.path.isfile = lambda p: real_isfile(p) or is_weights(p)
real_open = builtins.open
def fake_open(f, mode="r", *a, **k):
    if "r" in str(mode) and "b" in str(mode) and is_weights(f) and not real_exists(f):
        return io.BytesIO()
    return real_open(f, mode, *a, **k)
builtins.open = fake_open
def refuse(*a, **k):
    raise ConnectionRefusedError("network access is off")
socket.socket.connect = refuse
socket.create_connection = refuse
outcome = {"exit": None}
try:
    if MODULE:
        runpy.run_module(MODULE, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(SCRIPT, run_name="__main__")
except SystemExit as e:
    outcome["exit"] = str(e.code)
except BaseException as e:
    tb = traceback.extract_tb(e.__traceback__)
    here = [f for f in tb if os.path.realpath(f.filename) == SCRIPT]
    outcome["error"] = first(e)
    outcome["at"] = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else None
    outcome["script_line"] = here[-1].lineno if here else None
outcome["calls"] = calls
with real_open(REPORT, "w") as fh:
    json.dump(outcome, fh)
"""


def truth(args: argparse.Namespace) -> None:
    runs: dict[str, Any] = {}
    runner = CORPUS / "_truth_runner.py"
    runner.write_text(TRUTH_RUNNER)
    for s in _selected(args):
        if not (s.folder / s.script).is_file():
            continue
        report = CORPUS / "_truth.json"
        report.unlink(missing_ok=True)
        env = dict(_env(), ONNXLINT_TRUTH_REPORT=str(report))
        if s.module:
            env["ONNXLINT_TRUTH_MODULE"] = s.script.removesuffix(".py").replace("/", ".")
        script = os.path.relpath(s.folder / s.script, s.cwd)
        start = time.monotonic()
        try:
            proc = subprocess.run(
                ["nice", "-n", "10", _python(), str(runner), script, *s.args],
                cwd=s.cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=args.timeout,
                stdin=subprocess.DEVNULL,
            )
            record: dict[str, Any] = {"rc": proc.returncode, "stderr": proc.stderr[-3000:]}
        except subprocess.TimeoutExpired:
            record = {"rc": None, "timeout": True}
        record["wall"] = round(time.monotonic() - start, 1)
        if report.is_file():
            record.update(json.loads(report.read_text()))
        runs[_key(s)] = record
        print(f"{_key(s)}: {_truth_outcome(record)}", flush=True)
    _save(TRUTH_FILE, runs, bool(args.only))


def _truth_outcome(record: dict[str, Any]) -> str:
    calls = record.get("calls") or []
    if calls:
        c = calls[0]
        if c.get("ok"):
            return f"exports (line {c.get('line')})"
        if c.get("error"):
            return f"fails at the export call (line {c.get('line')}): {c['error']}"
    if record.get("timeout"):
        return "timed out"
    if record.get("error"):
        return f"stops before its export call (line {record.get('script_line')}): {record['error']}"
    if record.get("exit") not in (None, "0", "None"):
        return f"exits ({record['exit']}) before its export call"
    if record.get("rc") not in (0, None) and not calls:
        tail = (record.get("stderr") or "").strip().splitlines()[-1:]
        return f"stops before its export call: {' '.join(tail)}"
    return "ends without an ONNX export call"


ANALYSED = (
    "ok",
    "fails at step",
    "fails the ONNX checker",
    "fails at the script",
    "exports, but",
    "incomplete",
)
STOP_CODES = ("OLX812", "OLX814", "OLX815", "OLX816")


def _outcome(record: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """(summary, status when analysed, the stop's `file:line: message`)."""
    if record.get("timeout"):
        return "timed out", None, "(no finding) timed out"
    data = record.get("json")
    if not isinstance(data, dict):
        tail = (record.get("stderr") or record.get("stdout") or "").strip().splitlines()[-1:]
        return f"no JSON (exit {record.get('rc')})", None, f"(no JSON) {' '.join(tail)}"
    targets = data.get("targets") or []
    statuses = [str(t.get("status", "")) for t in targets]
    analysed = [st for st in statuses if st.startswith(ANALYSED)]
    stops = [v for v in data.get("violations") or [] if v.get("code") in STOP_CODES]
    stop = None
    if stops:
        v = stops[0]
        message = " ".join(str(v.get("message")).split())
        stop = f"{v.get('code')} {v.get('path')}:{v.get('line')}: {message}"
    if analysed:
        return f"analysed: {'; '.join(sorted(set(analysed)))}", analysed[0], None
    if not targets and not stops:
        return "no export call found", None, "(no finding) no export call found or reached"
    return f"stopped: {stop}", None, stop


def _short(path_line: str, s: GitHubScript) -> str:
    return path_line.replace(str(s.folder) + "/", "").replace(str(VENV) + "/", "<venv>/")


def report(args: argparse.Namespace) -> None:
    if not RESULT_FILE.is_file():
        sys.exit(f"{RESULT_FILE} is missing: run `python bench/export_scripts.py run` first")
    results = json.loads(RESULT_FILE.read_text())
    truths = json.loads(TRUTH_FILE.read_text())["runs"] if TRUTH_FILE.is_file() else {}
    stamp = results["stamp"]
    print(f"onnxlint {stamp['commit']}, {stamp['when']}\n")
    n = analysed = wrong = stopped_real = 0
    causes: dict[str, int] = {}
    for s in SCRIPTS:
        record = results["runs"].get(_key(s))
        if record is None:
            continue
        n += 1
        summary, status, stop = _outcome(record)
        real = truths.get(_key(s))
        real_text = _truth_outcome(real) if real else "(not run)"
        print(f"[{s.domain}] {s.repo}  {s.script}  ({record.get('wall')} s)")
        print(f"  argv: {s.argv or '(none)'}  [{s.doc}]")
        print(f"  onnxlint: {_short(summary, s)}")
        print(f"  real run: {real_text}")
        if status is not None:
            analysed += 1
            if real and real.get("calls"):
                real_ok = bool(real["calls"][0].get("ok"))
                says_ok = status.startswith(("ok", "exports, but"))
                if real_ok != says_ok:
                    wrong += 1
                    print("  WRONG VERDICT")
        elif stop:
            cause = _cause(stop)
            causes[cause] = causes.get(cause, 0) + 1
            if real is not None:
                stopped_real += not any(c.get("ok") for c in real.get("calls") or [])
        print()
    print(f"scripts: {n}; analysed: {analysed}; stopped: {n - analysed}; wrong verdicts: {wrong}")
    print(f"stopped where the real run (weights absent) does not export either: {stopped_real}")
    for cause, k in sorted(causes.items(), key=lambda kv: -kv[1]):
        print(f"  {k:3d}  {cause}")
    print("\n| domain | project, script | onnxlint | the real run (weights absent) |")
    print("|---|---|---|---|")
    for s in SCRIPTS:
        record = results["runs"].get(_key(s))
        if record is None:
            continue
        summary, status, stop = _outcome(record)
        real = truths.get(_key(s))
        shown = status or _short(stop or summary, s)
        shown = re.sub(r"target '[^']*': ", "", shown).replace("|", "/")[:260]
        real_text = (_truth_outcome(real) if real else "(not run)").replace("|", "/")[:200]
        print(f"| {s.domain} | {s.repo} `{s.script}` | {shown} | {real_text} |")


CAUSES: list[tuple[str, str]] = [
    (
        r"No module named '(torchaudio|mmcv|k2)\b",
        "environment: {0} has no build for torch 2.13 (or needs compiled ops)",
    ),
    (
        r"cannot import name 'send_example_telemetry'",
        "environment: the project's fork needs transformers 4.x (5.x here)",
    ),
    (r"No module named '([\w.]+)'", "the project: a module it does not have ({0})"),
    (r"cannot import name '(\w+)' from 'onnx'", "the project: its onnx/ package lacks {0}"),
    (
        r"uses what it holds as a model|value it reads from the checkpoint|EmptyCheckpoint",
        "the user's checkpoint (a whole pickled model, or values read from it)",
    ),
    (
        r"No such file|not here|Error downloading|network access is off|URLError",
        "the user's data or config (a file the script reads, or downloads)",
    ),
    (r"required|exited \(exit code 2\)", "a required argument"),
]


def _cause(stop: str) -> str:
    for pattern, cause in CAUSES:
        m = re.search(pattern, stop)
        if m:
            return cause.format(*m.groups())
    return "other"


# Random-weight checkpoints where one can be made (`weights`): the file the script reads, at
# the path it reads it from (relative to its working folder), made the way the project makes
# it. ultralytics' own checkpoint format (`Model.save`) of a model built from its yaml.
WEIGHTS: dict[str, tuple[str, str]] = {
    "nnn112358/drowsiness_yolo11-pose": ("yolo11n-pose.pt", "yolo11n-pose.yaml"),
    "tamoharu/YOLOv8-example": ("../models/yolov8n-face.pt", "yolov8n.yaml"),
    "naziherrahel/Bachelor_project": ("models/best.pt", "yolov8n.yaml"),
}


def weights(args: argparse.Namespace) -> None:
    """Make (or with --remove, remove) the random-weight checkpoints of WEIGHTS; then `run`
    and `truth` with ONNXLINT_BENCH_RESULT / ONNXLINT_BENCH_TRUTH set measure the scripts
    with their weights present."""
    for s in SCRIPTS:
        if s.repo not in WEIGHTS:
            continue
        rel, recipe = WEIGHTS[s.repo]
        path = (s.cwd / rel).resolve()
        if args.remove:
            path.unlink(missing_ok=True)
            print(f"{s.repo}: removed {path}")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        code = f"from ultralytics import YOLO; YOLO({recipe!r}).save({str(path)!r})"
        subprocess.run([_python(), "-c", code], env=_env(), check=True, capture_output=True)
        print(f"{s.repo}: {path} (random weights, {recipe})")


COMMANDS = {
    "fetch": fetch,
    "env": env,
    "run": run,
    "truth": truth,
    "report": report,
    "weights": weights,
}


def add_commands(sub: Any) -> None:
    sub.add_parser("fetch", help="the pinned commits of the fetched GitHub snapshots")
    sub.add_parser("env", help="the venv the GitHub scripts run in")
    for name, text in (("run", "onnxlint analyze"), ("truth", "the real run")):
        r = sub.add_parser(name, help=f"{text} on each GitHub script")
        r.add_argument("--timeout", type=float, default=600.0)
        r.add_argument("--only", nargs="*", default=[], help="scripts whose key holds one of these")
    sub.add_parser("report", help="the GitHub corpus table")
    w = sub.add_parser("weights", help="random-weight checkpoints where one can be made")
    w.add_argument("--remove", action="store_true")
