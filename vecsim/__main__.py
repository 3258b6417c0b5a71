"""``python -m vecsim``: the ``vecsim`` command (see ``vecsim.cli``)."""

import sys

from vecsim.cli import main

if __name__ == "__main__":
    sys.exit(main())
