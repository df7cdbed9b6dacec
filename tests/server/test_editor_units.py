"""The editor experience (issue 15) without a client session: every rule's hover summary,
and the server's stderr when a client cancels requests already answered."""

from __future__ import annotations


def test_every_rule_has_a_short_hover_with_why_use_instead_fix_and_link() -> None:
    from onnxlint.rules import all_rules
    from onnxlint.server.hover import MAX_SUMMARY, rule_summary

    rules = all_rules()
    assert len(rules) > 50
    for rule in rules:
        text = rule_summary(rule.code)
        assert text is not None
        assert len(text) < MAX_SUMMARY == 900, (rule.code, len(text))
        assert text.startswith(f"**{rule.code}** `{rule.name}`")
        assert f"# {rule.code}" not in text and "## " not in text  # no page headings
        assert "--" not in text.replace("---", "")  # no CLI flags
        assert text.endswith(
            f"[Full rule page](https://onnxlint.github.io/onnxlint/rules/{rule.code}/)"
        )
        assert "**Fix:**" in text or "**Quick fix:**" in text
        if "```" in rule.doc_sections().get("Use instead", ""):
            assert "**Use instead:**\n```" in text, rule.code
        assert text.count("```") % 2 == 0


def test_a_cancel_for_an_answered_request_is_not_logged_as_a_warning() -> None:
    """Editors cancel hovers and lenses as the cursor moves; pygls warned about each one on
    stderr, which VS Code showed as `[error]` lines several times a minute."""
    from .test_protocol import Raw

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
        raw.response(1)
        raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for i in range(3):
            raw.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 100 + i}})
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        raw.response(2)
        raw.send({"jsonrpc": "2.0", "method": "exit"})
        _, err = raw.proc.communicate(timeout=20)
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
    assert b"Cancel notification" not in err, err.decode()


def test_the_end_message_says_when_the_call_was_made_directly(tmp_path) -> None:
    """The CLI and the report say that a script target's call was made directly (the
    statements before it did not run); the editor's end notification says it too."""
    from onnxlint.deep.result import DeepResult
    from onnxlint.deep.targets import Target
    from onnxlint.server.deep_service import summary

    note = (
        "analysed by calling `export_decoder(...)` at line 117 directly: the script's run "
        "stopped at line 40; the statements of `main()` before it did not run"
    )
    target = Target("export.py:117", "export.py", tmp_path)
    plain = summary(DeepResult(target, "ok"))["message"]
    assert "directly" not in plain
    direct = summary(DeepResult(target, "ok", data={"script_direct": note}))["message"]
    assert direct == f"{plain}; {note}"
    # and that a call in a loop was followed through the loop's models
    loop = "the export call at line 9 is in the loop at line 8: ... (`A`, `B`)"
    both = summary(DeepResult(target, "ok", data={"script_direct": note, "script_loop": loop}))
    assert both["message"] == f"{plain}; {note}; {loop}"


def test_a_lens_clicked_after_an_edit_runs_the_call_it_showed() -> None:
    """The editor redraws lenses a moment after an edit; a click in between sends the old
    argument. It names the lens it was (title and rank at the document's version), so the
    server runs that lens as the document is now, or says it is gone."""
    from onnxlint.server.protocol import ANALYZE_EXPORT, CREATE_TARGET
    from onnxlint.server.targets import Lens, current_lens, shown_at

    def lens(line: int, name: str) -> Lens:
        return Lens(line, f"Analyze export ({name})", ANALYZE_EXPORT, {"line": line})

    before = shown_at([lens(5, "A"), Lens(5, "Create", CREATE_TARGET), lens(9, "A")], 3)
    assert before[1].argument == {"shown": {"version": 3, "title": "Create", "nth": 0}}
    second = before[2].argument
    assert second["shown"] == {"version": 3, "title": "Analyze export (A)", "nth": 1}
    assert current_lens(second, 3, []) is second  # nothing changed: as it is
    now = [lens(4, "A"), lens(7, "A")]
    assert current_lens(second, 4, now) == {
        "line": 7,
        "shown": {"version": 4, "title": "Analyze export (A)", "nth": 1},
    }
    assert current_lens(second, 4, now[:1]) is None  # that export call is gone
    assert current_lens({"line": 9}, 4, now) == {"line": 9}  # an argument from elsewhere
