"""Render a report page in headless Chromium at 1280 px and check that it reads well.

Fails (exit 1, one line per problem) when the page overflows horizontally (the document is
wider than the window: a wide table must scroll inside its box instead) or an image does not
load. Exit 2 when Chromium is not installed (Debian: ``apt-get install -y chromium``).

    python bench/check_report_html.py reports/<run_id>/report.html [--width 1280]

How: a copy of the page with a small inline script is written beside it (so relative images
resolve), Chromium loads it with ``--dump-dom`` and a virtual-time budget, and the script
writes what it measured into the DOM, which this script reads back. Network access is off
(``--disable-background-networking``) and nothing remote is fetched by the page itself.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_PROBE = """<script>
window.addEventListener('load', function () {
  var doc = document.documentElement;
  var images = Array.prototype.map.call(document.images, function (img) {
    return {src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0,
            right: img.getBoundingClientRect().right};
  });
  var wide = [];
  Array.prototype.forEach.call(document.body.querySelectorAll('*'), function (el) {
    var right = el.getBoundingClientRect().right;
    var scrolled = el.parentElement && el.parentElement.closest('.table-wrap');
    if (right > window.innerWidth && !scrolled) {
      wide.push(el.tagName.toLowerCase() + ' ' + Math.round(right) + ' px');
    }
  });
  var out = {viewport: window.innerWidth, scroll_width: doc.scrollWidth, images: images,
             wide: wide.slice(0, 3)};
  var pre = document.createElement('pre');
  pre.id = 'junction-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """The first Chromium executable on PATH, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def measure(page: Path, width: int = 1280, chromium: str | None = None) -> dict:
    """What the probe measured: viewport, document scroll width, images (src, ok, right)."""
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
    probe = page.with_name(f".check-{page.name}")
    probe.write_text(page.read_text().replace("</body>", _PROBE + "</body>"))
    try:
        with tempfile.TemporaryDirectory() as profile:
            result = subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--no-first-run",
                 f"--user-data-dir={profile}", f"--window-size={width},900",
                 "--hide-scrollbars", "--virtual-time-budget=10000", "--dump-dom",
                 probe.resolve().as_uri()],
                capture_output=True, text=True, timeout=120)
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(r'<pre id="junction-check">(.*?)</pre>', result.stdout, re.S)
    if not found:
        raise RuntimeError(f"chromium returned no measurement (exit {result.returncode}): "
                           f"{result.stderr.strip().splitlines()[-1:]}")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def problems(measured: dict) -> list[str]:
    """One line per problem: horizontal overflow, an image that did not load or runs off."""
    out = []
    if measured["scroll_width"] > measured["viewport"]:
        out.append(f"page overflows horizontally: {measured['scroll_width']} px wide in a "
                   f"{measured['viewport']} px window (widest: "
                   f"{'; '.join(measured.get('wide', [])) or 'text overflowing its box'})")
    for img in measured["images"]:
        if not img["ok"]:
            out.append(f"image did not load: {img['src']}")
        elif img["right"] > measured["viewport"]:
            out.append(f"image runs off the page: {img['src']} ends at {img['right']:.0f} px")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    args = parser.parse_args(argv)
    try:
        measured = measure(args.page, args.width)
    except FileNotFoundError as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 2
    found = problems(measured)
    for line in found:
        print(line)
    if not found:
        print(f"ok: {args.page} fits {args.width} px, {len(measured['images'])} image(s) loaded")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
