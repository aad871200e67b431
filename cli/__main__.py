"""``python -m fusionspec.cli``: the same as the ``fusionspec`` command.

``python -m`` puts the current folder first on the import path; it is taken off again, so a
module that happens to lie in the folder the command runs in (a downloaded failure folder, an
artifact) is never imported in place of an installed one, as with the ``fusionspec`` script.
"""

import os
import sys

if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from .main import main  # after the import path is settled

raise SystemExit(main())
