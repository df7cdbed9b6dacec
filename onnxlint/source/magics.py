"""IPython syntax in notebook cells, masked so that the cell parses as Python (as ruff does).

A cell is Python plus IPython's escapes, which libcst cannot parse: line magics
(`%matplotlib inline`), shell escapes (`!pip install x`, `files = !ls`), help (`?obj`,
`obj??`), autocall (`/f x`, `,f a b`, `;f a b`) and cell magics (`%%time` on the first
line). An escape counts only at the start of a logical line (not inside brackets or a
string), the way IPython's input transformers and ruff's lexer see it: `(a\\n % b)` is
Python's modulo. Each escape line is replaced by `pass` at its indentation (`x = ...` for
an assignment), continuation lines of a backslash-continued escape by blank lines, so
every line keeps its number and every other line its text: findings and fixes map back
one to one, and no fix ever touches a masked line (`MaskedCell.masked`).

Which cells are not Python at all is ruff's rule: a cell whose first word is an automagic
command (`pip install torch` without `%`; unlike ruff, not when the line is Python, such as
`time = 3`), or that holds a cell magic other than the few that run their body as Python
(`%%time`, `%%timeit`, `%%capture`, ...), is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Cell magics whose body is Python run in the notebook's namespace (ruff's list).
PYTHON_CELL_MAGICS = frozenset(
    {"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"}
)
# IPython commands that work without `%` (automagic); a cell starting with one is a
# command, not Python (ruff's list: Jupyter does not allow code after them).
AUTOMAGICS = frozenset(
    [
        "alias",
        "alias_magic",
        "autoawait",
        "autocall",
        "automagic",
        "bookmark",
        "cd",
        "code_wrap",
        "colors",
        "conda",
        "config",
        "debug",
        "dhist",
        "dirs",
        "doctest_mode",
        "edit",
        "env",
        "gui",
        "history",
        "killbgscripts",
        "load",
        "load_ext",
        "loadpy",
        "logoff",
        "logon",
        "logstart",
        "logstate",
        "logstop",
        "lsmagic",
        "macro",
        "magic",
        "mamba",
        "matplotlib",
        "micromamba",
        "notebook",
        "page",
        "pastebin",
        "pdb",
        "pdef",
        "pdoc",
        "pfile",
        "pinfo",
        "pinfo2",
        "pip",
        "popd",
        "pprint",
        "precision",
        "prun",
        "psearch",
        "psource",
        "pushd",
        "pwd",
        "pycat",
        "pylab",
        "quickref",
        "recall",
        "rehashx",
        "reload_ext",
        "rerun",
        "reset",
        "reset_selective",
        "run",
        "save",
        "sc",
        "set_env",
        "sx",
        "system",
        "tb",
        "time",
        "timeit",
        "unalias",
        "unload_ext",
        "who",
        "who_ls",
        "whos",
        "xdel",
        "xmode",
    ]
)
# An escape at the start of a logical line: magic, shell, help, autocall.
_ESCAPE_START = ("%", "!", "?", "/", ",", ";")
# `x = %time f()`, `files = !ls`, `a, b = %who_ls`: an assignment of an escape's result.
_ASSIGN_ESCAPE = re.compile(r"^(\s*[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)[%!]")
# Characters that make a cell worth scanning at all (most cells have none of them).
_SUSPECT = re.compile(r"^[ \t]*[%!?/,;]|\?[ \t]*$|=[ \t]*[%!]", re.M)


@dataclass(frozen=True)
class MaskedCell:
    """A cell's text as Python: `text` has the cell's lines, escapes masked; `masked` the
    1-based lines that were; `python` False when the whole cell is not Python."""

    text: str
    masked: frozenset[int] = frozenset()
    python: bool = True


def mask_cell(source: str) -> MaskedCell:
    """The cell's text with IPython escapes masked (see the module docstring)."""
    first = source.lstrip("\n").split("\n", 1)[0]
    words = first.split()
    if words and words[0] in AUTOMAGICS and not _looks_like_python(first, words[0]):
        return MaskedCell("", python=False)
    if "%%" in source:
        for line in source.split("\n"):
            stripped = line.lstrip()
            if stripped.startswith("%%"):
                name = stripped[2:].split(None, 1)[0] if stripped[2:].strip() else ""
                if name not in PYTHON_CELL_MAGICS:
                    return MaskedCell("", python=False)
    if not _SUSPECT.search(source):
        return MaskedCell(source)
    return _mask_lines(source)


