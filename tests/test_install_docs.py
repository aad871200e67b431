"""The install lines the docs give work as written: docs/install.md's wheel lines, run in a
fresh virtual environment, install a fusionspec whose command runs; and no page tells a reader
to install fusionspec from a package index it is not on."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / "docs" / "install.md"
#: The pages a reader follows: each install line there must be one install.md gives.
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def _block(marker: str) -> list[str]:
    """The command lines of the fenced block that follows ``<!-- install: marker -->``."""
    text = INSTALL.read_text(encoding="utf-8")
    found = re.search(rf"<!-- install: {marker} -->\s*```sh\n(.*?)```", text, re.S)
    assert found, f"docs/install.md has no '{marker}' install block"
    return [line.split("#")[0].strip() for line in found.group(1).splitlines()
            if line.strip() and not line.startswith("#")]


def test_no_page_installs_fusionspec_from_an_index() -> None:
    wrong = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"pip install [\"']?fusionspec\[", line) and "--find-links" not in line \
                    and page != INSTALL:
                wrong.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not wrong, "fusionspec is on no package index: these lines cannot work " \
                      f"(use a line of docs/install.md): {wrong}"


def _index_reachable() -> bool:
    """Whether pip's package index answers (the lines download fusionspec's dependencies)."""
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    host = urlsplit(url).hostname or "pypi.org"
    port = urlsplit(url).port or (443 if url.startswith("https") else 80)
    try:
        with socket.create_connection((host, port), timeout=5):
            return True
    except OSError:
        return False


def test_the_wheel_lines_install_a_working_fusionspec(tmp_path: Path) -> None:
    """The checkout is this repository (as ``./fusionspec``); the lines run as written in a
    new virtual environment that sees nothing of the test environment."""
    if not _index_reachable():
        pytest.skip("the package index is not reachable: the install lines download "
                    "fusionspec's dependencies (CI runs this test)")
    (tmp_path / "fusionspec").symlink_to(ROOT, target_is_directory=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    for line in _block("wheel"):
        assert line.startswith("python3 -m pip "), f"an install line runs pip: {line}"
        command = [str(python), *(part.strip('"') for part in shlex.split(line)[1:])]
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True,
                              env=environment, timeout=900, check=False)
        assert done.returncode == 0, f"{line}: exit {done.returncode}: {done.stderr[-1500:]}"
    # From the environment's folder: the checkout beside it would shadow the package.
    where = subprocess.run([str(python), "-c", "import fusionspec.cli as c; print(c.__file__)"],
                           cwd=venv, capture_output=True, text=True, env=environment,
                           check=True, timeout=120).stdout.strip()
    assert Path(where).is_relative_to(venv), \
        f"the fusionspec imported is the one installed into the new environment: {where}"
    version = subprocess.run([str(venv / "bin" / "fusionspec"), "--version"], cwd=venv,
                             capture_output=True, text=True, env=environment, timeout=120,
                             check=False)
    assert version.returncode == 0 and "fusionspec" in version.stdout, \
        f"the installed command runs: {version.stdout} {version.stderr[-800:]}"
    plugin = subprocess.run([str(python), "-c", "import xdist, jinja2, rich"], cwd=venv,
                            capture_output=True, text=True, env=environment, timeout=120,
                            check=False)
    assert plugin.returncode == 0, \
        f"the extras bring pytest-xdist (for -n auto) and the report's Jinja2: {plugin.stderr}"


@pytest.mark.parametrize("marker", ["checkout", "wheel"])
def test_each_install_block_names_the_extras(marker: str) -> None:
    lines = _block(marker)
    assert any("[conformance,report]" in line for line in lines), \
        f"the '{marker}' block installs the suite and the report: {lines}"
