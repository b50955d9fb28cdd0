# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html in a real browser: the lab report (tests/fixtures/report/lab-rack6-report.json)
rendered by plugin_utils/_render.py and opened with headless Chromium (Debian's `chromium`).

Checks: Chromium logs no console message at all (the page has no script, so any message is a
fault) and no uncaught error; the screenshot is a PNG of the requested size that is neither blank
nor a single colour. A positive control page with a deliberate console error and an uncaught
exception proves the log check can see them with this Chromium, so the check cannot pass vacuously.

Skipped, with the reason, when `chromium` is not installed (`make test` installs it).
Run: .venv/bin/pytest -q tests/integration/test_report_html_chromium.py   (about 3 s)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
# _render imports the judge's verdict names: the checkout as ansible_collections.diskproof.fleet.
sys.path.insert(0, str(_ROOT / ".ansible" / "collections"))
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _aggregate, _render, _report  # noqa: E402

FIXTURE = _ROOT / "tests" / "fixtures" / "report" / "lab-rack6-report.json"
CHROMIUM = shutil.which("chromium")
WIDTH, HEIGHT = 1280, 2000
# Console messages ("[..:INFO:CONSOLE:1] "text", source: ...") and uncaught exceptions.
CONSOLE_LINE = re.compile(r":CONSOLE[:(]|Uncaught|ERROR:CONSOLE")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package `chromium`; make test installs it)")


def run_chromium(page: Path, screenshot: Path, profile: Path) -> subprocess.CompletedProcess:
    argv = [CHROMIUM, "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
            "--user-data-dir=%s" % profile, "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
            "--window-size=%d,%d" % (WIDTH, HEIGHT), "--screenshot=%s" % screenshot, page.as_uri()]
    # No display, no session bus: Chromium must not wait for either.
    # Its crash-report database goes under XDG_CONFIG_HOME whatever --user-data-dir says: keep it in the test's
    # temp dir, not root's ~/.config (make test writes only the checkout and /tmp).
    env = dict(os.environ, LC_ALL="C", XDG_CONFIG_HOME=str(profile.parent / "xdg-config"), HOME=str(profile.parent))
    env.pop("DISPLAY", None)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)


def console_lines(stderr: str):
    return [line for line in stderr.splitlines() if CONSOLE_LINE.search(line)]


def png_summary(path: Path, columns: int = 320):
    """(width, height, distinct colours, non-white fraction) of an 8-bit RGB/RGBA PNG.

    Decodes with zlib and the PNG filters, only the leftmost ``columns`` pixels of every row
    (a row prefix depends on nothing to its right), which keeps pure Python fast.
    """
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", None
    while position < len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        kind, body = data[position + 4:position + 8], data[position + 8:position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour_type, _compression, _filter, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, header
    pixel = 3 if colour_type == 2 else 4
    stride, keep = width * pixel, min(columns, width) * pixel
    raw = zlib.decompress(idat)
    previous = bytearray(keep)
    colours, non_white = set(), 0
    for row in range(height):
        start = row * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1:start + 1 + keep])
        for index in range(keep):
            left = line[index - pixel] if index >= pixel else 0
            up = previous[index]
            if kind == 1:
                line[index] = (line[index] + left) & 255
            elif kind == 2:
                line[index] = (line[index] + up) & 255
            elif kind == 3:
                line[index] = (line[index] + ((left + up) >> 1)) & 255
            elif kind == 4:
                upper_left = previous[index - pixel] if index >= pixel else 0
                estimate = left + up - upper_left
                distances = (abs(estimate - left), abs(estimate - up), abs(estimate - upper_left))
                predictor = left if distances[0] <= distances[1] and distances[0] <= distances[2] else up if distances[1] <= distances[2] else upper_left
                line[index] = (line[index] + predictor) & 255
        for index in range(0, keep, pixel):
            rgb = bytes(line[index:index + 3])
            colours.add(rgb)
            non_white += rgb != b"\xff\xff\xff"
        previous = line
    return width, height, len(colours), non_white / float(height * (keep // pixel))


def test_console_check_sees_errors(tmp_path):
    """Positive control: a console.error and an uncaught exception show up in the log."""
    page = tmp_path / "control.html"
    page.write_text('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>control</title></head><body><p>control</p>'
                    '<script>console.error("diskproof-control"); notDefinedAnywhere();</script></body></html>', encoding="utf-8")
    result = run_chromium(page, tmp_path / "control.png", tmp_path / "profile")
    lines = console_lines(result.stderr)
    assert any("diskproof-control" in line for line in lines), result.stderr[-3000:]
    assert any("Uncaught ReferenceError" in line for line in lines), result.stderr[-3000:]


def test_lab_report_html_in_chromium(tmp_path):
    report = json.loads(FIXTURE.read_text(encoding="utf-8"))
    collection = _report.collection_of(report)
    judged = _aggregate.judge_report(collection.by_host, collection.host_statuses, report["run"],
                                     settings=_aggregate.make_settings(peer_group="test"))
    page = tmp_path / "report.html"
    page.write_text(_render.render_html(*judged), encoding="utf-8")
    screenshot = tmp_path / "report.png"

    result = run_chromium(page, screenshot, tmp_path / "profile")

    assert result.returncode == 0, result.stderr[-3000:]
    assert console_lines(result.stderr) == [], result.stderr[-3000:]
    assert screenshot.is_file(), result.stderr[-3000:]
    # A blank 1280x2000 page is about 12 kB; the report with its charts is far larger.
    assert screenshot.stat().st_size > 100 * 1024, screenshot.stat().st_size
    width, height, colours, non_white = png_summary(screenshot)
    assert (width, height) == (WIDTH, HEIGHT)
    assert colours >= 16, colours          # text anti-aliasing, bars, badges: many colours
    assert 0.02 < non_white < 0.9, non_white  # neither blank nor a solid block
