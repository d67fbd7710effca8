"""``python -m ctxbudget``: the ``ctxbudget`` command line (see :mod:`ctxbudget.cli`)."""

import sys

from ctxbudget.cli import main

if __name__ == "__main__":
    sys.exit(main())
