"""``python -m tsrsa``: the ``tsrsa`` command (see :mod:`tsrsa.cli`)."""
import sys

from tsrsa.cli import main

if __name__ == "__main__":
    sys.exit(main())
