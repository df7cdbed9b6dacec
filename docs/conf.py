"""The documentation site (Sphinx + MyST Markdown + Furo), built from this folder.

    python -m sphinx -W --keep-going -b dirhtml docs site

`dirhtml` gives every page a folder URL (`rules/OLX401/`), which is what a finding links to:
`onnxlint.core.violation.DOCS_URL` + `rules/OLX401/`. The site is served from that URL (GitHub
Pages of the repository, .github/workflows/docs.yml). `-W` makes every warning an error: a broken
link between pages, a page no table of contents lists, a missing image. tests/docs builds it so.
"""

from __future__ import annotations

from onnxlint import __version__
from onnxlint.core.violation import DOCS_URL

project = "onnxlint"
author = "The onnxlint developers"
copyright = "the onnxlint developers"
release = version = __version__

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# The generated rules index is docs/rules/README.md (GitHub shows it for the folder); the site's
# rules/index.md includes it, so it is not a page of its own. conf.py and _build are not pages.
exclude_patterns = ["_build", "_extra", "rules/README.md", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# The README's sections are included under a page title, so their headings start at level 2
# or 3 (a page on the README's deep analysis starts with its `###` subsections).
suppress_warnings = ["myst.header"]

html_theme = "furo"
html_title = f"onnxlint {version}"
html_baseurl = DOCS_URL
html_static_path: list[str] = []
# The deep-analysis report example is a self-contained HTML file of its own (inline CSS and
# SVG plots, no scripts): _extra/deep/example-report.html is copied as it is, to deep/.
html_extra_path = ["_extra"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
pygments_style = "friendly"
pygments_dark_style = "monokai"
# No fonts, scripts or images from elsewhere: the site works offline and from a file server.
html_theme_options = {"navigation_with_keys": True}
