"""`python -m eval`: see eval/evaluate.py."""

import sys

from .evaluate import main

sys.exit(main())
