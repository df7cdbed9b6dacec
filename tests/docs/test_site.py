"""The documentation site: built from docs/ with Sphinx in strict mode, every link inside it
resolves, every URL a finding can carry is a built page, and a real Chromium renders a rule page.

The build is `python -m sphinx -W --keep-going -b dirhtml docs OUT`, as .github/workflows/docs.yml
publishes it. Sphinx, MyST and Furo come with the `test` extra.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from onnxlint.core.violation import DOCS_BASE_URL, DOCS_URL, Span, Violation
from onnxlint.rules import all_rules

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
ARTIFACTS = REPO / "test-artifacts" / "docs"
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _sphinx(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("sphinx-build") is None and not _has_sphinx():
        message = "Sphinx is not installed: pip install -e '.[test]'"
        if CI:
            pytest.fail(message)  # CI installs the test extra: a skip there is a broken set-up
        pytest.skip(message)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-b",
            "dirhtml",
            "-q",
            *(source, out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _has_sphinx() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) for m in ("sphinx", "myst_parser", "furo"))


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = _sphinx(DOCS, out)
    assert run.returncode == 0, f"the docs build failed in strict mode:\n{run.stdout}{run.stderr}"
    return out


def _page(site: Path, url: str) -> Path:
    """The built file a URL of the site is served from (a folder URL: its index.html)."""
    assert url.startswith(DOCS_URL), url
    rel = unquote(urlsplit(url).path)[len(urlsplit(DOCS_URL).path) :]
    path = site / rel
    return path / "index.html" if url.endswith("/") or path.is_dir() else path


# --------------------------------------------------------------------------- strict build


def test_the_site_builds_in_strict_mode(site: Path) -> None:
    assert (site / "index.html").is_file()
    for page in ("configuration", "suppression", "ci", "editors", "deep", "deep/worker"):
        assert (site / page / "index.html").is_file(), page


def test_a_broken_link_or_a_page_outside_every_toc_fails_the_build(tmp_path: Path) -> None:
    """Strict mode is what makes the build a check: the same build of a copy of docs/ with one
    link to a missing page, or one page no table of contents lists, fails and says which."""
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy, ignore=shutil.ignore_patterns("_build"))
    # conf.py's includes of ../README.md resolve against the copy's parent
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    (tmp_path / "extension").mkdir()
    shutil.copy(REPO / "extension" / "README.md", tmp_path / "extension" / "README.md")
    assert _sphinx(copy, tmp_path / "ok").returncode == 0

    page = copy / "ci.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    broken = _sphinx(copy, tmp_path / "broken")
    assert broken.returncode != 0
    assert "no-such-page" in broken.stderr

    page.write_text(page.read_text().replace("See [the missing page](no-such-page.md).", ""))
    (copy / "orphan.md").write_text("# Nobody links here\n")
    orphan = _sphinx(copy, tmp_path / "orphan")
    assert orphan.returncode != 0
    assert "orphan" in orphan.stderr


# --------------------------------------------------------------------------- URLs of findings


def _finding_urls() -> set[str]:
    """Every onnxlint-site URL a finding can carry: its `url` (JSON, text's `docs:`, LSP's
    codeDescription, the deep report), SARIF's helpUri and informationUri, the hover's links,
    and the links in the rule pages (`onnxlint rule`, the hover)."""
    from onnxlint.cli.output.machine import render_sarif
    from onnxlint.server.hover import rule_summary

    urls: set[str] = set()
    findings = [
        Violation(path="m.py", span=Span(1, 1, 1, 2), code=r.code, message="m", severity=r.severity)
        for r in all_rules()
    ]
    urls |= {v.url for v in findings}
    sarif = json.loads(render_sarif(findings, Path.cwd()))
    driver = sarif["runs"][0]["tool"]["driver"]
    urls.add(driver["informationUri"])
    urls |= {rule["helpUri"] for rule in driver["rules"]}
    for rule in all_rules():
        urls |= set(re.findall(r"\((https://[^)\s]+)\)", rule_summary(rule.code) or ""))
        urls |= set(re.findall(r"https://\S+", "\n".join(rule.doc_sections().values())))
    ours = {u.rstrip(".,;") for u in urls if u.startswith(DOCS_URL)}
    assert len(ours) >= len(findings) + 2  # one page per rule, the home page, deep/ pages
    return ours


def test_every_url_a_finding_can_carry_is_a_built_page(site: Path) -> None:
    missing = sorted(u for u in _finding_urls() if not _page(site, u).is_file())
    assert not missing, f"URLs findings carry with no page in the built site: {missing}"
    leftovers = [
        p
        for p in [
            *REPO.joinpath("onnxlint").rglob("*.py"),
            REPO / "README.md",
            REPO / "package.json",
        ]
        if "onnxlint.dev" in p.read_text(encoding="utf-8")
    ]
    assert not leftovers, f"links to a host that does not exist: {leftovers}"


def test_a_rule_page_names_itself_by_the_url_its_findings_carry(site: Path) -> None:
    """The built page's canonical URL is the finding's URL: the site is built for the host and
    path the findings link to (conf.py's html_baseurl is DOCS_URL)."""
    for rule in all_rules():
        url = f"{DOCS_BASE_URL}{rule.code}/"
        text = _page(site, url).read_text(encoding="utf-8")
        assert f'<link rel="canonical" href="{url}"' in text, rule.code
        assert f"{rule.code}: {rule.name}" in text


# --------------------------------------------------------------------------- links inside it


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            elif name in ("href", "src"):
                self.refs.append((tag, name, value))


@functools.cache
def _parsed(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _internal_links(site: Path) -> Iterator[tuple[Path, str, str, str]]:
    for page in sorted(site.rglob("*.html")):
        for tag, attr, value in _parsed(page).refs:
            yield page, tag, attr, value


def test_every_link_and_resource_inside_the_site_resolves(site: Path) -> None:
    base = "http://site.invalid/onnxlint/"
    broken: list[str] = []
    checked = 0
    for page, _tag, _attr, value in _internal_links(site):
        page_url = base + page.relative_to(site).as_posix()
        target = urlsplit(urljoin(page_url, value))
        if target.scheme in ("mailto", "data", "javascript") or target.netloc != "site.invalid":
            continue
        checked += 1
        path = site / unquote(target.path)[len("/onnxlint/") :]
        if path.is_dir() or target.path.endswith("/"):
            path = path / "index.html"
        where = f"{page.relative_to(site)}: {value}"
        if not target.path.startswith("/onnxlint/") or not path.is_file():
            broken.append(where)
        elif (
            target.fragment
            and path.suffix == ".html"
            and unquote(target.fragment) not in _parsed(path).ids
        ):
            broken.append(where + " (no such anchor)")
    assert checked > 1000
    assert not broken, "\n".join(broken[:50])


def test_the_site_loads_nothing_from_elsewhere(site: Path) -> None:
    """Scripts, styles, images and frames come from the site itself (it works offline, and a
    reader's browser asks no third party); only plain links lead elsewhere."""
    outside = [
        f"{page.relative_to(site)}: <{tag} {attr}={value}>"
        for page, tag, attr, value in _internal_links(site)
        if (tag != "a" and not (tag == "link" and attr == "href" and "canonical" in value))
        and urlsplit(value).netloc
        and not value.startswith(DOCS_URL)
    ]
    assert not outside, "\n".join(outside[:20])


def test_the_configuration_reference_has_every_key(site: Path) -> None:
    from onnxlint.core.config import _KEYS, DEEP_KEYS, SCRIPT_KEYS, TARGET_KEYS

    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    sections = dict(
        (m.group(1), m.group(2))
        for m in re.finditer(r"^## `\[+([^\]]+)\]+`\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    )
    tables = {
        "tool.onnxlint": _KEYS,
        "tool.onnxlint.deep": DEEP_KEYS,
        "tool.onnxlint.scripts": SCRIPT_KEYS,
        "tool.onnxlint.targets": TARGET_KEYS,
    }
    for table, keys in tables.items():
        assert table in sections, table
        for key in keys:
            assert f"| `{key}` |" in sections[table], f"{table}.{key}"
    assert "translation-table" in sections["tool.onnxlint.targets"]
    assert (site / "configuration" / "index.html").is_file()


def test_the_deep_guide_carries_a_real_report_with_its_plots(site: Path) -> None:
    report = site / "deep" / "example-report.html"
    text = report.read_text(encoding="utf-8")
    assert text.count("<svg") >= 3  # the memory bars of each target and ONNX Runtime's sweep
    assert "ONNX Runtime over the dynamic sizes" in text
    assert "OLX802" in text and f"{DOCS_BASE_URL}OLX802/" in text
    page = (site / "deep" / "report" / "index.html").read_text(encoding="utf-8")
    assert '<iframe src="../example-report.html"' in page


def test_the_editor_guide_shows_the_screenshots(site: Path) -> None:
    page = _parsed(site / "editors" / "index.html")
    images = {Path(v).name for tag, _a, v in page.refs if tag == "img"}
    assert {"vscode.png", "vscode-hover.png", "vscode-deep.png", "vscode-report.png"} <= images


# --------------------------------------------------------------------------- a real browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def served(site: Path, tmp_path: Path) -> Iterator[str]:
    """The site at http://127.0.0.1:PORT/onnxlint/, the path GitHub Pages serves it under."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "onnxlint").symlink_to(site)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/onnxlint/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.editor
def test_a_rule_page_renders_in_chromium_with_its_example(served: str) -> None:
    """Headless Chromium (playwright-core from the extension's node_modules) opens a rule page at
    the path its findings link to: the title, the Example and Use instead code blocks, visible
    and highlighted, the navigation to the other rules, and no request leaves 127.0.0.1."""
    chromium = Path("/usr/bin/chromium")
    node = shutil.which("node")
    playwright = REPO / "node_modules" / "playwright-core"
    if not chromium.exists() or node is None or not playwright.is_dir():
        pytest.skip("needs node, node_modules (npm ci) and /usr/bin/chromium (.ci/setup-tests.sh)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    rule = "OLX401"
    url = served + f"rules/{rule}/"
    run = subprocess.run(
        [node, str(Path(__file__).with_name("browse.mjs")), url, str(ARTIFACTS / f"{rule}.png")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(run.stdout)
    assert seen["status"] == 200
    assert seen["title"].startswith(f"{rule}: legacy-torchscript-exporter")
    assert seen["h1"] == f"{rule}: legacy-torchscript-exporter"
    assert seen["outside"] == [], f"requests that left the machine: {seen['outside']}"
    assert seen["failed"] == [] and seen["errors"] == [], seen
    example = seen["sections"]["Example"]
    assert "dynamo=False" in example["code"] and example["visible"]
    assert example["highlighted"] > 3 and example["monospace"]
    assert "dynamo=True" in seen["sections"]["Use instead"]["code"]
    assert seen["stylesheets"] >= 1 and seen["sidebar_rules"] >= len(all_rules())
    assert (ARTIFACTS / f"{rule}.png").stat().st_size > 10_000


def test_rule_open_opens_the_rules_built_page(site: Path, tmp_path: Path, cli) -> None:
    """`onnxlint rule OLX105 --open` hands the page's URL to the web browser (Python's webbrowser,
    which runs $BROWSER), and that URL is the built page of the rule."""
    seen = tmp_path / "opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {seen}\n')
    browser.chmod(0o755)
    r = cli("rule", "literal-size-on-dynamic-dim", "--open", env={"BROWSER": str(browser)})
    assert r.returncode == 0, r.stderr
    url = seen.read_text()
    assert url == f"{DOCS_BASE_URL}OLX105/" and r.stdout.strip() == url
    page = _page(site, url).read_text(encoding="utf-8")
    assert f'<link rel="canonical" href="{url}"' in page
    assert "<title>OLX105: literal-size-on-dynamic-dim" in page
