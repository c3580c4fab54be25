"""Render a report page in headless Chromium at 1280 px and check that it reads well.

Fails (exit 1, one line per problem) when:

- the page overflows horizontally (the document is wider than the window: a wide table must
  scroll inside its box instead);
- an image does not load, runs off the page, or is drawn at less than half its natural
  size (its text would be unreadable);
- the first ``FIRST_SCREEN_PX`` (800) px of the page do not hold the verdict lines (the
  ``<div id="verdicts">`` block the report writes first) and the top edge of the first
  image (the plot);
- a plot's legend names a strategy that has no line: read from the JSON sidecar the report
  writes beside the image (``plot.json`` beside ``plot.png``: ``junction.evidence.plots``).

Exit 2 when Chromium is not installed (Debian: ``apt-get install -y chromium``).

    python bench/checks/check_report_html.py reports/<run_id>/report.html [--width 1280]
        [--screenshot first-screen.png]

``--screenshot PATH`` also saves what a reader sees first: the page at the given width and
``FIRST_SCREEN_PX`` high, as a PNG.

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

_PROBE = """<script>
window.addEventListener('load', function () {
  var doc = document.documentElement;
  var images = Array.prototype.map.call(document.images, function (img) {
    var box = img.getBoundingClientRect();
    return {src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0,
            right: box.right, top: box.top + window.scrollY, width: box.width,
            height: box.height, natural_width: img.naturalWidth,
            natural_height: img.naturalHeight};
  });
  var verdicts = document.getElementById('verdicts');
  var vbox = verdicts ? verdicts.getBoundingClientRect() : null;
  var wide = [];
  Array.prototype.forEach.call(document.body.querySelectorAll('*'), function (el) {
    var right = el.getBoundingClientRect().right;
    var scrolled = el.parentElement && el.parentElement.closest('.table-wrap');
    if (right > window.innerWidth && !scrolled) {
      wide.push(el.tagName.toLowerCase() + ' ' + Math.round(right) + ' px');
    }
  });
  var out = {viewport: window.innerWidth, scroll_width: doc.scrollWidth, images: images,
             wide: wide.slice(0, 3),
             verdicts: vbox ? {top: vbox.top + window.scrollY,
                               bottom: vbox.bottom + window.scrollY,
                               lines: verdicts.querySelectorAll('li').length} : null};
  var pre = document.createElement('pre');
  pre.id = 'junction-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
FIRST_SCREEN_PX = 800
"""Height of the first screen: what a reader sees at 1280 × 800 before scrolling."""
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars")


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
                [chromium, *_FLAGS, f"--user-data-dir={profile}",
                 f"--window-size={width},{FIRST_SCREEN_PX}", "--virtual-time-budget=10000",
                 "--dump-dom", probe.resolve().as_uri()],
                capture_output=True, text=True, timeout=120)
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(r'<pre id="junction-check">(.*?)</pre>', result.stdout, re.S)
    if not found:
        raise RuntimeError(f"chromium returned no measurement (exit {result.returncode}): "
                           f"{result.stderr.strip().splitlines()[-1:]}")
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(page: Path, out: Path, width: int = 1280, chromium: str | None = None) -> Path:
    """Save the page's first screen (``width`` × ``FIRST_SCREEN_PX``) as a PNG at ``out``."""
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [chromium, *_FLAGS, f"--user-data-dir={profile}",
             f"--window-size={width},{FIRST_SCREEN_PX}", "--virtual-time-budget=10000",
             f"--screenshot={out.resolve()}", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    if not out.exists():
        raise RuntimeError(f"chromium wrote no screenshot (exit {result.returncode}): "
                           f"{result.stderr.strip().splitlines()[-1:]}")
    return out


def legend_problems(page: Path) -> list[str]:
    """A legend entry with no line, per image of ``page`` that has a JSON sidecar
    (``plot.json`` beside ``plot.png``: {"legend": [labels], "lines": [{"label"}, ...]})."""
    out = []
    for src in re.findall(r'<img[^>]*\ssrc="([^"]+)"', page.read_text()):
        sidecar = (page.parent / src).with_suffix(".json")
        if "://" in src or not sidecar.is_file():
            continue
        doc = json.loads(sidecar.read_text())
        drawn = {line["label"] for line in doc.get("lines", [])}
        for label in doc.get("legend", []):
            if label not in drawn:
                out.append(f"legend of {src} names {label!r}, which has no line")
    return out


def problems(measured: dict, first_screen: int = FIRST_SCREEN_PX) -> list[str]:
    """One line per problem: horizontal overflow, an image that did not load, runs off or
    is shrunk below half its natural size, verdict lines missing from the first screen."""
    out = []
    verdicts = measured.get("verdicts")
    if verdicts is None:
        out.append("no verdict lines: the page has no <div id=\"verdicts\">")
    elif verdicts["bottom"] > first_screen:
        out.append(f"verdict lines end at {verdicts['bottom']:.0f} px, below the first "
                   f"{first_screen} px")
    if verdicts is not None and measured["images"] and \
            measured["images"][0]["top"] > first_screen:
        out.append(f"the first image starts at {measured['images'][0]['top']:.0f} px, below "
                   f"the first {first_screen} px")
    if measured["scroll_width"] > measured["viewport"]:
        out.append(f"page overflows horizontally: {measured['scroll_width']} px wide in a "
                   f"{measured['viewport']} px window (widest: "
                   f"{'; '.join(measured.get('wide', [])) or 'text overflowing its box'})")
    for img in measured["images"]:
        if not img["ok"]:
            out.append(f"image did not load: {img['src']}")
        elif img["right"] > measured["viewport"]:
            out.append(f"image runs off the page: {img['src']} ends at {img['right']:.0f} px")
        elif img["width"] < img["natural_width"] / 2:
            out.append(f"image drawn at under half its size: {img['src']} is "
                       f"{img['width']:.0f} px wide of {img['natural_width']} px")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--screenshot", type=Path, default=None, metavar="PATH",
                        help=f"also save the first {FIRST_SCREEN_PX} px as a PNG")
    args = parser.parse_args(argv)
    try:
        measured = measure(args.page, args.width)
        if args.screenshot is not None:
            screenshot(args.page, args.screenshot, args.width)
            print(f"screenshot: {args.screenshot}")
    except FileNotFoundError as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 2
    found = problems(measured) + legend_problems(args.page)
    write_results(__file__, {"page": str(args.page), "width": args.width, "problems": found,
                             "images": len(measured["images"]),
                             "verdict_lines": measured["verdicts"]["lines"]})
    for line in found:
        print(line)
    if not found:
        print(f"ok: {args.page} fits {args.width} px, {len(measured['images'])} image(s) "
              f"loaded, {measured['verdicts']['lines']} verdict line(s) in the first "
              f"{FIRST_SCREEN_PX} px")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
