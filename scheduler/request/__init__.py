"""The request: its wire format, validation and parsed form.

* ``scheduler.request.schema``: the published JSON schema of
  ``request_spec`` (package data).
* ``scheduler.request.validation``: ``validate_request``, the wire
  format check (jsonschema-rs answers, jsonschema words the errors).
* ``scheduler.request.messages``: how a schema error is worded.

``RequestSpec`` (``scheduler.request.spec``), the extra-spec grammar
(``scheduler.request.extra_specs``) and the string rules
(``scheduler.request.values``) are where they were; ``RequestSpec`` is
re-exported here. Nothing in this package imports the host cache,
filters, placement or the manager.
"""

from scheduler.request.schema import request_spec_schema
from scheduler.request.spec import RequestSpec
from scheduler.request.validation import check_instance_uuid
from scheduler.request.validation import validate_request

__all__ = ["RequestSpec", "check_instance_uuid", "request_spec_schema",
           "validate_request"]
