"""Typed errors of the oneDNN adapter.

- `OnednnSetupError`: the library or its headers cannot be found or loaded; the message says
  what was looked for and what to install (``pip install 'fusionspec[onednn]'``).
- `OnednnRejection`: oneDNN refused a graph or an op (a status such as ``invalid_graph_op``,
  ``invalid_shape`` or ``unimplemented``) while the graph was built, partitioned or compiled
  (oneDNN infers shapes only when compiling). The suite counts it as a rejection, so an
  ill-formed graph that oneDNN refuses passes and a valid one that it refuses is
  ``rejected-valid``.
- `OnednnCallError`: any other failing call (execute, engine creation, a runtime error), with
  oneDNN's status and whatever the library logged about it.
- `OnednnUnsupportedError`: the adapter cannot express the case through this library version's
  C API (a data type or op kind its headers do not define).
"""

from __future__ import annotations

from fusionspec.backend import BackendError
from fusionspec.spec.errors import FusionspecError

__all__ = ["OnednnError", "OnednnSetupError", "OnednnCallError", "OnednnRejection",
           "OnednnUnsupportedError", "INSTALL_HINT"]

#: What to install when the library is missing.
INSTALL_HINT = ("install the onednn extra, pip install 'fusionspec[onednn]' (oneDNN 3.2 for CPU "
                "with OpenMP), or point FUSIONSPEC_ONEDNN_LIB at a libdnnl.so whose include/ "
                "folder holds oneapi/dnnl/dnnl_graph_types.h")


class OnednnError(FusionspecError):
    """Base class of the adapter's errors."""


class OnednnSetupError(OnednnError, BackendError):
    """The library, its headers or its CPU engine cannot be set up."""


class OnednnCallError(OnednnError):
    """A oneDNN C API call returned an error status.

    `function` is the C function, `status` oneDNN's status name (``invalid_shape``), `op_kind`
    the kind of the op being added when the call concerns one, `log` the lines the library
    printed about the failure (its verbose ``check`` output), if any. `fields` gives the first
    three as structured data, which grading reads instead of the message.
    """

    def __init__(self, function: str, status: str, context: str = "", log: str = "",
                 op_kind: str = "") -> None:
        self.function = function
        self.status = status
        self.op_kind = op_kind
        self.log = log
        where = f" ({context})" if context else ""
        said = f": {log}" if log else ""
        super().__init__(f"oneDNN {function} returned {status}{where}{said}")


    @property
    def fields(self) -> dict[str, str]:
        said = {"function": self.function, "status": self.status, "op_kind": self.op_kind}
        return {k: v for k, v in said.items() if v}


class OnednnRejection(OnednnCallError):
    """oneDNN refused the graph while it was built, finalized or partitioned."""


class OnednnUnsupportedError(OnednnRejection):
    """The C API of this library version cannot express the graph (it has no such data type,
    op kind or attribute), so the graph cannot be handed to oneDNN at all."""

    def __init__(self, what: str, version: str) -> None:
        OnednnError.__init__(self, f"oneDNN {version} cannot express this graph: {what}")
        self.function = ""
        self.status = "not expressible"
        self.op_kind = ""
        self.log = ""
