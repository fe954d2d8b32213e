"""``python -m gpu_search`` and the ``gpu-search`` command.

Ctrl-C while the program's own modules are still being imported ends it as Ctrl-C
does later (one line, exit 130), not with Python's traceback."""

import sys


def run() -> None:
    try:
        from .cli import main
    except KeyboardInterrupt:
        sys.stderr.write("gpu-search: interrupted\n")
        sys.exit(130)
    main()


if __name__ == "__main__":
    run()
