"""Bundles the static language server into the extension: `bundled/` at the repository root.

    python extension/scripts/bundle_python.py [--platform linux-x64] [--out bundled]

ruff's and Microsoft's Python-tool extensions work right after install: they ship the tool's
Python code and run it with whatever Python the machine has. This does the same for onnxlint's
static server: `bundled/libs/` holds onnxlint (this checkout's package) and the server's
dependencies at the versions pinned in `extension/bundled-requirements.txt` (pygls, lsprotocol,
cattrs, attrs, typing_extensions, exceptiongroup and tomli for Python 3.10, libcst), and
`bundled/tool/server.py` starts the server with them first on `sys.path` (not through
PYTHONPATH: the deep-analysis worker, started by the server under the project's interpreter,
must not see them). libcst's parser is a native module per Python version: the one of every
CPython from 3.10 to 3.14 for the platform the .vsix is for sits side by side in
`libs/libcst/` (Python loads the one of its own version). Not bundled: nbformat (the quick
fixes of notebook cells need it from the environment).

The bundle ships its Python bytecode (`__pycache__/*.pyc`) for the interpreter that packages
it and for each other CPython 3.10-3.14 found on PATH (`python3.X`), compiled with
`unchecked-hash` invalidation (valid whatever mtimes the .vsix's unpacking gives the sources, as
distributions ship it): the first server start after install, and every start where the
extension's folder is read-only, would otherwise compile every module, lsprotocol's large
`types.py` among them. `--no-bytecode` leaves it out.

Wheels come from PyPI through pip (`pip download`, pinned) and are kept in
`~/.cache/onnxlint/vsix-wheels/` (ONNXLINT_WHEEL_CACHE), so packaging again needs no network.
"""

from __future__ import annotations

import argparse
import compileall
import os
import py_compile
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = REPO / "extension" / "bundled-requirements.txt"
# The platforms a .vsix can be built for (vsce --target) and their wheels' platform tags.
PLATFORMS = {
    "linux-x64": ["manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64"],
    "linux-arm64": ["manylinux_2_28_aarch64", "manylinux2014_aarch64", "manylinux_2_17_aarch64"],
    "darwin-x64": ["macosx_10_12_x86_64", "macosx_10_13_x86_64"],
    "darwin-arm64": ["macosx_11_0_arm64"],
    "win32-x64": ["win_amd64"],
}
PYTHONS = ["3.10", "3.11", "3.12", "3.13", "3.14"]
NATIVE = {"libcst"}  # packages with a compiled module per Python version
# Not needed to run the server, and most of the size: tests, the codemod framework's tests.
SKIP_PARTS = {"tests", "__pycache__", "testing"}

SERVER = """\"\"\"Runs the onnxlint language server for the VS Code extension with Python 3.10+.

Written by extension/scripts/bundle_python.py. With ONNXLINT_IMPORT_STRATEGY=fromEnvironment
(the default), the interpreter's own onnxlint runs when it has onnxlint and every module its
server needs; otherwise, and with useBundled, the onnxlint bundled with the extension does
(../libs, first on sys.path for this process only: the deep-analysis worker the server starts
runs under the project's interpreter and sees the project's packages, not these).
\"\"\"

import importlib.util
import os
import sys

if sys.version_info < (3, 10):  # noqa: UP036 (any Python on the machine runs this)
    sys.stderr.write(
        "onnxlint needs Python 3.10 or newer; " + sys.executable + " is "
        + sys.version.split()[0] + "\\n"
    )
    sys.exit(3)
NEEDED = ("onnxlint", "pygls", "lsprotocol", "libcst")
strategy = os.environ.get("ONNXLINT_IMPORT_STRATEGY", "fromEnvironment")
missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
if strategy == "useBundled" or missing:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "libs"))
    os.environ["ONNXLINT_BUNDLED"] = "1"
    why = "onnxlint.importStrategy is useBundled" if not missing else (
        "the interpreter has no " + ", ".join(missing)
    )
    sys.stderr.write("INFO onnxlint: the bundled onnxlint runs (" + why + ")\\n")
else:
    os.environ.pop("ONNXLINT_BUNDLED", None)

from onnxlint.server import serve  # noqa: E402

sys.exit(serve(sys.argv[1:]))
"""


