"""The wording of a request's schema errors.

jsonschema finds the first error of a request the fast check refused and
this module words it: ``request_spec.flavor.vcpus: 'two' is not of type
'integer'``. The stock messages repeat the whole offending value (a
megabyte of it for a huge list); these quote it abbreviated.
"""

import jsonschema

from scheduler.common.abridge import abridged
from scheduler.common.abridge import short
from scheduler.request.schema import DRAFT
from scheduler.request.values import field


def _type_keyword(validator, types, instance, schema):
    types = types if isinstance(types, list) else [types]
    if not any(validator.is_type(instance, t) for t in types):
        yield jsonschema.ValidationError(
            f"{short(instance)} is not of type "
            f"{' or '.join(repr(t) for t in types)}")


def _max_items_keyword(validator, maximum, instance, schema):
    if validator.is_type(instance, "array") and len(instance) > maximum:
        yield jsonschema.ValidationError(
            f"{len(instance)} items, at most {maximum} allowed")


def _min_items_keyword(validator, minimum, instance, schema):
    if validator.is_type(instance, "array") and len(instance) < minimum:
        yield jsonschema.ValidationError(
            f"at least {minimum} item(s) required")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_equal(one: object, other: object) -> bool:
    # JSON equality: true is not 1, 1 is 1.0.
    if isinstance(one, bool) or isinstance(other, bool):
        return type(one) is type(other) and one == other
    if _is_number(one) and _is_number(other):
        return one == other
    return type(one) is type(other) and one == other


def _has_duplicates(items: list) -> bool:
    if all(isinstance(item, str) for item in items):
        return len(set(items)) != len(items)
    return any(_json_equal(one, other) for index, one in enumerate(items)
               for other in items[index + 1:])


def _unique_items_keyword(validator, unique, instance, schema):
    if (unique and validator.is_type(instance, "array")
            and _has_duplicates(instance)):
        yield jsonschema.ValidationError("has duplicate items")


def _max_properties_keyword(validator, maximum, instance, schema):
    if validator.is_type(instance, "object") and len(instance) > maximum:
        yield jsonschema.ValidationError(
            f"{len(instance)} keys, at most {maximum} allowed")


def _max_length_keyword(validator, maximum, instance, schema):
    if validator.is_type(instance, "string") and len(instance) > maximum:
        yield jsonschema.ValidationError(
            f"{short(instance)} is too long ({len(instance)} "
            f"characters, at most {maximum})")


def _enum_keyword(validator, values, instance, schema):
    if not any(_json_equal(instance, value) for value in values):
        yield jsonschema.ValidationError(
            f"{short(instance)} is not one of "
            f"{', '.join(repr(v) for v in values)}")


def _format_keyword(validator, name, instance, schema):
    if validator.format_checker is None:
        return
    if not validator.format_checker.conforms(instance, name):
        yield jsonschema.ValidationError(
            f"{short(instance)} is not a {name!r}")


#: The standard validator of the schema's draft, with messages that quote
#: a value only abbreviated.
Validator = jsonschema.validators.extend(DRAFT, validators={
    "type": _type_keyword,
    "maxItems": _max_items_keyword,
    "minItems": _min_items_keyword,
    "uniqueItems": _unique_items_keyword,
    "maxProperties": _max_properties_keyword,
    "maxLength": _max_length_keyword,
    "enum": _enum_keyword,
    "format": _format_keyword,
})


def describe(error: jsonschema.ValidationError, root: str) -> str:
    """``<field path>: <problem>``; the problem of a key (propertyNames)
    says so."""
    path = list(error.absolute_path)
    kind, value, instance = (error.validator, error.validator_value,
                             error.instance)
    if kind == "required":
        missing = [name for name in value if name not in instance]
        return f"{field(root, path + missing[:1])}: required but missing"
    if kind == "additionalProperties" and value is False:
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in instance if k not in known)
        return (f"{field(root, path + extra[:1])}: unknown key (expected "
                f"one of {', '.join(known)})")
    message = abridged(error.message, 200)
    if "propertyNames" in error.relative_schema_path:
        message = f"key {message}"
    return f"{field(root, path)}: {message}"
