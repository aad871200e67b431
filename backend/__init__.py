"""fusionspec.backend: the interface between the suite and any backend it grades.

It sits on the bottom floor beside `fusionspec.spec`, so backends (the reference, the OpenCL
backend, the oneDNN adapter, a user's own) implement it without importing the suite:

- `Backend`, `CompiledPartition`, `Device`, `Limitation` and the optional-method readers
  (`fusionspec.backend.protocol`), and `Array` (from `fusionspec.spec.types`), the type of the
  arrays `CompiledPartition.execute` takes and returns;
- `BackendError`, `BackendUnavailableError` (`fusionspec.backend.errors`);
- `Departure`, `OpMatch` and `error_fields`: known departures a backend declares, and the
  structured fields its errors carry (`fusionspec.backend.departures`);
- `Status`: the outcomes a case can have, which departures match (`fusionspec.backend.status`);
- `load_backend`, `available_backends`, `select_device` and the entry-point group
  (`fusionspec.backend.registry`).
"""

from fusionspec.spec.types import Array

from .departures import Departure, OpMatch, error_fields
from .errors import BackendError, BackendUnavailableError
from .protocol import (
    Backend,
    CompiledPartition,
    Device,
    Limitation,
    counters,
    device_problems,
    unavailable_reason,
)
from .registry import ENTRY_POINT_GROUP, available_backends, load_backend, select_device
from .status import Status

__all__ = [
    "Array",
    "Backend",
    "CompiledPartition",
    "Device",
    "Limitation",
    "Departure",
    "OpMatch",
    "Status",
    "error_fields",
    "BackendError",
    "BackendUnavailableError",
    "ENTRY_POINT_GROUP",
    "available_backends",
    "load_backend",
    "select_device",
    "counters",
    "device_problems",
    "unavailable_reason",
]
