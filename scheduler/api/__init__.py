"""scheduler-api: the scheduling policies REST API (docs/api.md).

WSGI on webob and routes, as Nova and Placement are; see
docs/architecture.md. This package sits above the engine: it imports the
engine's validation and storage, the engine never imports it.
"""
