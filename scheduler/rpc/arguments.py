"""Calls whose arguments do not fit the method, refused in one line.

oslo.messaging calls an endpoint method with the keyword arguments of the
message as they came: an unknown or missing argument raised TypeError
inside oslo.messaging, which logged a full traceback at ERROR for each
such call and answered with a RemoteError. ``checked`` compares the
arguments with the method's signature first and, when they do not fit,
raises an InvalidRequest naming the argument through the endpoint's
``_guard``, which answers and logs it like any invalid request (one line,
no traceback).
"""

import functools
import inspect
from collections.abc import Callable
from typing import Any
from typing import Protocol
from typing import TypeVar

from scheduler import exception
from scheduler.common import observability
from scheduler.common.abridge import short

_F = TypeVar("_F", bound=Callable[..., Any])


class Endpoint(Protocol):
    def _guard(self, method: str, ctxt: dict, func: Callable[..., Any],
               *args: object) -> Any: ...


def _refuse(method: str, error: exception.InvalidRequest) -> Any:
    # Every select_destinations outcome has its decision line; _guard
    # logs the other methods' refusals itself.
    if method == "select_destinations":
        observability.DecisionReport().failed(error)
    raise error


def problem(method: str, parameters: list[inspect.Parameter],
            given: set[str]) -> exception.InvalidRequest | None:
    """What is wrong with calling ``method`` with the keyword arguments
    ``given``, or None."""
    names = [p.name for p in parameters]
    unknown = sorted(given - set(names))
    if unknown:
        return exception.InvalidRequest(
            # The name is the client's: abbreviated, whatever its size.
            f"{method}: unknown argument {short(unknown[0])} "
            f"(expected "
            f"{', '.join(names) or 'none'})")
    missing = [p.name for p in parameters
               if p.default is inspect.Parameter.empty
               and p.name not in given]
    if missing:
        return exception.InvalidRequest(
            f"{method}: missing argument {missing[0]!r}")
    return None


def checked(method: _F) -> _F:
    """Decorate an endpoint method ``(self, ctxt, **arguments)``: a call
    whose arguments do not fit is refused through ``self._guard``."""
    # The parameters after self and ctxt, in order.
    parameters = list(inspect.signature(method).parameters.values())[2:]
    allowed = frozenset(p.name for p in parameters)
    required = frozenset(p.name for p in parameters
                         if p.default is inspect.Parameter.empty)
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: Endpoint, ctxt: dict, *args: object,
                **kwargs: object) -> Any:
        # Set comparisons only on the way of a good call (oslo.messaging
        # passes keywords only; positional callers are local code).
        given = kwargs.keys()
        if args or not (given <= allowed and required <= given):
            named = {p.name for p in parameters[:len(args)]}
            error = (problem(name, parameters, set(given) | named)
                     if len(args) <= len(parameters) else
                     exception.InvalidRequest(
                         f"{name}: {len(args)} positional arguments for "
                         f"{len(parameters)} parameters"))
            if error is not None:
                return self._guard(name, ctxt, _refuse, name, error)
        return method(self, ctxt, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
