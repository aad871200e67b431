"""fusionspec.reference: the NumPy oracle of the oneDNN Graph fusion-pattern spec.

- `execute(partition_or_graph, inputs)`: run a partition (its ops one by one in f32, casts only
  at its outputs) or a whole graph (partition by partition), returning arrays by tensor id;
- `fill_inputs(partition_or_graph, seed)`: deterministic input data that keeps the arithmetic
  exact and inside each op's domain;
- `single_op_partitions(graph)`: the trivial partitioning, one op per partition;
- `partition(graph)` and `explain(graph)`: the pattern partitioner and its account of unfused
  ops;
- `numpy_dtype` / `cast_to`: storage types and the spec's rounding casts;
- the executor's typed errors.

The op implementations live in `fusionspec.reference.ops` and are looked up through
`fusionspec.reference.registry`.
"""

from .dtypes import cast_to, numpy_dtype
from .errors import ExecutionError, InputMismatchError, OpInputError, UnsupportedOpError
from .execute import execute, single_op_partitions
from .explain import explain  # binds the function over the submodule of the same name
from .filling import fill_inputs
from .partitioner import partition

__all__ = [
    "execute",
    "partition",
    "explain",
    "fill_inputs",
    "single_op_partitions",
    "numpy_dtype",
    "cast_to",
    "ExecutionError",
    "InputMismatchError",
    "OpInputError",
    "UnsupportedOpError",
]

