"""``[metrics] weight_setting_scale``: metrics made unit-free before their
ratios apply.

A metric-reading weigher sums several metrics in their own units:
``memory.free`` in bytes beside ``cpu.percent`` in percent, so the
ratios must also convert units (``memory.free=1e-9``) and cannot say
plainly how much each metric matters. With ``minmax`` or ``rank`` each
metric is first normalised across the candidate hosts
(``normalization.normalize_array``), in the direction its ratio prefers,
and then weighted by the ratio's size:

    raw weight = sum over metrics of |ratio| x normalise(sign(ratio) x value)

so that, with ``minmax``, the best host on a metric gets ``|ratio|`` for
it and the worst 0 (``rank``: ``|ratio| x (n - 1)`` down to 0), whatever
the metric's unit. ``raw`` keeps the plain ``sum(ratio x value)``.

A host missing a metric (or holding a stale one) has no raw weight, as
in every mode, and takes no part in normalising the others: it can
neither squash nor stretch how the available hosts compare.
"""

from collections.abc import Sequence

import numpy as np

from scheduler.weights import normalization

RAW = "raw"
MODES = (RAW, "minmax", "rank")


def scaled_sum(mode: str, columns: Sequence[np.ndarray],
               ratios: Sequence[float], size: int) -> np.ndarray:
    """``sum(|ratio| x normalise(sign(ratio) x column))`` per host over
    ``size`` hosts, ``mode`` being ``minmax`` or ``rank``; NaN where a
    column is NaN (a metric unavailable).
    """
    available = np.ones(size, dtype=bool)
    for column in columns:
        available &= ~np.isnan(column)
    total = np.zeros(size)
    for column, ratio in zip(columns, ratios, strict=True):
        if ratio == 0:
            continue
        # Normalised in the preferred direction, so that ties share the
        # best rank of the preferred side, as weight_normalization does.
        direction = 1.0 if ratio > 0 else -1.0
        values = np.where(available, direction * column, np.nan)
        total = total + abs(ratio) * normalization.normalize_array(
            mode, values)
    return np.where(available, total, np.nan)
