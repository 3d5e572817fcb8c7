"""One version: the package's (the wheel's), CMake's project() (samplecheck's), and what
`samplecheck --version` prints, with the subject protocol this package speaks."""

import os
import re
import subprocess

import samplecheck_subject
from conftest import PACKAGE_ROOT
from samplecheck_subject.protocol import PROTOCOL_VERSION


def test_package_version_is_the_projects():
    with open(os.path.join(os.path.dirname(PACKAGE_ROOT), "CMakeLists.txt")) as f:
        project = re.search(r"project\(samplecheck VERSION ([0-9.]+)", f.read())
    assert project is not None
    assert samplecheck_subject.__version__ == project.group(1)


def test_samplecheck_version_names_the_same_version_and_protocol(samplecheck_bin):
    done = subprocess.run(
        [samplecheck_bin, "--version"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["samplecheck", samplecheck_subject.__version__], done.stdout
    assert f"subject protocol {PROTOCOL_VERSION}" in lines, done.stdout
