"""The smallest useful pygls 2 server: one diagnostic per opened document.

`bench_server.py` starts it like onnxlint's server to measure the floor that any pygls 2
server pays on this machine before doing work of its own (interpreter, lsprotocol's ~550
attrs classes, pygls, asyncio). With `--code-cache`, the imports run under onnxlint's
generated-code cache, as `onnxlint server` does.
"""

from __future__ import annotations

import contextlib
import sys

if "--code-cache" in sys.argv:
    from onnxlint.core.codecache import generated_code_cache

    imports: contextlib.AbstractContextManager[object] = generated_code_cache()
else:
    imports = contextlib.nullcontext()

with imports:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

server = LanguageServer("pygls-floor", "0")


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    start = types.Position(line=0, character=0)
    diagnostic = types.Diagnostic(
        range=types.Range(start=start, end=start), message="opened", source="floor"
    )
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=params.text_document.uri,
            diagnostics=[diagnostic],
            version=params.text_document.version,
        )
    )


if __name__ == "__main__":
    server.start_io()
