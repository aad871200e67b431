"""The GPU check: the OpenCL backend on a machine's GPU, tried end to end in a few minutes.

On a machine with a GPU (and no network: `nox -s gpu-check` installs the project from a wheel
directory), it runs, on the first GPU OpenCL device or ``--device``:

1. the accel tests (``pytest tests/accel -m "not slow"``) with that device first;
2. the ci conformance run (``fusionspec conform --backend accel --device ID --profile ci``);
3. a bench of compute-bound and memory-bound partitions (MatMul + BiasAdd + GELU, 3x3
   convolutions + BiasAdd + ReLU, SoftMax over short and long rows, a four-op element-wise
   chain, a copy for the card's bandwidth), the fused kernels timed by OpenCL profiling events
   (`fusionspec.backend.timing`), next to PyTorch on the same card when it is installed (CUDA
   events, TF32 off);

and writes ``gpu_check.json`` and ``gpu_check.md`` (one table) under ``--out``. Exit codes:
0 all ran and passed; 1 the tests or the conformance run failed; 3 no GPU OpenCL device (the
message says what was found instead). ``--allow-cpu --quick`` runs the same path on a CPU
device with small shapes (how the script is tested), ``--torch cpu`` times PyTorch on the CPU.

    python tools/gpu_check.py --out results/gpu_check [--device nvidia-gpu] [--quick]
        [--allow-cpu] [--skip-tests] [--skip-conformance] [--torch auto|cuda|cpu|off]
        [--no-large] [--budget 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

#: `fusionspec conform`'s exit code for a backend or device that cannot be used.
UNAVAILABLE = 3
FAILED = 1


class Unavailable(Exception):
    """No device this check can run on; the message says why."""


@dataclass(frozen=True)
class Row:
    """One bench row: a single-partition graph, the work it does, and PyTorch's version."""

    name: str
    graph: Callable[[], Any]
    flops: int  # multiply-adds count twice; 0 for a memory-bound row
    nbytes: int  # bytes a fused kernel must move at least
    torch: Callable[[Any, list[Any]], Callable[[], object]]  # (torch, inputs) -> a run


def _matmul_row(m: int, k: int, n: int) -> Row:
    import bench_accel

    def torch_run(torch: Any, x: list[Any]) -> Callable[[], object]:
        return lambda: torch.nn.functional.gelu(torch.addmm(x[2], x[0], x[1]))
    return Row(f"MatMul {m}x{k}x{n} + BiasAdd + GELU", lambda: bench_accel.matmul_graph(m, k, n),
               2 * m * k * n, 4 * (m * k + k * n + n + m * n), torch_run)


def _conv_row(batch: int, channels: int, hw: int) -> Row:
    import bench_accel

    def torch_run(torch: Any, x: list[Any]) -> Callable[[], object]:
        return lambda: torch.relu(torch.nn.functional.conv2d(x[0], x[1], x[2], padding=1))
    size = batch * channels * hw * hw
    return Row(f"Conv 3x3 {batch}x{channels}x{hw}x{hw} + BiasAdd + ReLU",
               lambda: bench_accel.conv_graph(batch, channels, hw),
               2 * size * 9 * channels, 4 * (2 * size + 9 * channels * channels + channels),
               torch_run)


def _softmax_row(rows: int, cols: int) -> Row:
    import bench_accel

    def torch_run(torch: Any, x: list[Any]) -> Callable[[], object]:
        return lambda: torch.softmax(x[0], dim=-1)
    return Row(f"SoftMax {rows}x{cols}", lambda: bench_accel.softmax_graph(rows, cols), 0,
               8 * rows * cols, torch_run)


def chain_graph(elements: int) -> Any:
    """Add -> ReLU -> Multiply -> Maximum over `elements` f32 values (one partition)."""
    from fusionspec.spec.dtypes import DataType
    from fusionspec.spec.graph import Graph, LogicalTensor, Op

    f32, shape = DataType.f32, (elements,)
    a, b, c, d, t1, t2, t3, out = (LogicalTensor(i, f32, shape) for i in range(8))
    return Graph([Op(0, "Add", inputs=(a, b), outputs=(t1,)),
                  Op(1, "ReLU", inputs=(t1,), outputs=(t2,)),
                  Op(2, "Multiply", inputs=(t2, c), outputs=(t3,)),
                  Op(3, "Maximum", inputs=(t3, d), outputs=(out,))]).finalize()


def _chain_row(elements: int) -> Row:
    def torch_run(torch: Any, x: list[Any]) -> Callable[[], object]:
        return lambda: torch.maximum(torch.relu(x[0] + x[1]) * x[2], x[3])
    return Row(f"Add -> ReLU -> Multiply -> Maximum, {elements} f32",
               lambda: chain_graph(elements), 0, 4 * 5 * elements, torch_run)