def requirements() -> list[str]:
    lines = REQUIREMENTS.read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "onnxlint" / "vsix-wheels"
    return Path(os.environ.get("ONNXLINT_WHEEL_CACHE", default))


def download(spec: str, dest: Path, python: str | None, platform: str | None) -> Path:
    """The wheel of `spec` (name==version) for that Python and platform, from the cache or
    PyPI. A pure wheel when `python` is None."""
    name, _, version = spec.partition("==")
    norm = name.lower().replace("-", "_")
    tag = f"cp{python.replace('.', '')}" if python else None

    def found() -> Path | None:
        for w in sorted(dest.glob("*.whl")):
            parts = w.name.split("-")
            if parts[0].lower() != norm or parts[1] != version:
                continue
            if tag is None and parts[-1] == "any.whl" and parts[-2] == "none":
                return w
            if (
                tag is not None
                and parts[2] == tag
                and any(p in parts[4] for p in PLATFORMS[platform or ""])
            ):
                return w
        return None

    hit = found()
    if hit is not None:
        return hit
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(dest)]
    command += ["--only-binary=:all:", spec]
    if tag is not None and platform is not None:
        command += ["--python-version", python or "", "--implementation", "cp", "--abi", tag]
        for p in PLATFORMS[platform]:
            command += ["--platform", p]
    else:  # the pure wheel (tomli has compiled ones too)
        command += ["--python-version", "3.10", "--platform", "any", "--abi", "none"]
    subprocess.run(command, check=True)
    hit = found()
    if hit is None:
        raise SystemExit(f"pip downloaded no wheel of {spec} for {python} {platform}")
    return hit


def unpack(wheel: Path, libs: Path, only_native: bool = False) -> None:
    """The wheel's packages into `libs` (no .dist-info, tests or bytecode); with
    `only_native`, just its compiled modules (the pure files came from another wheel)."""
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            if info.is_dir():
                continue
            parts = Path(info.filename).parts
            if parts[0].endswith((".dist-info", ".data")) or SKIP_PARTS & set(parts):
                continue
            native = info.filename.endswith((".so", ".pyd"))
            if only_native and not native:
                continue
            target = libs / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with z.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)


def copy_onnxlint(libs: Path) -> None:
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))]

    shutil.copytree(REPO / "onnxlint", libs / "onnxlint", ignore=ignore)


def compile_bytecode(libs: Path) -> list[str]:
    """Compile `libs` for this interpreter and every other CPython of PYTHONS on PATH; the
    versions compiled for."""
    done = []
    ok = compileall.compile_dir(
        str(libs),
        quiet=1,
        workers=1,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    if not ok:
        raise SystemExit(f"compileall failed in {libs}")
    done.append(f"{sys.version_info.major}.{sys.version_info.minor}")
    for version in PYTHONS:
        exe = shutil.which(f"python{version}")
        if version in done or exe is None:
            continue
        command = [exe, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash"]
        if subprocess.run([*command, str(libs)], check=False).returncode == 0:
            done.append(version)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", default="linux-x64", choices=sorted(PLATFORMS))
    parser.add_argument("--out", default=str(REPO / "bundled"))
    parser.add_argument("--no-bytecode", action="store_true", help="ship no .pyc")
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    libs = out / "libs"
    libs.mkdir(parents=True)
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for spec in requirements():
        name = spec.partition("==")[0].lower()
        if name in NATIVE:
            first = True
            for python in PYTHONS:
                wheel = download(spec, cache, python, args.platform)
                unpack(wheel, libs, only_native=not first)
                first = False
        else:
            unpack(download(spec, cache, None, None), libs)
    copy_onnxlint(libs)
    (out / "tool").mkdir()
    (out / "tool" / "server.py").write_text(SERVER, encoding="utf-8")
    (out / "PLATFORM").write_text(args.platform + "\n", encoding="utf-8")
    compiled = [] if args.no_bytecode else compile_bytecode(libs)
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    files = sum(1 for f in out.rglob("*") if f.is_file())
    pyc = sum(f.stat().st_size for f in out.rglob("*.pyc"))
    print(f"bundled/ for {args.platform}: {files} files, {size / 2**20:.1f} MiB unpacked")
    print(f"bytecode for Python {', '.join(compiled) or '(none)'}: {pyc / 2**20:.1f} MiB of it")


if __name__ == "__main__":
    main()
