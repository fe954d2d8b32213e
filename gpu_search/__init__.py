"""gpu-search: GPU-accelerated protein homology search with HMMER's and BLAST's numbers.

    >>> import gpu_search
    >>> gpu_search.__version__ >= "0.1"
    True
"""

__version__ = "0.1.0"
HMMER_VERSION = "3.4"
HMMER_DATE = "Aug 2023"

__all__ = ["__version__", "hmmsearch", "open_database"]


def __getattr__(name):
    # keep `import gpu_search` light: pyhmmer and numba load on first use
    if name == "hmmsearch":
        from .hmmer.search import hmmsearch
        return hmmsearch
    if name == "open_database":
        from .seqdb import open_database
        return open_database
    raise AttributeError(name)
