"""Shared test set-up: the hypothesis profiles. (Helpers shared by the tests are the package
`testkit`, importable because pytest puts this folder on the path: pyproject.toml.)"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

# Hypothesis profiles, registered once. A test states at most its example budget
# (``@settings(max_examples=N)``, the cost it is worth); how examples are drawn is the profile's:
# - ``ci`` (the default): derandomized, so a run is reproducible from the command alone; no
#   deadline (shared CI machines are noisy); no example database;
# - ``explore``: random (new examples on every run) with hypothesis' example database, which
#   replays earlier failures first, for hunting rare failures by hand
#   (``FUSIONSPEC_HYPOTHESIS_PROFILE=explore pytest ...``).
_QUIET = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
settings.register_profile("ci", deadline=None, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=_QUIET)
settings.register_profile("explore", deadline=None, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("FUSIONSPEC_HYPOTHESIS_PROFILE", "ci"))

# Tests patch the generator at run time (mutated strategies, the old generator's behaviour),
# which the draw cache's key cannot see: the tests draw afresh, and the cache has tests of its
# own (tests/conformance/test_draw_cache.py) that turn it on.
os.environ["FUSIONSPEC_DRAW_CACHE"] = "off"

# The reference's side of the cases is cached per test session (every run a test starts reads
# what an earlier one computed), never in the user's own cache.
if "FUSIONSPEC_ORACLE_CACHE" not in os.environ:
    _ORACLE = tempfile.mkdtemp(prefix="fusionspec-test-oracle-")
    atexit.register(shutil.rmtree, _ORACLE, ignore_errors=True)
    os.environ["FUSIONSPEC_ORACLE_CACHE"] = _ORACLE
