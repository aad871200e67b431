"""How many OpenCL programs a conformance run needs, per kernel family and kernel form.

A cold run pays the compiler once per distinct program (source and build options), so this
count, not the number of cases, sets its cost. The script draws the profile's cases as
``fusionspec conform`` does, partitions each graph with the reference partitioner and generates
the OpenCL backend's plans for every partition in each kernel form (code generation only: no
program is built), then counts the distinct programs, per family and in all (a program that
the table form shares between families, the gathering program, counts once in the total).

    python bench/bench_programs.py --out results/bench_programs.json [--profile ci]
                                   [--device pocl-cpu]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json

FORMS = ("specialised", "auto")


def count(profile_name: str, device_id: str | None) -> dict[str, Any]:
    from fusionspec.accel.backend import AccelBackend
    from fusionspec.conformance.selection import PROFILES, RunSettings
    from fusionspec.conformance.suite import plan_cases
    from fusionspec.reference.partitioner import partition
    from fusionspec.spec.errors import FusionspecError

    start = time.perf_counter()
    plan = plan_cases(RunSettings(profile=PROFILES[profile_name]))
    parts = []
    for planned in plan.cases:
        try:
            parts += partition(planned.case.graph)
        except FusionspecError:
            continue  # an ill-formed graph: the suite expects its rejection, no kernel
    drawn_s = time.perf_counter() - start
    backends = {form: AccelBackend(device_id, form=form) for form in FORMS}
    device = backends["auto"].devices()[0]
    programs: dict[str, dict[str, set[tuple[str, tuple[str, ...]]]]] = {
        form: defaultdict(set) for form in FORMS}
    unsupported = 0
    for part in parts:
        for form, backend in backends.items():
            try:
                for plan_ in backend.plans(part, device):
                    programs[form][plan_.family].add((plan_.source, plan_.options))
            except FusionspecError:  # unsupported (f8) or rejected: no program
                unsupported += form == "auto"
    return {"profile": profile_name, "device": device.id, "cases": len(plan.cases),
            "partitions": len(parts), "unsupported_partitions": unsupported,
            "draw_s": drawn_s,
            "programs": {form: {"total": len(set().union(*found.values())),
                                "by_family": {k: len(v) for k, v in sorted(found.items())}}
                         for form, found in programs.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--device", help="OpenCL device id (default: the backend's first)")
    args = parser.parse_args()
    found = count(args.profile, args.device)
    print(f"{found['profile']} profile: {found['cases']} cases, {found['partitions']} "
          f"partitions ({found['unsupported_partitions']} unsupported) on {found['device']}")
    for form, row in found["programs"].items():
        families = ", ".join(f"{k} {v}" for k, v in row["by_family"].items())
        print(f"  {form:<12} {row['total']:>5} programs ({families})")
    write_json(args.out, found)


if __name__ == "__main__":
    main()
