import sys

from offset_restore.cli.main import main

sys.exit(main())
