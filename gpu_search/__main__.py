"""``python -m gpu_search`` and the ``gpu-search`` command.

Ctrl-C while the program's own modules are still being imported, or before ``main``
has set up its handlers, ends it as Ctrl-C does later (one line, exit 130), not with
Python's traceback."""

import sys


def run() -> None:
    try:
        from .cli import main

        main()
    except KeyboardInterrupt:
        sys.stderr.write("gpu-search: interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    run()
