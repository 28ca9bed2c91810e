"""The client API nodes import (DESIGN §5): ``scheduler.rpcapi.SchedulerAPI``.

The implementation lives with the rest of the RPC layer in
``scheduler.rpc.rpcapi``.
"""

from scheduler.rpc.rpcapi import SchedulerAPI

__all__ = ["SchedulerAPI"]
