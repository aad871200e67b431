"""The suite's version is written once (fusionspec.spec.release), read by pyproject.toml as its
dynamic version, equal to the latest release of CHANGELOG.md, and shown by
``fusionspec --version``; a git checkout is told apart by its commit."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from fusionspec.cli.version import version_text
from fusionspec.spec.release import VERSION, source_commit

ROOT = Path(__file__).resolve().parent.parent


def _releases() -> list[str]:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[([^\]]+)\]", text, re.M)


def test_the_version_is_changelogs_latest_release() -> None:
    headings = _releases()
    assert headings[0] == "Unreleased", f"CHANGELOG.md keeps [Unreleased] first: {headings}"
    latest = headings[1]
    assert re.fullmatch(r"\d+\.\d+\.\d+", latest), f"a release is X.Y.Z: {latest}"
    assert latest == VERSION, \
        f"fusionspec.spec.release.VERSION ({VERSION}) is CHANGELOG.md's latest release ({latest})"


def test_pyproject_reads_the_version_from_the_one_place() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in config["project"]["dynamic"], "the version is dynamic"
    assert "version" not in config["project"], "no second, static version"
    assert config["tool"]["setuptools"]["dynamic"]["version"] == \
        {"attr": "fusionspec.spec.release.VERSION"}, "pyproject reads fusionspec.spec.release"
    assert "setuptools_scm" not in config["tool"], "no version from git tags"
    requires = " ".join(config["build-system"]["requires"])
    assert "setuptools-scm" not in requires, f"the build needs no git metadata: {requires}"


def test_version_shows_the_version_and_commit() -> None:
    first = version_text().splitlines()[0]
    assert first.startswith(f"fusionspec {VERSION}"), f"--version names the version: {first}"
    commit = source_commit()
    if commit is not None:
        assert commit in first, f"--version names the commit of a checkout: {first}"


def test_a_folder_without_git_has_no_commit(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    assert source_commit(tmp_path) is None, "an installed copy (no .git) records no commit"


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_checkout_records_head_and_local_changes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "pyproject.toml")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert source_commit(tmp_path) == head, "a clean checkout records HEAD"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    source_commit.cache_clear()
    assert source_commit(tmp_path) == f"{head}+dirty", "local changes are marked +dirty"
    source_commit.cache_clear()


def test_an_installed_copy_inside_another_repository_has_no_commit(tmp_path: Path) -> None:
    """A virtual environment inside some project's checkout: only a .git at the package's own
    top folder counts, not one further up."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(tmp_path, "init", "-q")
    inner = tmp_path / "venv" / "site-packages" / "fusionspec"
    inner.mkdir(parents=True)
    (inner / "pyproject.toml").write_text("")
    assert source_commit(inner) is None, "the enclosing repository's commit is not the suite's"


def test_the_version_names_each_backends_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib.metadata import EntryPoint

    import fusionspec.backend.registry as registry

    class _Dist:
        name, version = "mybackend", "1.4.0"

    class _Point(EntryPoint):
        @property
        def dist(self) -> _Dist:  # type: ignore[override]
            return _Dist()

    third = _Point("mine", "mybackend.plugin:Backend", registry.ENTRY_POINT_GROUP)
    ours = list(registry.entry_points(group=registry.ENTRY_POINT_GROUP))
    monkeypatch.setattr(registry, "entry_points", lambda group: [*ours, third])
    text = version_text()
    assert "  mine: mybackend 1.4.0" in text, \
        f"--version names a third-party backend with its distribution and version: {text}"
    assert f"  reference: fusionspec {VERSION}" in text, \
        f"fusionspec's own backends come with fusionspec's version: {text}"
