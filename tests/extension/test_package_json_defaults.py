"""The server accepts every default the extension's package.json declares.

Builds the settings object the extension sends (camelCase, without the `onnxlint.` prefix) from
the `default` of each contributed setting, as ruff-vscode's tests/client/package_json.py does, and
hands it to the server's own settings parser.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from onnxlint.server.settings import Settings, parse_settings

REPO = Path(__file__).resolve().parents[2]

# The settings object agreed between the extension and the server.
CONTRACT: dict[str, Any] = {
    "enable": True,
    "select": [],
    "ignore": [],
    "severity": {},
    "debounceMs": 150,
    "deep": {
        "onSave": False,
        "timeout": 300,
        "interpreter": None,
        "prestart": True,
        "proveFixes": True,
    },
    "interpreter": [],
    "importStrategy": "fromEnvironment",
    "args": [],
    "trace": {"server": "off"},
}


def settings_from_package_json() -> dict[str, Any]:
    manifest = json.loads((REPO / "package.json").read_text(encoding="utf8"))
    properties = manifest["contributes"]["configuration"]["properties"]
    settings: dict[str, Any] = {}
    for key, prop in properties.items():
        assert key.startswith("onnxlint."), key
        assert "default" in prop, f"{key} has no default"
        *parents, leaf = key.removeprefix("onnxlint.").split(".")
        node = settings
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = prop["default"]
    return settings


def test_package_json_defaults_are_the_agreed_settings_object() -> None:
    assert settings_from_package_json() == CONTRACT


def test_server_accepts_every_default() -> None:
    settings, errors = parse_settings(settings_from_package_json())
    assert errors == []
    # The extension's defaults are the server's own: a client that sends nothing gets the same.
    assert settings == Settings()


def test_server_rejects_a_bad_value_with_a_clear_error() -> None:
    # Without this, "no errors" above could come from a parser that checks nothing.
    bad = {**settings_from_package_json(), "debounceMs": "soon"}
    _, errors = parse_settings(bad)
    assert errors, "parse_settings accepted debounceMs='soon'"
    assert any("debounceMs" in e or "debounce" in e for e in errors), errors


def test_the_settings_ui_can_edit_the_interpreter() -> None:
    """VS Code's Settings UI edits an array setting with its list editor (Add Item) only when
    its type is "array" of strings; a union type (`["array", "string"]`) gets nothing but
    "Edit in settings.json" (issue 27, item 7). The client still reads a single string."""
    manifest = json.loads((REPO / "package.json").read_text(encoding="utf8"))
    prop = manifest["contributes"]["configuration"]["properties"]["onnxlint.interpreter"]
    assert prop["type"] == "array" and prop["items"] == {"type": "string"}, prop
    assert "Settings UI" in prop["markdownDescription"]
