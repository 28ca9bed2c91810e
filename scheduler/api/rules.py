"""Authorization rules (oslo.policy), defaults in code.

The rules map oVirt's action groups (docs/api.md) to roles. Roles come
from the ``permissions`` table ({user, role, cluster or *}), and
Keystone's system-scope ``admin`` counts as ``admin``. Cluster-bound
checks are computed per request into the target: ``manages_policy``
(cluster_admin of every cluster the policy is attached to, or its
creator while it is attached to none) and ``manages_cluster``.
``policy.yaml`` ([oslo_policy] policy_file) overrides any rule;
``oslopolicy-sample-generator --namespace metrics-scheduler`` lists them.
"""

from oslo_policy import policy

ANY_ROLE = "role:admin or role:cluster_admin or role:reader"
READ = "scheduler:read"
POLICY_CREATE = "scheduler:policy:create"
POLICY_EDIT = "scheduler:policy:edit"
POLICY_DELETE = "scheduler:policy:delete"
CLUSTER_ATTACH = "scheduler:cluster:attach"
UNIT_DISABLE = "scheduler:unit:disable"
PERMISSIONS = "scheduler:permission:manage"

_POLICY = "/v1/schedulingpolicies/{id}"

RULES = [
    policy.DocumentedRuleDefault(
        READ, ANY_ROLE,
        "Read policy units, scheduling policies, clusters and migration "
        "policies, the hosts, explain a decision, and use the web "
        "console: any role.",
        [{"method": "GET", "path": p} for p in (
            "/v1/schedulingpolicyunits", "/v1/schedulingpolicies",
            "/v1/clusters", "/v1/migrationpolicies", "/v1/hosts",
            "/v1/access", "/ui/")]
        + [{"method": "POST", "path": "/v1/explain"}]),
    policy.DocumentedRuleDefault(
        POLICY_CREATE, "role:admin or role:cluster_admin",
        "oVirt's CreatePolicy (and clone, based_on): admin, or "
        "cluster_admin of some cluster.",
        [{"method": "POST", "path": "/v1/schedulingpolicies"}]),
    policy.DocumentedRuleDefault(
        POLICY_EDIT,
        "role:admin or (role:cluster_admin and 'True':%(manages_policy)s)",
        "oVirt's Edit Policy: admin, or cluster_admin of every cluster "
        "the policy is attached to (while it is attached to none: its "
        "creator or a cluster_admin of *). Covers the filters, weights "
        "and balances sub-collections.",
        [{"method": "PUT", "path": _POLICY},
         {"method": "POST", "path": _POLICY + "/filters"},
         {"method": "DELETE", "path": _POLICY + "/filters/{unit_id}"}]),
    policy.DocumentedRuleDefault(
        POLICY_DELETE,
        "role:admin or (role:cluster_admin and 'True':%(manages_policy)s)",
        "oVirt's Delete Policy: as edit.",
        [{"method": "DELETE", "path": _POLICY}]),
    policy.DocumentedRuleDefault(
        CLUSTER_ATTACH,
        "role:admin or (role:cluster_admin and 'True':%(manages_cluster)s)",
        "Attach a policy to a cluster and set its properties and "
        "migration settings: admin, or cluster_admin of that cluster.",
        [{"method": "PUT", "path": "/v1/clusters/{name}"}]),
    policy.DocumentedRuleDefault(
        UNIT_DISABLE, "role:admin",
        "Disable a third-party policy unit: admin.",
        [{"method": "DELETE", "path": "/v1/schedulingpolicyunits/{id}"}]),
    policy.DocumentedRuleDefault(
        PERMISSIONS, "role:admin",
        "List, grant and revoke permissions: admin.",
        [{"method": "GET", "path": "/v1/permissions"},
         {"method": "POST", "path": "/v1/permissions"},
         {"method": "DELETE", "path": "/v1/permissions/{id}"}]),
]


def list_rules() -> list[policy.DocumentedRuleDefault]:
    """The ``oslo.policy.policies`` entry point (sample generator)."""
    return RULES