def _looks_like_python(line: str, word: str) -> bool:
    """`time = 3`, `run(x)`, `env.step()`: an automagic word used as a Python name (the
    line compiles, or is the start of a bracketed statement); `cd ..`, `pip install x`
    are commands."""
    try:
        compile(line.strip(), "<cell>", "exec")
    except SyntaxError as exc:
        return "never closed" in str(exc.msg) or "unexpected EOF" in str(exc.msg)
    return True


def _mask_lines(source: str) -> MaskedCell:
    lines = source.split("\n")
    out: list[str] = []
    masked: set[int] = set()
    scanner = _LineScanner()
    escape_continues = False
    for number, line in enumerate(lines, start=1):
        if escape_continues:  # a backslash-continued escape goes on
            escape_continues = line.rstrip().endswith("\\")
            out.append("")
            masked.add(number)
            continue
        if scanner.at_statement_start:
            replacement = _escape_replacement(line)
            if replacement is not None:
                out.append(replacement)
                masked.add(number)
                escape_continues = line.rstrip().endswith("\\")
                continue
        scanner.feed(line)
        out.append(line)
    return MaskedCell("\n".join(out), frozenset(masked))


def _escape_replacement(line: str) -> str | None:
    """The Python that stands for `line` if it is an IPython escape, else None."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(_ESCAPE_START):
        return indent + "pass"
    m = _ASSIGN_ESCAPE.match(line)
    if m:
        return m.group(1) + "..."
    if "?" in stripped and _ends_in_help(line):
        return indent + "pass"
    return None


class _LineScanner:
    """Enough of Python's lexer to know whether the next line starts a statement: open
    brackets, an open triple-quoted string, a trailing backslash."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open triple quote
        self.continued = False

    @property
    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        self.continued = False
        i, n = 0, len(line)
        while i < n:
            if self.quote is not None:
                end = _find_close(line, i, self.quote)
                if end < 0:
                    return
                self.quote, i = None, end
                continue
            c = line[i]
            if c == "#":
                return
            if c in "'\"":
                triple = line[i : i + 3]
                if triple in ("'''", '"""'):
                    self.quote = triple
                    i += 3
                    continue
                end = _find_close(line, i + 1, c)
                if end < 0:  # an unterminated one-line string: a syntax error anyway
                    return
                i = end
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            elif c == "\\" and i == n - 1:
                self.continued = True
            i += 1


def _ends_in_help(line: str) -> bool:
    """`obj?` / `obj.attr??`: the line's code (before any comment) ends with `?`."""
    return _code_part(line).rstrip().endswith("?")


def _code_part(line: str) -> str:
    """`line` up to its comment (a `#` inside a string is no comment)."""
    in_string: str | None = None
    i = 0
    while i < len(line):
        c = line[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if line.startswith(in_string, i):
                i += len(in_string)
                in_string = None
                continue
        elif c == "#":
            return line[:i]
        elif c in "'\"":
            in_string = line[i : i + 3] if line[i : i + 3] in ("'''", '"""') else c
            i += len(in_string)
            continue
        i += 1
    return line


def _find_close(line: str, start: int, quote: str) -> int:
    """The offset after the closing `quote` from `start`, or -1 (escapes skipped)."""
    i = start
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line.startswith(quote, i):
            return i + len(quote)
        i += 1
    return -1
