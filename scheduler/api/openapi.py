"""The OpenAPI 3 document of the API (``GET /v1/openapi.json``), built
from one table of operations so that it lists every route."""

import functools

from scheduler.api import body
from scheduler.api import clusters
from scheduler.api import policy_body
from scheduler.api import rules

_REF = "#/components/schemas/"
_ERROR = {"description": "Error naming the field or what holds the "
          "resource", "content": {"application/json": {"schema": {
              "$ref": _REF + "Error"}}}}


def _schema(name: str) -> dict:
    return {"application/json": {"schema": {"$ref": _REF + name}}}


def _list(key: str, item: str) -> dict:
    return {"application/json": {"schema": {
        "type": "object", "properties": {key: {
            "type": "array", "items": {"$ref": _REF + item}}}}}}


_UNIT_REF = {"type": "object", "properties": {
    "unit": {"type": "string", "description": "unit id or name"},
    "unit_id": {"type": "string", "readOnly": True},
    "position": {"type": "string", "enum": ["first", "last", None],
                 "nullable": True},
    "factor": {"type": "integer"}}, "required": ["unit"]}

SCHEMAS = {
    "Error": {"type": "object", "properties": {"error": {
        "type": "object", "properties": {
            "code": {"type": "integer"}, "title": {"type": "string"},
            "message": {"type": "string"}}}}},
    "SchedulingPolicyUnit": {"type": "object", "properties": {
        "id": {"type": "string", "format": "uuid"},
        "name": {"type": "string"},
        "type": {"type": "string",
                 "enum": ["filter", "weight", "load_balancing"]},
        "description": {"type": "string"}, "internal": {"type": "boolean"},
        "enabled": {"type": "boolean"},
        "properties": {"type": "array", "items": {"type": "object"}}}},
    "UnitRef": _UNIT_REF,
    "SchedulingPolicy": {"type": "object", "additionalProperties": False,
                         "properties": {
        "id": {"type": "string", "readOnly": True},
        "name": {"type": "string", "maxLength": 255},
        "description": {"type": "string"},
        "normalization": {"type": "string", "nullable": True,
                          "enum": ["minmax", "rank", "hardmax", "none"]},
        "properties": {"type": "object",
                       "additionalProperties": {"type": "integer"}},
        "filters": {"type": "array", "items": {"$ref": _REF + "UnitRef"}},
        "weights": {"type": "array", "items": {"$ref": _REF + "UnitRef"}},
        "balance": {"nullable": True, "allOf": [{"$ref": _REF + "UnitRef"}]},
        "locked": {"type": "boolean", "readOnly": True},
        "clusters": {"type": "array", "items": {"type": "string"},
                     "readOnly": True},
        "version": {"type": "integer", "readOnly": True},
        "based_on": {"type": "string", "writeOnly": True}}},
    "Cluster": {"type": "object", "properties": {
        "name": {"type": "string", "readOnly": True},
        "scheduling_policy": {"type": "object", "nullable": True,
                              "properties": {"id": {"type": "string"}}},
        "properties": {"type": "object",
                       "additionalProperties": {"type": "integer"}},
        "migration": {"type": "object", "properties": {
            "policy": {"type": "object",
                       "properties": {"id": {"type": "string"}}},
            "bandwidth": {"type": "object", "properties": {
                "assignment_method": {"type": "string", "enum": [
                    "auto", "hypervisor_default", "custom"]},
                "custom_value": {
                    "type": "integer", "nullable": True, "minimum": 1,
                    "maximum": clusters.MAX_BANDWIDTH_MBPS,
                    "description": "Mbps, for custom; at most "
                    f"{clusters.MAX_BANDWIDTH_MBPS} (10 Tbit/s)"}}}}},
        "version": {"type": "integer", "readOnly": True}}},
    "MigrationPolicy": {"type": "object"},
    "Permission": {"type": "object", "properties": {
        "id": {"type": "string", "readOnly": True},
        "user": {"type": "string"},
        "domain": {"type": "string", "nullable": True, "maxLength": 64,
                   "description": "the user's Keystone domain (id or "
                   "name); null: an htpasswd user or the default domain"},
        "role": {"type": "string",
                 "enum": ["admin", "cluster_admin", "reader"]},
        "cluster": {"type": "string", "default": "*"}},
        "required": ["user", "role"]},
    "Host": {"type": "object", "description": "scheduler-manage hosts "
             "list's record, with cpu_percent and memory_percent (the "
             "reported cpu.percent and memory.percent, null when not "
             "reported) and metrics_stale (older than [metrics] max_age)",
             "properties": {
                 "host": {"type": "string"}, "nodename": {"type": "string"},
                 "cluster": {"type": "string", "nullable": True},
                 "state": {"type": "string",
                           "enum": ["up", "down", "disabled"]},
                 "metric_age_s": {"type": "number", "nullable": True},
                 "metrics_stale": {"type": "boolean"},
                 "cpu_percent": {"type": "number", "nullable": True},
                 "memory_percent": {"type": "number", "nullable": True}}},
    "RequestSpec": {"type": "object", "description": "A request spec as "
                    "the RPC API takes it (scheduler/schemas/"
                    "request_spec.json)"},
    "Explanation": {"type": "object", "description": "scheduler-manage "
                    "explain --format json: selected, summary, warnings, "
                    "hosts (filtered_by, reason, weight, weights), policy"},
    "Access": {"type": "object", "properties": {
        "user": {"type": "string"},
        "roles": {"type": "array", "items": {"type": "string"}},
        "clusters": {"type": "array", "items": {"type": "string"}},
        "may": {"type": "object",
                "additionalProperties": {"type": "boolean"}},
        "edit_policies": {"type": "array", "items": {"type": "string"}},
        "delete_policies": {"type": "array", "items": {"type": "string"}},
        "attach_clusters": {"type": "array", "items": {"type": "string"}}}},
}

