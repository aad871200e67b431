"""The cases a profile and seed draw do not depend on which modules are loaded.

Hypothesis folds the literals of every loaded non-installed module into its draws; the suite
turns that off (`fusionspec.conformance.generate.stable`), so a checkout, a wheel, the command
line and the pytest plugin draw the same cases.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fusionspec.conformance.cases import CaseKind
from fusionspec.conformance.generate import stable
from fusionspec.conformance.suite import PROFILES, draw_cases
from fusionspec.spec.catalog import entry

#: A module full of literals of the kinds the generators draw (small integers, shapes, floats):
#: 532 of them, under the 1,024 beyond which Hypothesis reads none of a module's constants.
_LITERALS = "\n".join(f"C{n} = ({n}, {n * 3 + 1}, {n / 7!r}, {-n})" for n in range(1, 200))


def _literals(module: object) -> list[Any]:
    """The constants Hypothesis takes from `module`'s source."""
    return list(stable.providers.constants_from_module(module))  # type: ignore[attr-defined]


def _ids(pattern: str) -> list[str]:
    return [c.id for c in draw_cases(entry(pattern), CaseKind.valid, PROFILES["ci"])]


@pytest.fixture
def literal_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "fs_literals_probe.py").write_text(_LITERALS + "\n")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", "off")
    probe = importlib.import_module("fs_literals_probe")
    # Installed as a wheel, fusionspec has no local modules: the probe is then the only source
    # of local constants, and one Hypothesis ignores would make both tests vacuous.
    assert _literals(probe), (
        "Hypothesis reads no constants from the probe module (too many literals?): the "
        "draws would not depend on it with or without the guard")
    yield
    sys.modules.pop("fs_literals_probe", None)


@pytest.mark.parametrize("pattern", ["int8.pool_add", "fp.conv_post_ops"])
def test_draws_ignore_the_literals_of_loaded_modules(
        pattern: str, literal_module: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUSIONSPEC_DRAW_CACHE", "off")
    with_module = _ids(pattern)
    sys.modules.pop("fs_literals_probe", None)
    without_module = _ids(pattern)
    assert with_module == without_module, (
        f"[{pattern}] loading a module with extra literals changed the drawn cases "
        f"({len(set(with_module) ^ set(without_module))} ids differ): draws depend on the "
        "modules loaded, so a checkout and an installed copy draw different cases")


def test_the_guard_is_what_keeps_them_apart(literal_module: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the guard, the same module's literals reach the draw: the test above would
    notice a Hypothesis release whose hook the guard no longer reaches.

    Whether those literals then change a case id is chance (Hypothesis takes a constant for one
    choice in twenty, half of the time a local one, and a drawn constant often builds the same
    graph), so the test checks what makes the difference possible, not its luck: the draw asks
    the hook the guard replaces, and with the guard off the hook hands it the probe's
    literals."""
    providers = stable.providers
    real: Callable[[], Any] = providers._get_local_constants  # type: ignore[attr-defined]
    handed: list[Any] = []

    def unguarded() -> Any:
        handed.append(real())
        return handed[-1]

    monkeypatch.setattr(stable, "_no_local_constants", unguarded)
    # Hypothesis rescans sys.modules only when its length changed since its last scan, and
    # skips module ids it has seen: a worker whose last scan came at this length, or that saw
    # an earlier probe under a reused id, would not read this one. Forget the earlier scans.
    monkeypatch.setattr(providers, "_sys_modules_len", None, raising=False)
    monkeypatch.setattr(providers, "_seen_modules", set(), raising=False)
    _ids("int8.pool_add")
    assert handed, (
        "int8.pool_add's draw never asked Hypothesis' _get_local_constants: the guard "
        "replaces a hook this Hypothesis release no longer uses")
    literals = _literals(sys.modules["fs_literals_probe"])
    missing = [c for c in literals if c not in handed[-1]]
    assert not missing, (
        f"with the guard off, {len(missing)} of the probe's {len(literals)} literals were not "
        f"among the local constants handed to the draw (e.g. {missing[:3]}): the probe no "
        "longer exercises the guard")


def test_nested_blocks_keep_the_outer_setting_and_the_constants_cache() -> None:
    """A floor's designed cases are many Hypothesis runs inside one draw: an inner block must
    neither switch the local constants back on when it ends nor empty the cache of allowed
    constants the outer block filled."""
    providers = stable.providers
    real = providers._get_local_constants  # type: ignore[attr-defined]
    cache = providers.CONSTANTS_CACHE  # type: ignore[attr-defined]
    with stable.source_independent():
        cache[("probe", ())] = ((), ())
        with stable.source_independent():
            assert providers._get_local_constants is not real, (  # type: ignore[attr-defined]
                "inside the inner block the local constants are off")
        assert providers._get_local_constants is not real, (  # type: ignore[attr-defined]
            "the inner block's end switched the local constants back on inside the outer one")
        assert ("probe", ()) in cache, (
            "the inner block emptied the constants cache the outer one filled")
    assert providers._get_local_constants is real, (  # type: ignore[attr-defined]
        "the outer block's end restores Hypothesis' own hook")
    assert ("probe", ()) not in cache, "the outer block's end empties the constants cache"
