"""A backend that starts a helper process in a session of its own (``setsid``) when it loads,
as some drivers start a daemon. The helper writes its pid to ``helper.pid`` in the current
folder and sleeps, so a test can see whether it kept the command's output open, then kill it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fusionspec.reference.backend import ReferenceBackend

#: Long enough that a command waiting on the helper would run past any test's timeout.
HELPER_SECONDS = 300


class StartsSessionHelper(ReferenceBackend):
    """The reference, with a detached helper started on load."""

    def __init__(self) -> None:
        super().__init__()
        helper = subprocess.Popen([sys.executable, "-c",
                                   f"import time; time.sleep({HELPER_SECONDS})"],
                                  start_new_session=True)
        Path("helper.pid").write_text(f"{helper.pid}\n", encoding="utf-8")