# (path, method, summary, rule, request schema, response)
_P = "/v1/schedulingpolicies"
OPERATIONS = [
    ("/", "get", "List the API versions", None, None, None),
    ("/v1/schedulingpolicyunits", "get", "List policy units", rules.READ,
     None, _list("schedulingpolicyunits", "SchedulingPolicyUnit")),
    ("/v1/schedulingpolicyunits/{id}", "get", "Show a policy unit",
     rules.READ, None, _schema("SchedulingPolicyUnit")),
    ("/v1/schedulingpolicyunits/{id}", "delete",
     "Disable a third-party policy unit", rules.UNIT_DISABLE, None, None),
    (_P, "get", "List scheduling policies", rules.READ, None,
     _list("schedulingpolicies", "SchedulingPolicy")),
    (_P, "post", "Create a policy (based_on: copy one)",
     rules.POLICY_CREATE, "SchedulingPolicy", _schema("SchedulingPolicy")),
    (_P + "/{id}", "get", "Show a policy", rules.READ, None,
     _schema("SchedulingPolicy")),
    (_P + "/{id}", "put", "Edit a policy (If-Match)", rules.POLICY_EDIT,
     "SchedulingPolicy", _schema("SchedulingPolicy")),
    (_P + "/{id}", "delete", "Delete a policy (If-Match)",
     rules.POLICY_DELETE, None, None),
    ("/v1/clusters", "get", "List clusters", rules.READ, None,
     _list("clusters", "Cluster")),
    ("/v1/clusters/{name}", "get", "Show a cluster", rules.READ, None,
     _schema("Cluster")),
    ("/v1/clusters/{name}", "put", "Attach a policy, set overrides and "
     "migration settings (If-Match)", rules.CLUSTER_ATTACH, "Cluster",
     _schema("Cluster")),
    ("/v1/migrationpolicies", "get", "List migration policies", rules.READ,
     None, _list("migrationpolicies", "MigrationPolicy")),
    ("/v1/migrationpolicies/{id}", "get", "Show a migration policy",
     rules.READ, None, _schema("MigrationPolicy")),
    ("/v1/permissions", "get", "List permissions", rules.PERMISSIONS, None,
     _list("permissions", "Permission")),
    ("/v1/permissions", "post", "Grant a permission", rules.PERMISSIONS,
     "Permission", _schema("Permission")),
    ("/v1/permissions/{id}", "delete", "Revoke a permission",
     rules.PERMISSIONS, None, None),
    ("/v1/hosts", "get", "List the compute nodes", rules.READ, None,
     _list("hosts", "Host")),
    ("/v1/hosts/{name}", "get", "Show a compute node (node or host name)",
     rules.READ, None, _schema("Host")),
    ("/v1/explain", "post", "Explain a placement, nothing claimed",
     rules.READ, "RequestSpec", _schema("Explanation")),
    ("/v1/access", "get", "Who the caller is and what they may do",
     rules.READ, None, _schema("Access")),
]
for _sub in ("filters", "weights", "balances"):
    OPERATIONS += [
        (f"{_P}/{{id}}/{_sub}", "get", f"List the policy's {_sub}",
         rules.READ, None, _list(_sub, "UnitRef")),
        (f"{_P}/{{id}}/{_sub}", "post", f"Add to the policy's {_sub}",
         rules.POLICY_EDIT, "UnitRef", _schema("UnitRef")),
        (f"{_P}/{{id}}/{_sub}/{{unit_id}}", "get", f"Show one of {_sub}",
         rules.READ, None, _schema("UnitRef")),
        (f"{_P}/{{id}}/{_sub}/{{unit_id}}", "delete",
         f"Remove one of {_sub}", rules.POLICY_EDIT, None, None),
    ]


def _operation(path: str, summary: str, rule: str | None,
               request: str | None, response: dict | None) -> dict:
    operation: dict = {"summary": summary, "responses": {
        "200" if response else "204": (
            {"description": "OK", "content": response} if response
            else {"description": "Done"}),
        "400": _ERROR, "401": _ERROR, "403": _ERROR, "404": _ERROR,
        "409": _ERROR, "412": _ERROR, "413": _ERROR}}
    if rule:
        operation["description"] = f"Authorized by the rule {rule}."
    if request:
        operation["requestBody"] = {"required": True,
                                    "content": _schema(request)}
        # Any other Content-Type: a browser could send it cross-site.
        operation["responses"]["415"] = _ERROR
    params = [part[1:-1] for part in path.split("/")
              if part.startswith("{")]
    if params:
        operation["parameters"] = [
            {"name": p, "in": "path", "required": True,
             "schema": {"type": "string"}} for p in params]
    return operation


@functools.cache
def document() -> dict:
    paths: dict[str, dict] = {}
    for path, method, summary, rule, request, response in OPERATIONS:
        paths.setdefault(path, {})[method] = _operation(
            path, summary, rule, request, response)
    return {
        "openapi": "3.0.3",
        "info": {"title": "metrics-scheduler scheduling policies API",
                 "version": "1.0",
                 "description": "oVirt's scheduling policies API with "
                 "permissions. Read-only fields of a "
                 f"policy: {', '.join(policy_body.READ_ONLY)}. Request "
                 "bodies are JSON with Content-Type: application/json "
                 "(else 415), nested at most "
                 f"{body.MAX_DEPTH} levels."},
        "components": {"schemas": SCHEMAS, "securitySchemes": {
            "basic": {"type": "http", "scheme": "basic"},
            "keystone": {"type": "apiKey", "in": "header",
                         "name": "X-Auth-Token"}}},
        "security": [{"basic": []}, {"keystone": []}],
        "paths": paths,
    }
