"""`python -m onnxlint` is the same as the `onnxlint` command."""

import sys

if sys.argv[1:2] == ["server"]:
    # The editor's way in: straight to the server, without the CLI's imports (its
    # configuration and violation modules then load under the server's code cache).
    from onnxlint.server import serve

    raise SystemExit(serve(sys.argv[2:]))

from onnxlint.cli import main

raise SystemExit(main())