def rows(quick: bool, large: bool) -> list[Row]:
    """The bench's rows: the shapes of the GPU table, or tiny ones with `quick`."""
    if quick:
        return [_matmul_row(64, 48, 32), _conv_row(2, 8, 7), _softmax_row(64, 100),
                _softmax_row(9, 1000), _chain_row(4096)]
    found = [_matmul_row(1024, 1024, 1024), _matmul_row(2048, 2048, 2048),
             _matmul_row(4096, 4096, 4096), _matmul_row(384, 1024, 4096)]
    if large:
        found.append(_matmul_row(8192, 8192, 8192))
    return [*found, _conv_row(32, 64, 56), _conv_row(32, 128, 28), _conv_row(32, 512, 7),
            _softmax_row(73728, 384), _softmax_row(8192, 8192), _softmax_row(65536, 128),
            _chain_row(16 * 2**20)]


# -- the device ------------------------------------------------------------------------------

def pick_device(wanted: str | None, allow_cpu: bool) -> tuple[str, Any]:
    """(device id, its DeviceInfo): `wanted`, else the first GPU; raises `Unavailable`."""
    try:
        from fusionspec.accel.devices import discover, discovery_problem
    except ImportError as exc:  # the accel extra is not installed
        raise Unavailable(f"the OpenCL backend cannot load ({exc}); install "
                          f"fusionspec[accel]") from None
    found = discover()
    if not found:
        raise Unavailable(f"no OpenCL device at all: {discovery_problem() or 'none found'}")
    seen = ", ".join(f"{d.id} ({d.kind})" for d in found)
    if wanted is not None:
        chosen = [d for d in found if d.id == wanted]
        if not chosen:
            raise Unavailable(f"no OpenCL device {wanted!r}; found {seen}")
    else:
        chosen = [d for d in found if d.kind == "gpu"] or (list(found) if allow_cpu else [])
        if not chosen:
            raise Unavailable(f"no GPU OpenCL device; found {seen} (is the GPU's OpenCL "
                              f"driver installed and registered with the loader?)")
    info = chosen[0]
    if info.kind != "gpu" and not allow_cpu:
        raise Unavailable(f"{info.id} is a {info.kind} device; pass --allow-cpu to check it "
                          f"anyway")
    from fusionspec.accel.backend import AccelBackend

    backend = AccelBackend(info.id)
    if not any(d.id == info.id for d in backend.devices()):
        why = backend.device_problems().get(info.id) or backend.unavailable_reason()
        raise Unavailable(f"{info.id} failed the backend's probe: {why}")
    return info.id, info


# -- steps -----------------------------------------------------------------------------------

def run_step(name: str, args: list[str], env: dict[str, str], log: Path, timeout_s: float
             ) -> dict[str, Any]:
    """Run one command, its output to `log`; its exit code, time and last line."""
    start = time.monotonic()
    try:
        done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=timeout_s, stdin=subprocess.DEVNULL, check=False)
        code, out = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = -1, f"{exc.stdout or ''}{exc.stderr or ''}\ntimed out after {timeout_s} s"
    log.write_text(out if isinstance(out, str) else str(out), encoding="utf-8")
    lines = [line for line in str(out).splitlines() if line.strip()]
    print(f"{name}: exit code {code} in {time.monotonic() - start:.0f} s", flush=True)
    return {"step": name, "exit_code": code, "seconds": time.monotonic() - start,
            "last_line": lines[-1] if lines else "", "log": log.name}


def accel_tests(device: str, out: Path) -> dict[str, Any]:
    env = {**os.environ, "FUSIONSPEC_ACCEL_DEVICE": device}
    return run_step("accel tests", [sys.executable, "-m", "pytest", "-q", "-p",
                                    "no:cacheprovider", "-m", "not slow", "tests/accel"],
                    env, out / "accel_tests.log", 1800)


def conformance(device: str, out: Path) -> dict[str, Any]:
    folder = out / "conformance"
    step = run_step("conformance ci", [sys.executable, "-m", "fusionspec.cli", "conform",
                                       "--backend", "accel", "--device", device, "--profile",
                                       "ci", "--out", str(folder)],
                    dict(os.environ), out / "conformance.log", 1800)
    try:
        step["totals"] = json.loads((folder / "results.json").read_text()).get("totals", {})
    except (OSError, ValueError):
        step["totals"] = {}
    return step


# -- the bench -------------------------------------------------------------------------------

