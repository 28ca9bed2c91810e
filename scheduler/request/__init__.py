"""The request: its wire format, validation and parsed form.

* ``scheduler.request.schema``: the published JSON schema of
  ``request_spec`` (package data).
* ``scheduler.request.validation``: ``validate_request``, the wire
  format check (jsonschema-rs answers, jsonschema words the errors).
* ``scheduler.request.messages``: how a schema error is worded.

``RequestSpec`` (``scheduler.request.spec``), the extra-spec grammar
(``scheduler.request.extra_specs``) and the string rules
(``scheduler.request.values``). Nothing in this package imports the host
cache, filters, placement or the manager; nothing is re-exported here, so
that the host states (which read ``RequestSpec``) do not load the
validators and jsonschema with it.
"""
