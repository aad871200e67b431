"""The reference op implementations next to PyTorch CPU on realistic shapes.

Each case runs both sides in the same process, alternating which goes first, and reports the
median wall time of each, their ratio (reference / torch) and the peak memory the reference
allocates (tracemalloc, measured in a separate untimed run so tracing does not slow the timed
ones). It also checks that both sides agree, so a fast wrong answer cannot pass unnoticed.

    python bench/bench_reference.py --out results/bench_reference.json [--repeats 7]
                                    [--threads 1] [--cases conv3x3,matmul_bias]

Both sides get the same number of threads (`--threads`, default 1), set through the usual
environment variables before NumPy and PyTorch load. One thread is the default because the two
runtimes, interleaved in one process, otherwise fight over the cores: each one's idle workers
keep spinning while the other computes, which on a small shared machine turns a 2 ms
convolution into 50 ms on either side and makes the ratios meaningless.

The reference functions are called exactly as the executor calls them: attributes from the
validated op (schema defaults filled in), inputs as float32 arrays.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import write_json

if TYPE_CHECKING:  # NumPy loads in main(), once the thread count is in the environment
    import numpy as np

Thunk = Callable[[], Any]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def ref(kind: str, *arrays: np.ndarray[Any, Any], **attrs: Any) -> Any:
    """Call `kind`'s reference function the way the executor does."""
    from fusionspec.reference.registry import implementation
    from fusionspec.spec.dtypes import DataType
    from fusionspec.spec.graph import LogicalTensor, Op
    from fusionspec.spec.validate import validate_op

    impl = implementation(kind)
    if impl is None:
        raise SystemExit(f"no reference implementation of {kind}")
    ins = tuple(LogicalTensor(i, DataType.f32, a.shape) for i, a in enumerate(arrays))
    op = validate_op(Op(0, kind, ins, (LogicalTensor(99, DataType.f32),), attrs))
    return impl.fn(*arrays, **op.attrs)


@dataclass
class Case:
    name: str
    description: str
    reference: Thunk
    torch: Thunk


def build_cases(torch: Any, rng: np.random.Generator) -> list[Case]:
    import numpy as np

    f = torch.nn.functional
    cases: list[Case] = []

    x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    conv = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1],
                data_format="NCX", weights_format="OIX")
    cases.append(Case("conv3x3", "Convolution 3x3 64->64, 56x56, batch 1, NCX/OIX, pad 1",
                      lambda: ref("Convolution", x, w, **conv),
                      lambda: f.conv2d(xt, wt, padding=1)))

    x2 = rng.standard_normal((2, 32, 112, 112)).astype(np.float32)
    w2 = rng.standard_normal((64, 32, 1, 1)).astype(np.float32)
    xt2, wt2 = torch.from_numpy(x2), torch.from_numpy(w2)
    conv1 = dict(strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1],
                 data_format="NCX", weights_format="OIX")
    cases.append(Case("conv1x1", "Convolution 1x1 32->64, 112x112, batch 2, NCX/OIX",
                      lambda: ref("Convolution", x2, w2, **conv1),
                      lambda: f.conv2d(xt2, wt2)))

    a = rng.standard_normal((384, 1024)).astype(np.float32)
    b = (rng.standard_normal((1024, 1024)) / 32).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)
    at, bt, biast = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(bias)
    cases.append(Case("matmul_bias", "MatMul 384x1024 x 1024x1024 + bias (MatMul's bias input)",
                      lambda: ref("MatMul", a, b, bias),
                      lambda: torch.addmm(biast, at, bt)))
    cases.append(Case("matmul_bias_gelu",
                      "MatMul 384x1024 x 1024x1024 + bias (MatMul's bias input) -> GELU (erf)",
                      lambda: ref("GELU", ref("MatMul", a, b, bias)),
                      lambda: f.gelu(torch.addmm(biast, at, bt))))

    s = rng.standard_normal((64, 1024, 1024)).astype(np.float32)
    st = torch.from_numpy(s)
    cases.append(Case("softmax", "SoftMax 64x1024x1024 over the last axis",
                      lambda: ref("SoftMax", s, axis=2)[0],
                      lambda: torch.softmax(st, dim=-1)))
    return cases


def to_numpy(value: Any) -> np.ndarray[Any, Any]:
    import numpy as np

    return np.asarray(value.numpy() if hasattr(value, "numpy") else value, dtype=np.float64)


def measure(case: Case, repeats: int) -> dict[str, Any]:
    import numpy as np

    got, want = to_numpy(case.reference()), to_numpy(case.torch())  # also the warm-up
    max_rel = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
    times: dict[str, list[float]] = {"reference": [], "torch": []}
    sides = [("reference", case.reference), ("torch", case.torch)]
    for rep in range(repeats):
        for name, fn in sides if rep % 2 == 0 else sides[::-1]:
            start = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - start) * 1e3)
    tracemalloc.start()
    case.reference()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    ref_ms, torch_ms = statistics.median(times["reference"]), statistics.median(times["torch"])
    return dict(name=case.name, description=case.description, reference_ms=ref_ms,
                torch_ms=torch_ms, ratio=ref_ms / torch_ms, reference_peak_bytes=peak,
                max_rel_diff=max_rel, samples_ms=times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="where to write the JSON results")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per side (median)")
    parser.add_argument("--cases", default="", help="comma-separated subset of case names")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for both NumPy's BLAS and PyTorch (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if "numpy" in sys.modules:
        print("note: NumPy was loaded before the thread count could be set", file=sys.stderr)
    for name in THREAD_VARIABLES:
        os.environ[name] = str(args.threads)
    if args.threads > 1:  # idle OpenMP workers sleep instead of spinning against the BLAS
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import numpy as np

    try:
        import torch
    except ImportError:
        print("PyTorch is needed for the comparison: pip install torch", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    cases = build_cases(torch, np.random.default_rng(args.seed))
    wanted = {c for c in args.cases.split(",") if c}
    unknown = wanted - {c.name for c in cases}
    if unknown:
        print(f"unknown case(s) {sorted(unknown)}; known: {[c.name for c in cases]}",
              file=sys.stderr)
        return 2
    results = []
    header = f"{'case':<18}{'torch ms':>10}{'ref ms':>10}{'ratio':>8}{'ref peak MB':>13}"
    print(header)
    print("-" * len(header))
    for case in cases:
        if wanted and case.name not in wanted:
            continue
        r = measure(case, args.repeats)
        results.append(r)
        print(f"{r['name']:<18}{r['torch_ms']:>10.2f}{r['reference_ms']:>10.2f}"
              f"{r['ratio']:>8.2f}{r['reference_peak_bytes'] / 2**20:>13.1f}", flush=True)
    doc = dict(python=platform.python_version(), numpy=np.__version__,
               torch=str(torch.__version__), threads=args.threads,
               cpus=os.cpu_count(), machine=platform.machine(), repeats=args.repeats,
               cases=results)
    write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