class TorchSide:
    """PyTorch on `device` ("cuda" or "cpu"), timed by CUDA events on a GPU, by the host's
    clock on the CPU; TF32 off, so its matrix products are f32 as the partitions are."""

    def __init__(self, device: str) -> None:
        import torch

        self.torch, self.device = torch, device
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        cpu = platform.processor() or platform.machine()
        self.name = torch.cuda.get_device_name() if device == "cuda" else cpu
        self.method = "cuda events" if device == "cuda" else "wall"

    def tensors(self, arrays: list[np.ndarray]) -> list[Any]:
        return [self.torch.from_numpy(a).to(self.device) for a in arrays]

    def sampler(self, run: Callable[[], object]) -> Callable[[], float]:
        torch = self.torch
        if self.device != "cuda":
            from fusionspec.backend.timing import wall_clock

            return wall_clock(run)

        def sample() -> float:
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            run()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) * 1e-3
        return sample


def torch_side(choice: str) -> TorchSide | None:
    """PyTorch's side per `--torch` (auto: CUDA when torch and a CUDA device are there)."""
    if choice == "off":
        return None
    try:
        import torch
    except ImportError:
        if choice != "auto":
            raise Unavailable(f"--torch {choice}: PyTorch is not installed") from None
        return None
    if choice == "auto":
        return TorchSide("cuda") if torch.cuda.is_available() else None
    if choice == "cuda" and not torch.cuda.is_available():
        raise Unavailable("--torch cuda: PyTorch sees no CUDA device")
    return TorchSide(choice)


def bench_row(row: Row, device: Any, policy: Any, side: TorchSide | None,
              rng: np.random.Generator) -> dict[str, Any]:
    import bench_accel

    from fusionspec.accel.backend import AccelBackend
    from fusionspec.backend.timing import measure, time_partition

    part = bench_accel.single_partition(row.graph())
    tensors = sorted(part.inputs, key=lambda t: t.id)
    arrays = [rng.standard_normal(t.shape or (), dtype=np.float32) for t in tensors]
    inputs = {t.id: a for t, a in zip(tensors, arrays)}
    compiled = AccelBackend(device.id).compile(part, device)
    mine = time_partition(compiled, inputs, policy)
    found: dict[str, Any] = {"name": row.name, "accel": mine.as_dict(),
                             "accel_ms": mine.median * 1e3}
    if row.flops:
        found["accel_tflop_s"] = row.flops / mine.median / 1e12
    else:
        found["accel_gb_s"] = row.nbytes / mine.median / 1e9
    if side is not None:
        args = side.tensors(arrays)
        run = row.torch(side.torch, args)
        theirs = measure(side.sampler(run), policy, method=side.method)
        found.update(torch=theirs.as_dict(), torch_ms=theirs.median * 1e3,
                     accel_over_torch=mine.median / theirs.median)
        want = run().detach().cpu().numpy()  # type: ignore[attr-defined]
        (got,) = compiled.execute(inputs).values()
        scale = max(float(np.max(np.abs(want))), 1e-30)
        found["max_rel_diff_vs_torch"] = float(np.max(np.abs(got - want))) / scale
    print(f"  {row.name}: accel {found['accel_ms']:.3f} ms"
          + (f", PyTorch {found['torch_ms']:.3f} ms" if "torch_ms" in found else ""),
          flush=True)
    return found


def bench_copy(info: Any, elements: int, policy: Any, side: TorchSide | None
               ) -> dict[str, Any]:
    """The card's copy bandwidth by events: the faster of bench_accel's copy kernels, and
    PyTorch's copy of the same buffer."""
    import bench_accel

    from fusionspec.accel.runtime import runtime_for
    from fusionspec.backend.timing import measure

    best: dict[str, Any] = {}
    for variant in ("scalar", "vector"):
        copy = bench_accel.CopyKernel(runtime_for(info), elements, variant=variant)
        if not copy.check():
            raise RuntimeError(f"the {variant} copy kernel did not copy its input")
        timing = measure(copy.run, policy, method="events")
        if not best or timing.median < best["seconds"]:
            best = {"variant": variant, "seconds": timing.median, "timing": timing.as_dict()}
    found = {"elements": elements, "variant": best["variant"], "accel": best["timing"],
             "accel_gb_s": 8 * elements / best["seconds"] / 1e9}
    if side is not None:
        (src,) = side.tensors([np.arange(elements, dtype=np.float32)])
        dst = side.torch.empty_like(src)
        theirs = measure(side.sampler(lambda: dst.copy_(src)), policy, method=side.method)
        found.update(torch=theirs.as_dict(), torch_gb_s=8 * elements / theirs.median / 1e9)
    return found


