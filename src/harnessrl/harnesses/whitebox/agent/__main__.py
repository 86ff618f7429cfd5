import sys

from .agent_loop import main

sys.exit(main(sys.argv))
