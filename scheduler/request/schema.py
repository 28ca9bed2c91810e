"""The published JSON schema of ``request_spec`` (package data).

``scheduler/schemas/request_spec.json`` is the contract of the RPC API's
``request_spec`` (docs/architecture.md); its ``$defs/instance_uuids`` is the
schema of the ``instance_uuids`` argument."""

import functools
import importlib.resources
import json

import jsonschema

#: The draft the schema declares (its ``$schema``).
DRAFT = jsonschema.Draft202012Validator


@functools.cache
def request_spec_schema() -> dict:
    """The published JSON schema of ``request_spec``, checked against its
    draft's meta-schema once; ``$defs/instance_uuids`` is the schema of
    ``instance_uuids``."""
    text = importlib.resources.files("scheduler").joinpath(
        "schemas", "request_spec.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    DRAFT.check_schema(schema)
    return schema


def instance_uuids_schema() -> dict:
    """``$defs/instance_uuids`` as a schema of its own (its ``$ref``s
    still resolve: the ``$defs`` come along)."""
    schema = request_spec_schema()
    return {**schema["$defs"]["instance_uuids"], "$defs": schema["$defs"]}