def markdown(doc: dict[str, Any]) -> str:
    """The bench as one Markdown table, with the device and what PyTorch ran on."""
    dev = doc["device"]
    torch = doc.get("torch") or {}
    lines = [f"# GPU check: {dev['name']} ({dev['id']}), driver {dev['driver']}", "",
             f"PyTorch: {torch.get('version', 'not run')} on {torch.get('device', '-')} "
             f"({torch.get('name', '-')}, {torch.get('method', '-')}, TF32 off). Medians; "
             f"accel kernels timed by OpenCL profiling events."]
    if doc["steps"]:
        lines.append("")
    for step in doc["steps"]:
        lines.append(f"- {step['step']}: exit code {step['exit_code']}, "
                     f"{step['seconds']:.0f} s; {step['last_line']}")
    copy = doc["copy"]
    lines += ["", f"Copy of {copy['elements']} f32: accel {copy['accel_gb_s']:.0f} GB/s"
              + (f", PyTorch {copy['torch_gb_s']:.0f} GB/s" if "torch_gb_s" in copy else ""),
              "", "| partition | accel ms | PyTorch ms | accel / PyTorch | accel rate |",
              "|---|---|---|---|---|"]
    for row in doc["rows"]:
        rate = (f"{row['accel_tflop_s']:.3g} TFLOP/s" if "accel_tflop_s" in row else
                f"{row['accel_gb_s']:.0f} GB/s ({row['accel_gb_s'] / copy['accel_gb_s']:.0%} "
                f"of copy)")
        theirs = f"{row['torch_ms']:.3f}" if "torch_ms" in row else "-"
        ratio = f"{row['accel_over_torch']:.2f}" if "accel_over_torch" in row else "-"
        lines.append(f"| {row['name']} | {row['accel_ms']:.3f} | {theirs} | {ratio} | {rate} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "results" / "gpu_check"),
                        help="folder for gpu_check.json, gpu_check.md and the step logs")
    parser.add_argument("--device", default=None, help="OpenCL device id (default: first GPU)")
    parser.add_argument("--allow-cpu", action="store_true",
                        help="run on a CPU device when no GPU is there (to test the script)")
    parser.add_argument("--quick", action="store_true", help="tiny shapes (to test the script)")
    parser.add_argument("--no-large", action="store_true", help="leave out MatMul 8192^3")
    parser.add_argument("--skip-tests", action="store_true", help="do not run the accel tests")
    parser.add_argument("--skip-conformance", action="store_true",
                        help="do not run the ci conformance run")
    parser.add_argument("--torch", choices=("auto", "cuda", "cpu", "off"), default="auto",
                        help="PyTorch's side: auto (CUDA when there), cuda, cpu or off")
    parser.add_argument("--budget", type=float, default=1.0,
                        help="seconds of sampling per side once it has 5 runs")
    args = parser.parse_args(argv)
    try:
        device_id, info = pick_device(args.device, args.allow_cpu)
        side = torch_side(args.torch)
    except Unavailable as exc:
        print(f"gpu check: {exc}", file=sys.stderr)
        return UNAVAILABLE
    from fusionspec.backend.timing import TimingPolicy

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"gpu check on {info.name} ({device_id}), driver {info.driver}", flush=True)
    steps = []
    if not args.skip_tests:
        steps.append(accel_tests(device_id, out))
    if not args.skip_conformance:
        steps.append(conformance(device_id, out))
    policy = TimingPolicy(warmup=2, min_repeats=5, max_repeats=50, budget_s=args.budget)
    rng = np.random.default_rng(0)
    device = info.as_device()
    print("bench:", flush=True)
    copy = bench_copy(info, 4096 if args.quick else 16 * 2**20, policy, side)
    results = [bench_row(row, device, policy, side, rng)
               for row in rows(args.quick, not args.no_large)]
    doc: dict[str, Any] = {
        "device": {"id": device_id, "name": info.name, "driver": info.driver,
                   "platform": info.platform, "kind": info.kind,
                   "compute_units": info.compute_units},
        "torch": None if side is None else {"version": side.torch.__version__,
                                            "device": side.device, "name": side.name,
                                            "method": side.method},
        "policy": vars(policy), "steps": steps, "copy": copy, "rows": results,
        "python": platform.python_version(), "numpy": np.__version__}
    (out / "gpu_check.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    (out / "gpu_check.md").write_text(markdown(doc), encoding="utf-8")
    print(f"wrote {out / 'gpu_check.json'} and {out / 'gpu_check.md'}")
    return FAILED if any(step["exit_code"] != 0 for step in steps) else 0


if __name__ == "__main__":
    sys.exit(main())
