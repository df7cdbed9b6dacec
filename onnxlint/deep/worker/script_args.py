"""Required command-line arguments whose value does not matter to the analysis.

Export scripts often require where to write (`--output-file`, an `export_dir` positional)
and which checkpoint to load (`--checkpoint`). Neither changes what the export call
exports: the capture ends the script before the call writes anything, and weights are
faked anyway (`script_fakes`). So when argparse (or click, and so typer) finds such an
argument missing, it gets a value (a path in a temporary folder; a checkpoint path that is
not there), the script goes on, and the report says so. A missing argument that does
matter (a config, a model name, a dataset) still stops the run where it is parsed, as it
would for real.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from .script_fakes import ScriptRun, after_import, patched

_REQUIRED = "the following arguments are required: "

_OUTPUT_WORDS = {"out", "output", "outdir", "outfile", "outpath", "save", "dst", "destination"}
_EXPORT_WORDS = {"export", "exported", "onnx", "torchscript", "engine"}
_PATH_WORDS = {"dir", "directory", "folder", "path", "file", "filename"}
_NAME_WORDS = _PATH_WORDS | {"name", "prefix"}
_WEIGHTS_WORDS = {"ckpt", "checkpoint", "weights", "weight", "pth", "resume"}
_DIR_WORDS = {"dir", "directory", "folder", "outdir"}
_OUTPUT_HELP = re.compile(
    r"\b(output|save|saving|store|storing|write|writing|destination)\b"
    r"|\bexport\w* (\w+ ){0,3}(to|into)\b"
)
_WEIGHTS_HELP = re.compile(r"\b(checkpoints?|weights|ckpt|state dict)\b|\.(pth?|ckpt)\b")
_PATH_TYPES = (None, str, PurePath, os.fspath)


@dataclass(frozen=True)
class Argument:
    """What the role rule reads of one command-line argument, argparse's or click's."""

    dest: str
    names: tuple[str, ...]  # its option strings and metavar
    help: str

    @property
    def words(self) -> set[str]:
        names = [self.dest, *self.names]
        return {w for n in names for w in re.split(r"[^a-z0-9]+", n.lower()) if w}


def _argparse_argument(action: argparse.Action) -> Argument:
    names = (str(action.metavar or ""), *action.option_strings)
    return Argument(action.dest or "", names, action.help or "")


def role_of(action: argparse.Action) -> str | None:
    """An argparse argument's role: "output", "checkpoint" or None (its value matters, or
    it is not a path)."""
    path_type = action.type in _PATH_TYPES or isinstance(action.type, argparse.FileType)
    if not path_type or action.choices or action.nargs not in (None, "?", "+", "*"):
        return None
    if not isinstance(action, (argparse._StoreAction, argparse._AppendAction)):
        return None
    return _role(_argparse_argument(action))


def _role(arg: Argument) -> str | None:
    words, text = arg.words, arg.help.lower()
    if words & _OUTPUT_WORDS or (words & _EXPORT_WORDS and words & _NAME_WORDS):
        return "output"
    if words & _WEIGHTS_WORDS:
        return "checkpoint"
    if words & _PATH_WORDS and _OUTPUT_HELP.search(text):
        return "output"
    if _WEIGHTS_HELP.search(text):
        return "checkpoint"
    return None


class _Missing(Exception):
    def __init__(self, names: list[str]) -> None:
        self.names = names


@contextlib.contextmanager
def required_arguments(state: ScriptRun) -> Iterator[None]:
    """For the run: argparse and click fill missing output and checkpoint arguments."""
    original = argparse.ArgumentParser.parse_known_args
    folder: list[str] = []

    def scratch() -> str:
        if not folder:
            folder.append(tempfile.mkdtemp(prefix="onnxlint-script-args-"))
        return folder[0]

    def parse_known_args(
        self: argparse.ArgumentParser, args: Any = None, namespace: Any = None
    ) -> Any:
        given = list(sys.argv[1:] if args is None else args)
        try:
            with _errors_raise_missing(self):
                parsed = original(self, given, namespace)
        except _Missing as m:
            extra = _fill(self, m.names, state, scratch)
            if extra is None:
                self.error(_REQUIRED + ", ".join(m.names))
            parsed = original(self, given + extra, namespace)
        _note_checkpoints(self, parsed, state)
        return parsed

    with (
        patched(argparse.ArgumentParser, "parse_known_args", parse_known_args),
        after_import("click.core", _click(state, scratch)),
        after_import("omegaconf.dictconfig", _omegaconf(state, scratch)),
    ):
        try:
            yield
        finally:
            for f in folder:
                shutil.rmtree(f, ignore_errors=True)


def _note_checkpoints(parser: argparse.ArgumentParser, parsed: Any, state: ScriptRun) -> None:
    """The values of the parser's checkpoint arguments (given, default or filled): paths the
    run knows hold weights (`ScriptRun.checkpoints`)."""
    namespace = parsed[0] if isinstance(parsed, tuple) else parsed
    for action in parser._actions:
        if role_of(action) != "checkpoint":
            continue
        value = getattr(namespace, action.dest, None)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, (str, os.PathLike)) and os.fspath(v):
                state.checkpoints.add(str(os.fspath(v)))


def _click(state: ScriptRun, scratch: Callable[[], str]) -> Any:
    """click (and typer, built on it) checks each parameter as it processes its value: a
    required one that is missing and does not matter gets its placeholder there."""

    def patch(core: types.ModuleType) -> Callable[[], None]:
        original = core.Parameter.process_value

        def process_value(self: Any, ctx: Any, value: Any) -> Any:
            try:
                out = original(self, ctx, value)
            except core.MissingParameter:
                arg = _click_argument(self)
                role = None if arg is None else _role(arg)
                if arg is None or role is None:
                    raise
                name = max(arg.names, key=len) if arg.names else arg.dest
                filled = _value(arg, role, scratch())
                _say(state, name, role, filled, where=_script_line(state))
                out = original(self, ctx, filled)
            arg = _click_argument(self)
            if arg is not None and _role(arg) == "checkpoint" and isinstance(out, str) and out:
                state.checkpoints.add(out)
            return out

        core.Parameter.process_value = process_value

        def undo() -> None:
            core.Parameter.process_value = original

        return undo

    return patch


def _omegaconf(state: ScriptRun, scratch: Callable[[], str]) -> Any:
    """hydra and OmegaConf configs mark a required value `???`; reading one that was not
    given on the command line (`ckpt_path=...`) raises MissingMandatoryValue. One whose key
    names an output or a checkpoint gets its placeholder there, as argparse's and click's
    do; any other still stops where it is read."""

    def patch(dictconfig: types.ModuleType) -> Callable[[], None]:
        # (omegaconf is still being imported here: its errors module is loaded already)
        from omegaconf.errors import MissingMandatoryValue  # type: ignore[import-not-found,unused-ignore]

        cls = dictconfig.DictConfig
        get_attr, get_item = cls.__getattr__, cls.__getitem__

        def fill(config: Any, key: Any, error: MissingMandatoryValue) -> Any:
            arg = Argument(str(key), (str(key),), "")
            role = _role(arg) if isinstance(key, str) else None
            if role is None:
                raise error
            try:
                full = str(config._get_full_key(key))
            except Exception:
                full = str(key)
            from omegaconf import flag_override  # type: ignore[import-not-found,unused-ignore]

            value = _value(arg, role, scratch())
            with flag_override(config, ["readonly", "struct"], False):
                config[key] = value
            _say(state, full, role, value, where=state.user_line(sys._getframe(2)))
            if role == "checkpoint":
                state.checkpoints.add(value)
            return value

        def getattr_(self: Any, key: str) -> Any:
            try:
                return get_attr(self, key)
            except MissingMandatoryValue as e:
                return fill(self, key, e)

        def getitem(self: Any, key: Any) -> Any:
            try:
                return get_item(self, key)
            except MissingMandatoryValue as e:
                return fill(self, key, e)

        cls.__getattr__, cls.__getitem__ = getattr_, getitem

        def undo() -> None:
            cls.__getattr__, cls.__getitem__ = get_attr, get_item

        return undo

    return patch


def _click_argument(param: Any) -> Argument | None:
    """A click parameter as the role rule reads it; None when it cannot be a path."""
    import click

    path_type = isinstance(param.type, (click.Path, click.File)) or param.type is click.STRING
    if not path_type or getattr(param, "multiple", False) or param.nargs != 1:
        return None
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None
    names = tuple(o for o in (*param.opts, *param.secondary_opts) if o.startswith("-"))
    return Argument(param.name or "", names, str(getattr(param, "help", "") or ""))


def _script_line(state: ScriptRun) -> tuple[str, int] | None:
    """The script's own line on the stack (its `main()` call): the command line is parsed
    inside click, a library, not at a line of the user's."""
    frame = sys._getframe(1)
    while frame is not None:
        if os.path.realpath(frame.f_code.co_filename) == state.script:
            return state.script, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _errors_raise_missing(parser: argparse.ArgumentParser) -> Any:
    """While it parses, the parser's "arguments are required" error raises `_Missing`
    instead of exiting; any other error is the parser's own."""
    error = parser.error

    def on_error(message: str) -> Any:
        if message.startswith(_REQUIRED):
            raise _Missing(message[len(_REQUIRED) :].split(", "))
        return error(message)

    return patched(parser, "error", on_error)


