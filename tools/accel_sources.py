"""Dump every OpenCL program the accel backend generates for a frozen list of partitions.

A developer tool for changes to the code generation (`fusionspec.accel.families`,
`fusionspec.accel.codegen`, the templates) that must not change what is generated: freeze a
profile's partitions once, dump their programs before the change and after it, and compare.
Nothing is built, so it runs without a working OpenCL compiler.

    python tools/accel_sources.py freeze --profile ci --out PARTS.pkl
    python tools/accel_sources.py dump PARTS.pkl DIR
    python tools/accel_sources.py compare BEFORE_DIR AFTER_DIR

``freeze`` draws the profile's cases as ``fusionspec conform`` does, partitions each graph with
the reference partitioner and pickles the partitions with the device they are generated for:
the first OpenCL device found (its capabilities only), and a GPU-like variant of it (local
memory a separate store, native half), which takes the GEMM family's tiled form. The draw is
frozen so that later changes to the suite's generator do not change what is compared.

``dump`` writes, for every device, kernel form (`FORMS`) and partition, one file
``DIR/<device>/<form>/<partition>.cl`` holding each plan's build options and source (or the
error that refused the partition), and ``DIR/manifest.json``. The device's tuning cache is
not read: the defaults are what is compared.

``compare`` says how many programs the two dumps hold, how many are identical, and lists the
files that differ (exit status 1 when any does).
"""

from __future__ import annotations

import argparse
import copyreg
import dataclasses
import json
import pickle
import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

#: The kernel forms dumped: each forced form, and the default (small problems in the table
#: form, the rest specialised). "opbyop", the unfused baseline (one op per program), is
#: dumped only when asked for (``--forms``).
FORMS = ("specialised", "table", "auto")


def _proxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


def _reduce_proxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, tuple[dict[Any, Any]]]:
    return _proxy, (dict(proxy),)


# An op's attributes are a read-only mapping, which pickle does not know by itself.
copyreg.pickle(MappingProxyType, _reduce_proxy)


def _gpu_variant(device: Any) -> Any:
    """A GPU-like copy of `device`: a dedicated local memory and native half arithmetic."""
    return dataclasses.replace(
        device, id=f"{device.id}-gpu-like", kind="gpu", local_mem_dedicated=True,
        local_mem_size=64 << 10, max_work_group_size=1024,
        max_work_item_sizes=(1024, 1024, 64), fp16=True, compute_units=32,
        extensions=device.extensions | {"cl_khr_fp16"})


def freeze(profile: str, out: Path) -> None:
    from fusionspec.accel.devices import select_device
    from fusionspec.conformance.selection import PROFILES, RunSettings
    from fusionspec.conformance.suite import plan_cases
    from fusionspec.reference.partitioner import partition
    from fusionspec.spec.errors import FusionspecError

    plan = plan_cases(RunSettings(profile=PROFILES[profile]))
    parts = []
    for planned in plan.cases:
        try:
            parts += partition(planned.case.graph)
        except FusionspecError:
            continue  # an ill-formed graph: the suite expects its rejection, no kernel
    device = dataclasses.replace(select_device(), handle=None)
    frozen = {"profile": profile, "devices": [device, _gpu_variant(device)],
              "partitions": parts}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pickle.dumps(frozen))
    print(f"{profile}: {len(plan.cases)} cases, {len(parts)} partitions -> {out}")


def _programs(part: Any, device: Any, form: str) -> str:
    """The text of every plan generated for `part`, or the error that refused it."""
    from fusionspec.accel.backend import single_op_partitions
    from fusionspec.accel.codegen.types import TypePolicy
    from fusionspec.accel.families import BuildContext, family_for
    from fusionspec.spec.errors import FusionspecError

    ctx = BuildContext(device, TypePolicy(native_fp16=device.fp16),
                       form="specialised" if form == "opbyop" else form)
    parts = single_op_partitions(part) if form == "opbyop" else [part]
    chunks = []
    try:
        for one in parts:
            plan = family_for(one).build(one, ctx)
            launches = "\n".join(f"// launch {launch.kernel} {launch.global_size} "
                                 f"{launch.local_size} {[p.binding for p in launch.params]}"
                                 for launch in plan.launches)
            chunks.append(f"// family {plan.family}\n// options {' '.join(plan.options)}\n"
                          f"// scratch {plan.scratch}\n{launches}\n{plan.source}")
    except FusionspecError as exc:
        chunks.append(f"// refused: {type(exc).__name__}: {exc}")
    return "\n".join(chunks)


def dump(frozen_path: Path, out: Path, forms: tuple[str, ...] = FORMS) -> None:
    frozen = pickle.loads(frozen_path.read_bytes())
    manifest: dict[str, int] = {}
    for device in frozen["devices"]:
        for form in forms:
            folder = out / device.id / form
            folder.mkdir(parents=True, exist_ok=True)
            for index, part in enumerate(frozen["partitions"]):
                (folder / f"{index:05d}.cl").write_text(_programs(part, device, form),
                                                        encoding="utf-8")
            manifest[f"{device.id}/{form}"] = len(frozen["partitions"])
            print(f"{device.id} {form}: {len(frozen['partitions'])} partitions", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")


def compare(before: Path, after: Path) -> int:
    names = sorted(p.relative_to(before) for p in before.rglob("*.cl"))
    later = {p.relative_to(after) for p in after.rglob("*.cl")}
    differ = [n for n in names if n not in later or
              (before / n).read_bytes() != (after / n).read_bytes()]
    extra = sorted(later - set(names))
    print(f"{len(names)} compared, {len(names) - len(differ)} identical, {len(differ)} differ, "
          f"{len(extra)} only in {after}")
    for name in differ[:50] + extra[:10]:
        print(f"  {name}")
    return 1 if differ or extra else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    frz = sub.add_parser("freeze", help="draw a profile's partitions and pickle them")
    frz.add_argument("--profile", default="ci")
    frz.add_argument("--out", type=Path, required=True)
    dmp = sub.add_parser("dump", help="write the programs of frozen partitions")
    dmp.add_argument("partitions", type=Path)
    dmp.add_argument("out", type=Path)
    dmp.add_argument("--forms", default=",".join(FORMS),
                     help=f"comma-separated, of {', '.join((*FORMS, 'opbyop'))}")
    cmp_ = sub.add_parser("compare", help="compare two dumps")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "freeze":
        freeze(args.profile, args.out)
    elif args.command == "dump":
        dump(args.partitions, args.out, tuple(args.forms.split(",")))
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
