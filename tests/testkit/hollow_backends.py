"""Backends whose declared limitations would leave a run with too little judged: each computes
every floating-point output wrong (`WrongMath`), so only a run that judges its arithmetic can
catch it. The suite must refuse them when they load or call their runs incomplete, never PASS.
"""

from __future__ import annotations

from fusionspec.backend import Limitation

from .toy_backends import WrongMath


class EveryValidAndNearMiss(WrongMath):
    """Declares every valid and every near-miss case of the catalog unsupported by glob."""

    name = "every-valid-and-near-miss"
    limitations = (Limitation("not yet", pattern="*", case_kind="valid"),
                   Limitation("not yet", pattern="*", case_kind="near-miss"))


class KindGlob(WrongMath):
    """Declares every valid and near-miss case unsupported with one case kind glob."""

    name = "kind-glob"
    limitations = (Limitation("not yet", case_kind="[vn]*"),)


class ValidOnEveryDevice(WrongMath):
    """Declares every valid case unsupported on a device kind glob: the loaded backend's
    device matches it, so the declaration is refused when the backend loads."""

    name = "valid-on-every-device"
    limitations = (Limitation("not on this device", device_kind="*", case_kind="valid"),)


class NoValidBnRelu(WrongMath):
    """Declares the valid cases of one pattern unsupported: a fair declaration for the whole
    catalog, but a run of that pattern alone judges no valid case, which only the run's floor
    can catch."""

    name = "no-valid-bn-relu"
    limitations = (Limitation("no BatchNorm + ReLU", pattern="fp.bn_relu", case_kind="valid"),)
