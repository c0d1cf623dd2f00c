"""`tests.e2e.proc_run` in a process whose host name is HOST: a run carried out "on another
machine" on the same warehouse file (what a warehouse on a shared disk, a restarted container
or a renamed machine shows its owner as).

    python -m tests.e2e.elsewhere HOST run DB INPUT... [--option NAME=VALUE ...]
"""

from __future__ import annotations

import socket
import sys


def main(argv: list[str]) -> int:
    host, rest = argv[0], argv[1:]
    socket.gethostname = lambda: host  # this process's host name, as placeflow reads it
    from tests.e2e.proc_run import main as proc_main

    return proc_main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
