"""A report's HTML page: self-contained (no remote fonts or scripts), from the Markdown
report's HTML (``report.html`` of a run, and the diff's page)."""

from __future__ import annotations

import html

__all__ = ["PAGE_STYLE", "html_page"]


PAGE_STYLE = ("body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;"
              "overflow-wrap:break-word}"
              "img{max-width:100%;height:auto}"
              ".table-wrap{overflow-x:auto;max-width:100%}"
              "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}")
"""The report page's CSS: images scale to the page width, wide tables scroll in their box."""


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page (no remote fonts or scripts); tables wrapped to scroll.

    The Markdown report's markers become HTML: ``<!-- verdicts -->`` … ``<!-- /verdicts -->``
    a ``<div id="verdicts">`` (the browser check looks for it), ``<!-- details -->`` …
    ``<!-- /details -->`` a ``<details>`` block, closed by default."""
    body = body.replace("<table>", "<div class='table-wrap'><table>").replace(
        "</table>", "</table></div>")
    body = body.replace("<!-- verdicts -->", "<div id='verdicts'>").replace(
        "<!-- /verdicts -->", "</div>")
    body = body.replace("<!-- details -->", "<details><summary>the full comparison table"
                        "</summary>").replace("<!-- /details -->", "</details>")
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{PAGE_STYLE}</style></head><body>"
            + body + "</body></html>")
