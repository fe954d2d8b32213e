"""Which GPUs a search runs on (``--gpus``)."""

from __future__ import annotations

from ..errors import DeviceError


def check_gpus(gpus: list[int] | None) -> list[int]:
    """The device ids to use: ``gpus``, or every visible GPU where None.

    Raises DeviceError where an id is not a visible GPU, or where that leaves none.
    """
    from .. import device          # (looked up at each call: tests stand in for gpu_status)

    n_visible = len(device.gpu_status()[2])
    ids = list(range(n_visible)) if gpus is None else [int(g) for g in gpus]
    if not ids or any(not 0 <= g < n_visible for g in ids):
        raise DeviceError(f"--gpus {','.join(map(str, ids))}: {n_visible} GPU(s) visible")
    return ids
