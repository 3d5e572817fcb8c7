#!/usr/bin/env python3
"""The report of a failing mutant in a real browser (ctest samplecheck_report_screenshot,
label extended): headless Chromium loads report.html from disk, its DOM holds the plots
as <svg> elements, and the screenshot is not blank (ink on the page, red where it failed).

    screenshot_test.py SAMPLECHECK CHROMIUM WORK_DIR
"""

import os
import shutil
import subprocess
import sys

import matplotlib.image

SAMPLECHECK, CHROMIUM, WORK = sys.argv[1:4]
if not CHROMIUM or not os.path.exists(CHROMIUM):
    print("no Chromium found (Debian: apt-get install chromium): skipped")
    sys.exit(77)
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
out = os.path.join(WORK, "report")
p = subprocess.run(
    [
        SAMPLECHECK,
        "qualify",
        "--subject",
        "cpu.sort_filter:S07",
        "--checks",
        "goodness_of_fit,tail,support",
        "--report-dir",
        out,
        "-q",
    ],
    capture_output=True,
    text=True,
    timeout=600,
)
if p.returncode != 1:
    sys.exit(f"the mutant was not killed (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
page = "file://" + os.path.abspath(os.path.join(out, "report.html"))
browser = [
    CHROMIUM,
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    f"--user-data-dir={os.path.join(WORK, 'profile')}",
]

dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120)
svgs = dom.stdout.count("<svg")
print(f"DOM after load: {len(dom.stdout)} characters, {svgs} <svg> elements")
if "samplecheck qualify" not in dom.stdout or svgs < 4:
    sys.exit(f"the page did not load with its plots:\n{dom.stderr[-2000:]}")

shot = os.path.join(WORK, "report.png")
subprocess.run(
    [*browser, "--window-size=1200,2400", f"--screenshot={shot}", page], capture_output=True, text=True, timeout=120
)
if not os.path.exists(shot):
    sys.exit("Chromium wrote no screenshot")
pixels = matplotlib.image.imread(shot)[:, :, :3]
ink = (pixels.min(axis=2) < 0.9).mean()
red = ((pixels[:, :, 0] > 0.6) & (pixels[:, :, 1] < 0.3) & (pixels[:, :, 2] < 0.3)).mean()
print(f"screenshot {shot}: {pixels.shape[1]}x{pixels.shape[0]}, ink {ink:.1%}, red {red:.2%}")
if ink < 0.02 or red < 0.0005:
    sys.exit("the screenshot is blank or shows no failure")
print("screenshot_test: passed")
