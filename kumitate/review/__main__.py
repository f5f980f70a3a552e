"""python -m kumitate.review diff BASE HEAD (until `kumitate diff` is wired into kumitate/cli.py)."""

import sys

from kumitate.review.cli import main

sys.exit(main())
