"""`python -m onnxlint.server`: the language server on stdio."""

import sys

from onnxlint.server import serve

raise SystemExit(serve(sys.argv[1:]))
