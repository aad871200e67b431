"""fusionspec.onednn: the real oneDNN Graph API as a graded backend, through ctypes.

`OnednnBackend` (registered as ``onednn``) builds a oneDNN graph from a fusionspec `Graph`,
returns oneDNN's partitions, compiles them for the CPU engine and executes them on NumPy arrays.
Enum values come from the installed headers (`fusionspec.onednn.headers`), so one adapter
serves several library versions; where the library is found is in `fusionspec.onednn.library`.
"""

from .backend import OnednnBackend
from .errors import (
    OnednnCallError,
    OnednnError,
    OnednnRejection,
    OnednnSetupError,
    OnednnUnsupportedError,
)

__all__ = ["OnednnBackend", "OnednnError", "OnednnSetupError", "OnednnCallError",
           "OnednnRejection", "OnednnUnsupportedError"]
