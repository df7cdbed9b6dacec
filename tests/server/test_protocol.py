"""The JSON-RPC layer: malformed input gets proper LSP errors; entry points; stdout stays clean."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from .conftest import SERVER

# ---------------------------------------------------------------------------- raw JSON-RPC


class Raw:
    """The server as a subprocess, spoken to in raw Content-Length frames."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def send_bytes(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, obj: Any) -> None:
        self.send_bytes(json.dumps(obj).encode())

    def recv(self) -> dict[str, Any]:
        """One framed message; fails on anything on stdout that is not a frame."""
        assert self.proc.stdout is not None
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            ch = self.proc.stdout.read(1)
            assert ch, "the server closed stdout"
            header += ch
        lines = header.decode("ascii").split("\r\n")
        assert lines[0].startswith("Content-Length: "), f"not a frame header: {header!r}"
        n = int(lines[0].split(": ")[1])
        return json.loads(self.proc.stdout.read(n))  # type: ignore[no-any-return]

    def response(self, msg_id: Any) -> dict[str, Any]:
        while True:
            msg = self.recv()
            if "method" not in msg and msg.get("id") == msg_id:
                return msg


def test_malformed_messages_get_proper_errors_and_the_server_lives() -> None:
    raw = Raw()
    try:
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": None, "capabilities": {}},
            }
        )
        assert "capabilities" in raw.response(1)["result"]
        raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

        raw.send_bytes(b"{this is not json")
        assert raw.response(None)["error"]["code"] == -32700

        raw.send([1, 2, 3])
        assert raw.response(None)["error"]["code"] == -32600

        raw.send({"jsonrpc": "2.0", "id": 2, "method": "onnxlint/noSuchMethod", "params": {}})
        assert raw.response(2)["error"]["code"] == -32601

        raw.send({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {"x": 1}})
        assert raw.response(3)["error"]["code"] == -32602

        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "textDocument/hover",
                "params": {
                    "textDocument": {"uri": "file:///never/opened.py"},
                    "position": {"line": 0, "character": 0},
                },
            }
        )
        err = raw.response(4)["error"]
        assert err["code"] == -32602 and "unknown document" in err["message"]

        # an unknown notification is ignored, a cancel of an unknown id too
        raw.send({"jsonrpc": "2.0", "method": "onnxlint/unknownNotification", "params": {}})
        raw.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 999}})

        raw.send({"jsonrpc": "2.0", "id": 5, "method": "shutdown"})
        assert raw.response(5)["result"] is None
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 6,
                "method": "workspace/executeCommand",
                "params": {"command": "onnxlint.restart"},
            }
        )
        assert raw.response(6)["error"]["code"] == -32600  # after shutdown
        raw.send({"jsonrpc": "2.0", "method": "exit"})
        assert raw.proc.wait(10) == 0
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
            raw.proc.wait()


def test_server_entry_points_answer_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "onnxlint.server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "--log-level" in out.stdout


def test_onnxlint_server_passes_options_to_the_server() -> None:
    out = subprocess.run(
        [*SERVER, "--log-level", "debug", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "--log-level" in out.stdout
