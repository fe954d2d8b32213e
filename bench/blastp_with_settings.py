"""The ``gpu-search`` command, run with a ``BlastSettings`` of the benchmark's choosing.

    python bench/blastp_with_settings.py '{"gapped_batch": 1, "timings": true}' blastp -query q.faa -db db.gsdb ...

The first argument is a JSON object of ``gpu_search.blast.settings.BlastSettings`` fields
(``{}``: the defaults); the rest is the command line of ``gpu-search`` (its subcommand
first).  It runs as the console script runs (``gpu_search.cli.main`` reading sys.argv and
ending the process with ``os._exit``), so a run's wall time is the real command's.  The
gpu_search imported is this checkout's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    fields, rest = json.loads(sys.argv[1]), sys.argv[2:]
    if not isinstance(fields, dict):
        raise SystemExit(f"blastp_with_settings: the settings must be a JSON object, not {sys.argv[1]!r}")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from gpu_search.blast.settings import BlastSettings
    from gpu_search.cli import main as gpu_search_main

    settings = BlastSettings(**fields)
    sys.argv = ["gpu-search", *rest]
    gpu_search_main(blast_settings=settings)


if __name__ == "__main__":
    main()
