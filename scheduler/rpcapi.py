"""The client API nodes import: ``scheduler.rpcapi.SchedulerAPI``.

The implementation lives with the rest of the RPC layer in
``scheduler.rpc.rpcapi``. The transport exceptions a call may raise are
re-exported, taken from the oslo.messaging that module imported: API code
importing ``oslo_messaging`` itself before the scheduler would load it
before the scheduler selects oslo.service's threading backend.
"""

from scheduler.rpc import rpcapi as _rpcapi

SchedulerAPI = _rpcapi.SchedulerAPI
#: No reply within the call's timeout (broker or service away).
MessagingTimeout = _rpcapi.oslo_messaging.MessagingTimeout
#: Any transport failure (MessagingTimeout, MessageDeliveryFailure, ...).
MessagingException = _rpcapi.oslo_messaging.MessagingException

__all__ = ["MessagingException", "MessagingTimeout", "SchedulerAPI"]
