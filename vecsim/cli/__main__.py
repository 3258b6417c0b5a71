"""``python -m vecsim.cli``: the ``vecsim`` command, as ``python -m vecsim`` runs it."""

import sys

from vecsim.cli import main

if __name__ == "__main__":
    sys.exit(main())
