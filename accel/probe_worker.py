"""The probe's own process: ``python -m fusionspec.accel.probe_worker DEVICE-ID``.

It builds and runs every probe partition (`fusionspec.accel.probe_graphs`) on the device and
prints one JSON line, ``{"ok": ..., "reason": ...}``; a compiler that crashes takes only this
process down, which `fusionspec.accel.probe` reads from the exit status.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from fusionspec.reference.filling import fill_inputs
from fusionspec.reference.partitioner import partition

from .backend import AccelBackend
from .devices import select_device
from .errors import AccelError
from .probe_graphs import FEATURE_KERNELS, FEATURES_SOURCE, PROBE_GRAPHS
from .runtime import runtime_for

__all__ = ["probe", "main"]


def probe(device_id: str) -> str:
    """Build and run every probe partition on `device_id`; '' when all went well, else what
    failed."""
    info = select_device(device_id)
    device = info.as_device()
    backend = AccelBackend(device_id)
    for name, make in PROBE_GRAPHS.items():
        graph = make().finalize()
        try:
            for part in partition(graph):
                got = backend.compile(part, device).execute(fill_inputs(part, seed=0))
                bad = [t.id for t in part.outputs
                       if t.id not in got or np.shape(got[t.id]) != t.shape]
                if bad:
                    return f"{name}: the kernels ran but returned no output for tensor(s) {bad}"
        except AccelError as exc:
            return f"{name}: {_one_line(exc)}"
    try:
        runtime_for(info).program(FEATURES_SOURCE, kernels=FEATURE_KERNELS)
    except AccelError as exc:
        return f"vector loads and stores: {_one_line(exc)}"
    return ""


def _one_line(exc: Exception) -> str:
    summary = getattr(exc, "summary", None)
    return summary if isinstance(summary, str) else str(exc).splitlines()[0]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m fusionspec.accel.probe_worker DEVICE-ID", file=sys.stderr)
        return 2
    problem = probe(args[0])
    print(json.dumps({"ok": not problem, "reason": problem}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
