"""python -m kumitate == the kumitate command."""

import sys

from kumitate.cli import main

sys.exit(main())
