"""``python -m fusionspec.cli``: the same as the ``fusionspec`` command."""

from .main import main

raise SystemExit(main())
