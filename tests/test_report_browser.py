"""Issue 35: the report of `snakemake --report`, opened in a real browser (headless Chromium,
Debian's `chromium` package: .ci/run installs it when missing): its app renders, every figure
it embeds decodes to an image with a size, and every result has its caption.

The report is one HTML file, a React app over `var results = {path: {data_uri, caption,
mime_type, ...}}`. The test appends one script to a copy of it that, 3 s (of Chromium's
virtual time) after the page has loaded, draws every image result into an `<img>` and, when all have loaded or failed, writes
what it found into `<pre id="bnnsweep-check">`; Chromium's `--dump-dom` prints the page
after its scripts ran."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from test_workflow import smoke_run, snakemake  # noqa: F401 - the module-scoped smoke sweep

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

CHECK = """
<script>
function bnnsweepCheck() {
  const entries = Object.entries(results);
  const images = entries.filter(([, e]) => (e.mime_type || "").startsWith("image/"));
  const found = {app: document.getElementById("app").children.length, images: {},
                 captions: {}, mime: {}};
  for (const [path, e] of entries) {
    found.captions[path] = (e.caption || "").replace(/<[^>]*>/g, " ").trim().length;
    found.mime[path] = e.mime_type;
  }
  let pending = images.length;
  const done = function () {
    if (--pending > 0) return;
    const pre = document.createElement("pre");
    pre.id = "bnnsweep-check";
    pre.textContent = JSON.stringify(found);
    document.body.appendChild(pre);
  };
  if (pending === 0) { pending = 1; done(); }
  for (const [path, e] of images) {
    const img = new Image();
    img.onload = function () { found.images[path] = [img.naturalWidth, img.naturalHeight]; done(); };
    img.onerror = function () { found.images[path] = [0, 0]; done(); };
    img.src = e.data_uri;
  }
}
// the app renders after the page's load event: look a (virtual) 3 s later
window.addEventListener("load", function () { setTimeout(bnnsweepCheck, 3000); });
</script>
"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def open_in_chromium(html_path, tmp_path) -> dict:
    """What the check script found, from the DOM Chromium dumps after the page's scripts."""
    proc = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=30000", "--dump-dom", html_path.as_uri()],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    match = re.search(r'<pre id="bnnsweep-check">(.*?)</pre>', proc.stdout, re.DOTALL)
    assert match, f"no check output; chromium said: {proc.stderr[-2000:]}"
    text = match.group(1).replace("&quot;", '"').replace("&amp;", "&")
    return json.loads(text.replace("&lt;", "<").replace("&gt;", ">"))


def test_the_report_opens_in_chromium_with_every_figure_and_caption(smoke_run, tmp_path):  # noqa: F811
    if chromium() is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")
    workdir, config = smoke_run
    report = workdir / "report_browser.html"
    snakemake(workdir, config, "--report", str(report))
    checked = tmp_path / "report.html"
    html = report.read_text(encoding="utf-8")
    head, tail = html.rsplit("</body>", 1)  # the page's own end; its scripts hold the string too
    checked.write_text(head + CHECK + "</body>" + tail, encoding="utf-8")
    found = open_in_chromium(checked, tmp_path)
    assert found["app"] > 0  # the React app rendered
    figures = {p for p, mime in found["mime"].items() if mime.startswith("image/")}
    assert {p.rsplit("/", 1)[-1] for p in figures} == {"occam_hill.png", "toy_regression.png"}
    assert all(w > 100 and h > 100 for w, h in found["images"].values()), found["images"]
    assert set(found["images"]) == figures
    assert all(length > 20 for length in found["captions"].values()), found["captions"]
    assert any(p.endswith("error_table.md") for p in found["captions"])
