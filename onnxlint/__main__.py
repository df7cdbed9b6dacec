"""`python -m onnxlint` is the same as the `onnxlint` command."""

from onnxlint.cli import main

raise SystemExit(main())
