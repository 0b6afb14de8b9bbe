"""`python -m snowfire.cli`: the snowfire command line."""

import sys

from .main import main

sys.exit(main())
