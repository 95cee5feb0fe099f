import sys

from offset_restore.cli import main

sys.exit(main())
