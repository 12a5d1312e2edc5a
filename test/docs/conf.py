# Offline Sphinx configuration for the doc pages the patch series changes.
# Upstream's doc/conf.py downloads its shared configuration at build time;
# this one needs no network: no intersphinx inventories, the default theme.
from __future__ import annotations


project = "PyOpenCL (fork doc check)"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
]
exclude_patterns = ["subst.rst", "_build"]
html_theme = "alabaster"
autodoc_member_order = "bysource"
