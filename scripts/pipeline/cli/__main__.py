"""`python -m pipeline.cli`: the `pipeline` command of this checkout."""

import sys

from pipeline.cli import main

sys.exit(main())
