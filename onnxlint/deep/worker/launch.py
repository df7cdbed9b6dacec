"""Entry point of the worker process: `python .../onnxlint/deep/worker/launch.py`.

Runs under the user's interpreter, which may not have onnxlint installed, so
it loads its sibling modules as a private package (`_onnxlint_deep_worker`)
instead of importing onnxlint. Python puts this file's folder first on
sys.path; it is removed so that our module names (`analysis`, `wire`, ...) can
never shadow the user's, nor theirs ours.
"""

import importlib.util
import os
import sys

PACKAGE = "_onnxlint_deep_worker"


def _load_package() -> object:
    here = os.path.dirname(os.path.realpath(__file__))
    if sys.path and os.path.realpath(sys.path[0] or ".") == here:
        sys.path.pop(0)
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(here, "__init__.py"), submodule_search_locations=[here]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the onnxlint worker package from {here}")
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = pkg
    spec.loader.exec_module(pkg)
    return pkg


if __name__ == "__main__":
    _load_package()
    zygote = importlib.import_module(PACKAGE + ".zygote")
    raise SystemExit(zygote.main(sys.argv[1:]))
