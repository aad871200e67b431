"""The errors of finding, loading and using a backend."""

from __future__ import annotations

from fusionspec.spec.errors import FusionspecError

__all__ = ["BackendError", "BackendUnavailableError"]


class BackendError(FusionspecError):
    """A backend cannot be found, loaded, or has no such device."""


class BackendUnavailableError(BackendError):
    """The backend loads but has no usable device (or the device asked for is unusable):
    `reason` says why, e.g. its compiler failed a probe."""

    def __init__(self, message: str, *, reason: str = "") -> None:
        self.reason = reason or message
        super().__init__(message)
