"""The GPU's preliminary gapped kernels on a GPU, through the host build's tests (marked gpu).

test_blast_gapped_kernel.py checks gapped.cu's per-subject code, built for the
CPU, subject by subject against gapped.py's numba code (rows, order, restart
flag, overflow to the CPU).  Here the same tests run the kernels themselves on
the GPU: ``prelim_gapped_warp`` (a warp computes each DP row, 32 cells at a
time: code the host build does not have) and ``prelim_gapped`` (a thread per
subject), with the same rings and cell budgets.
"""

from __future__ import annotations

import pytest
from gapped_host import GpuKernel
from test_blast_gapped_kernel import (  # the tests, collected again here with the fixtures below
    blosum62,
    db_codes,
    test_kernel_matches_numba_on_homologs,
    test_kernel_matches_numba_on_restricted_first_row_growth,
    test_kernel_matches_numba_on_the_proteome,
    test_no_restricted_extensions_above_evalue_10,
    test_several_queries_per_launch,
)

from gpu_search.device import gpu_status

__all__ = ["blosum62", "db_codes", "test_kernel_matches_numba_on_homologs",
           "test_kernel_matches_numba_on_restricted_first_row_growth", "test_kernel_matches_numba_on_the_proteome",
           "test_no_restricted_extensions_above_evalue_10", "test_several_queries_per_launch"]

pytestmark = pytest.mark.gpu
if not gpu_status()[0]:
    pytest.skip(f"no usable GPU: {gpu_status()[1]}", allow_module_level=True)


@pytest.fixture(scope="module", params=["warp", "thread"])
def which(request):
    return request.param


@pytest.fixture(scope="module")
def kernel(which):
    return GpuKernel(which)


@pytest.fixture(scope="module")
def small_ring(which):
    return GpuKernel(which, band=16)


@pytest.fixture(scope="module")
def unlimited(which):
    return GpuKernel(which, cell_budget=1 << 30)


@pytest.fixture(scope="module")
def small_budget(which):
    return GpuKernel(which, cell_budget=3000)
