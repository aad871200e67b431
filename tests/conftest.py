"""Shared test set-up: the hypothesis profiles, and the tests folder's helper modules
(``_material``) importable from every test folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

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