def _fill(
    parser: argparse.ArgumentParser,
    names: list[str],
    state: ScriptRun,
    scratch: Callable[[], str],
) -> list[str] | None:
    """The command-line words that give every missing argument a value, or None when one of
    them matters to the analysis."""
    by_name = {argparse._get_action_name(a): a for a in parser._actions}
    actions = [by_name.get(n) for n in names]
    roles = [role_of(a) if a is not None else None for a in actions]
    if not actions or None in roles:
        return None
    options: list[str] = []
    positionals: list[str] = []
    for name, action, role in zip(names, actions, roles, strict=True):
        assert action is not None and role is not None
        value = _value(_argparse_argument(action), role, scratch())
        if action.option_strings:
            flag = max(action.option_strings, key=len)
            options += [flag, value]
        else:
            positionals.append(value)
        _say(state, name, role, value, where=state.user_line(sys._getframe(1)))
    return positionals + options


def _say(state: ScriptRun, name: str, role: str, value: str, where: Any) -> None:
    """Remember the placeholder (a stop that names it says which argument it stands for)
    and list it with what the run skipped."""
    state.filled[value] = name
    if role == "output":
        what = f"required argument {name} (a temporary path: nothing is written there)"
    else:
        what = f"required argument {name} (a checkpoint that is not there: no weights)"
    state.skip(what, where)


def _value(arg: Argument, role: str, folder: str) -> str:
    words = arg.words
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", arg.dest or "arg").strip("_") or "arg"
    if role == "checkpoint":
        return os.path.join(folder, "not-here", f"{stem}.pt")
    help_text = arg.help.lower()
    if words & _DIR_WORDS or re.search(r"\b(directory|folder|dir)\b", help_text):
        path = os.path.join(folder, stem)
        os.makedirs(path, exist_ok=True)
        return path
    suffix = ".onnx" if "onnx" in words or "onnx" in help_text else ""
    if not suffix and ("torchscript" in words or "torchscript" in help_text):
        suffix = ".pt"
    return os.path.join(folder, stem + suffix)
