"""The command line, `onnxlint check|rule|rules|server|analyze`. Imports any package.

Exit codes: 0 nothing found, 1 findings remain, 2 usage, configuration or internal error.
Every failure is one clear line on stderr; a traceback means a bug in onnxlint and comes
with a request to report it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from onnxlint import __version__
from onnxlint.cli.errors import EXIT_CLEAN, EXIT_ERROR, UsageError
from onnxlint.cli.output import FORMATS
from onnxlint.core.config import ConfigError, is_code_or_prefix, load_config

# Heavier modules (libcst, the rules, the server) are imported where they are used, so
# `onnxlint server` starts without loading the CLI's machinery and vice versa.

COMMANDS = ("check", "rule", "rules", "server", "analyze")


def _codes_arg(flag: str) -> Callable[[str], list[str]]:
    """The `type=` of a codes flag; its error names the flag as the user typed it."""

    def parse(value: str) -> list[str]:
        codes = [c.strip().upper() for c in value.split(",") if c.strip()]
        bad = next((c for c in codes if not is_code_or_prefix(c)), None)
        if bad is not None:
            raise argparse.ArgumentTypeError(
                f"{flag} has {bad!r}, which is not a rule code or prefix "
                "(use e.g. OLX, OLX2, OLX201; `onnxlint rules` lists them)"
            )
        return codes

    parse.__name__ = flag  # argparse names the type in some messages
    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onnxlint",
        description="Find PyTorch code that breaks or silently changes meaning when exported "
        "to ONNX or TorchScript.",
    )
    parser.add_argument("--version", action="version", version=f"onnxlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="check files and folders (the default command)")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: .)")
    check.add_argument(
        "--select", type=_codes_arg("--select"), help="only these codes/prefixes (OLX2,OLX401)"
    )
    check.add_argument(
        "--extend-select", type=_codes_arg("--extend-select"), help="codes to add to the selection"
    )
    check.add_argument("--ignore", type=_codes_arg("--ignore"), help="codes/prefixes to leave out")
    check.add_argument("--format", choices=FORMATS, default="text", help="output format")
    check.add_argument(
        "--fix", action="store_true", help="apply safe fixes (unsafe ones too with --unsafe-fixes)"
    )
    check.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="show unsafe fixes as available; with --fix, apply them too",
    )
    check.add_argument(
        "--diff", action="store_true", help="show the fixes as a diff; write nothing"
    )
    check.add_argument(
        "--add-noqa",
        action="store_true",
        help="add a `# noqa: CODE` comment to every line with a finding (nothing else changes)",
    )
    check.add_argument("--stdin-filename", metavar="PATH", help="read the source from stdin")
    check.add_argument("--exclude", action="append", default=[], metavar="GLOB")
    check.add_argument("--config", metavar="PYPROJECT", help="use this pyproject.toml")
    check.add_argument("--target-torch", metavar="X.Y", help="judge APIs by this torch version")
    check.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    check.add_argument("--jobs", "-j", type=int, default=0, help="processes (default: CPUs)")
    check.add_argument("--statistics", action="store_true", help="counts per rule")
    check.add_argument("--quiet", "-q", action="store_true", help="one line per finding")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--deep", action="store_true", help="also run the deep analysis (OLX8xx)")
    check.add_argument("--python", metavar="PY", help="interpreter for the deep worker")
    check.add_argument("--verify", action="store_true", help="deep: verify with onnxruntime")

    rule = sub.add_parser("rule", help="show a rule's documentation")
    rule.add_argument("code", help="a code like OLX201, or a rule name")
    rule.add_argument(
        "--open", action="store_true", help="open the rule's page of the documentation site"
    )
    sub.add_parser("rules", help="list every rule")
    sub.add_parser("server", help="run the language server on stdio (see `onnxlint server -h`)")
    analyze = sub.add_parser("analyze", help="deep analysis of declared targets (needs torch)")
    try:
        from onnxlint.deep.run import add_analyze_arguments

        add_analyze_arguments(analyze)
    except ImportError:
        analyze.add_argument("targets", nargs="*")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["server"]:
        # The server parses its own options (`--log-level ...`) and loads what it needs.
        from onnxlint.server import serve

        return serve(args_list[1:])
    if not args_list or (
        args_list[0] not in COMMANDS and args_list[0] not in ("-h", "--help", "--version")
    ):
        mistyped = _mistyped_command(args_list[0]) if args_list else None
        if mistyped is not None:
            print(f"onnxlint: error: {mistyped}", file=sys.stderr)
            return EXIT_ERROR
        args_list.insert(0, "check")
    script_argv: list[str] | None = None
    if args_list[0] == "analyze":
        args_list, script_argv = _split_script_argv(args_list)
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:
        return EXIT_ERROR if exc.code not in (0, None) else EXIT_CLEAN
    try:
        if args.command == "rule":
            return cmd_rule(args.code, open_page=args.open)
        if args.command == "rules":
            return cmd_rules()
        if args.command == "analyze":
            return cmd_analyze(args, script_argv)
        from onnxlint.core.codecache import generated_code_cache

        with generated_code_cache():  # libcst's dataclasses: a third of its import
            from onnxlint.cli.check import cmd_check
        return cmd_check(args)
    except ConfigError as exc:
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except UsageError as exc:  # also raised by onnxlint.cli.check
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("onnxlint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN
    except Exception:
        import traceback

        traceback.print_exc()
        print(
            "onnxlint: internal error (a bug in onnxlint, not in your code): please report it "
            "with the lines above",
            file=sys.stderr,
        )
        return EXIT_ERROR


def _mistyped_command(word: str) -> str | None:
    """`onnxlint chek src`: a word that is no path and looks like a command is a typo."""
    import difflib
    import os

    if word.startswith("-") or os.path.lexists(word) or "/" in word or os.sep in word:
        return None
    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if not close:
        return None
    return f"unknown command {word!r}; did you mean {close[0]!r}? (`onnxlint --help` lists them)"


# --------------------------------------------------------------------------- rule / rules


def cmd_rule(code: str, open_page: bool = False) -> int:
    from onnxlint.core.violation import DOCS_BASE_URL
    from onnxlint.rules import all_rules, rule_by_code
    from onnxlint.rules.docs import rule_markdown

    rule = rule_by_code(code) or next((r for r in all_rules() if r.name == code), None)
    if rule is None:
        raise UsageError(f"no rule {code!r}; `onnxlint rules` lists them")
    if open_page:
        import webbrowser

        url = f"{DOCS_BASE_URL}{rule.code}/"  # the page every finding of the rule links to
        opened = webbrowser.open(url)
        print(url if opened else f"{url} (no web browser found to open it)")
        return EXIT_CLEAN
    sys.stdout.write(rule_markdown(rule))
    return EXIT_CLEAN


def cmd_rules() -> int:
    from onnxlint.rules import all_rules

    for r in all_rules():
        fix = {"safe": "[*]", "unsafe": "[~]", "display": "[-]"}.get(
            r.fix_safety.value if r.fix_safety else "", "   "
        )
        kind = "deep " if r.from_deep_analysis else ""
        print(f"{r.code}  {fix} {r.severity.value:<7} {kind}{r.name}: {r.summary()}")
    return EXIT_CLEAN


def _split_script_argv(args_list: list[str]) -> tuple[list[str], list[str] | None]:
    """`onnxlint analyze export.py -- --weights w.pt`: the scripts' own command line."""
    try:
        from onnxlint.deep.run import split_script_argv
    except ImportError:  # `analyze` then says the deep analysis is not available
        return args_list, None
    return split_script_argv(args_list)


def cmd_analyze(args: argparse.Namespace, script_argv: list[str] | None = None) -> int:
    try:
        from onnxlint.deep.run import run_analyze, use_script_argv
        from onnxlint.deep.targets import TargetError
    except ImportError as exc:
        raise UsageError(f"deep analysis is not available: {exc}") from None
    try:
        use_script_argv(args, script_argv)
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    config = load_config(Path.cwd())
    return int(run_analyze(args, config))
