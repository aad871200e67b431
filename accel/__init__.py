"""fusionspec's OpenCL backend: the spec's partitions compiled to fused OpenCL kernels.

Every partition becomes one generated kernel whose intermediates live in registers or local
memory, for CPU devices (PoCL, the embedded default) and GPUs alike. The layers:

- `devices`: discovery and selection of OpenCL devices (stable ids such as ``pocl-cpu``);
- `runtime`: one context and queue per device, the program cache (memory and disk);
- `codegen`: the dtype policy, tensor access with broadcasting, and the one post-op generator;
- `families`: the kernel families (elementwise, ...), each a matcher and a builder of a
  `plan.KernelPlan`;
- `compiled`: executing plans; `backend`: `AccelBackend`, the suite's `Backend`.

Importing this package does not import pyopencl; that happens on first device discovery.
"""
