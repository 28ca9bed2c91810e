"""scheduler-api: the scheduling policies REST API (DESIGN §12).

WSGI on webob and routes, as Nova and Placement are; see
docs/architecture.md. This package sits above the engine: it imports the
engine's validation and storage, the engine never imports it.
"""
