"""One entry of a node's metrics list (docs/operator-guide.md), as the host
cache and the instance metrics read it: its value, timestamp and source, or
what is wrong with it."""

import datetime
import math

from scheduler.common.abridge import short
from scheduler.hosts.state import is_number


def parse_timestamp(value: object) -> datetime.datetime | None:
    """Naive UTC from ISO-8601 text (``Z`` or an offset allowed)."""
    if not isinstance(value, str):
        return None
    try:
        if value.endswith(("Z", "z")):
            # What the agent writes; skips the time zone conversion.
            parsed = datetime.datetime.fromisoformat(value[:-1])
            return None if parsed.tzinfo is not None else parsed
        parsed = datetime.datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(datetime.UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        return None
    return parsed


_MISSING = object()


def cached_timestamp(stamp: object, stamps: dict[str, datetime.datetime]
                     ) -> datetime.datetime | None:
    """``parse_timestamp(stamp)``, looked up in and added to ``stamps``
    (the entries of one report mostly share a handful)."""
    timestamp = stamps.get(stamp) if type(stamp) is str else None
    if timestamp is None:
        timestamp = parse_timestamp(stamp)
        if timestamp is not None:
            stamps[stamp] = timestamp
    return timestamp


def reading(entry: dict, stamps: dict[str, datetime.datetime]
            ) -> tuple[float, datetime.datetime, str] | str:
    """``(value, timestamp, source)`` of one metrics entry, or what is
    wrong with it. ``stamps`` caches parsed timestamps: the entries of
    one report mostly share a handful."""
    value = entry.get("value", _MISSING)
    stamp = entry.get("timestamp", _MISSING)
    if value is _MISSING or stamp is _MISSING:
        missing = [k for k in ("value", "timestamp") if k not in entry]
        return f"missing key(s) {', '.join(missing)}"
    # The common case first: a float from JSON.
    if not (type(value) is float and math.isfinite(value)
            or is_number(value)):
        return f"value {short(value)} is not a finite number"
    timestamp = cached_timestamp(stamp, stamps)
    if timestamp is None:
        return (f"timestamp {short(stamp)} is not an ISO-8601 date "
                "and time")
    source = entry.get("source")
    return value, timestamp, (source if type(source) is str
                              else "" if source is None else str(source))


#: Parsed metric timestamps, shared by the reports decoded one after
#: another: the entries of a report share a handful, and nodes reporting
#: together often share theirs. Emptied when it grows past _STAMPS_KEPT.
_STAMPS: dict[str, datetime.datetime] = {}
_STAMPS_KEPT = 4096


def recent_stamps() -> dict[str, datetime.datetime]:
    if len(_STAMPS) > _STAMPS_KEPT:
        _STAMPS.clear()
    return _STAMPS
