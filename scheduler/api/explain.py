"""POST /v1/explain: one placement decided and explained, nothing
claimed, by the code ``scheduler-manage explain`` runs
(``scheduler.policies.explain``): the same choice for the same request.

The body is a request spec as the RPC API takes it (docs/architecture.md:
``flavor`` {vcpus, memory_mb, root_gb, extra_specs}, ``cluster``,
``availability_zone``, ...); any role may ask. A field the request
validation refuses is a 400 naming it, a cluster without nodes a 400 on
``request_spec.cluster`` (named as the validation names fields), an
empty fleet a 409.
"""

from scheduler import exception
from scheduler.api import body
from scheduler.api import errors
from scheduler.api import hosts
from scheduler.api import rules
from scheduler.api.router import Context
from scheduler.api.router import Reply
from scheduler.api.router import Router
from scheduler.policies import explain as dry_run
from scheduler.request import extra_specs
from scheduler.request.spec import RequestSpec
from scheduler.request.validation import validate_request


def _spec_field(spec_dict: dict, key: str) -> str:
    """Where the extra spec ``key`` is in the request; the request as a
    whole when the flavor's extra specs do not hold it (the hints' schema
    admits no extra spec, so it is never one of theirs)."""
    if key in spec_dict["flavor"].get("extra_specs", {}):
        return f"request_spec.flavor.extra_specs.{key}"
    return "request_spec"


def explain(ctx: Context) -> Reply:
    ctx.access.authorize(rules.READ)
    data = body.read_json(ctx.request)
    try:
        spec_dict, _ = validate_request(data)
        spec = RequestSpec.from_dict(
            spec_dict, scope=ctx.conf.metrics.extra_specs_scope)
        explained = dry_run.explain(ctx.conf, spec,
                                    hosts.host_manager(ctx.conf))
    except extra_specs.InvalidExtraSpec as e:
        raise errors.bad_request(_spec_field(spec_dict, e.key),
                                 str(e)) from None
    except exception.InvalidRequest as e:
        raise errors.ApiError(400, str(e)) from None
    except exception.ConfigError as e:
        # Stored policies are validated when written: a plugin removed
        # since, or a config file changed under a running API.
        raise errors.conflict(f"the cluster's policy cannot be used: "
                              f"{e}") from None
    if explained.problem is not None:
        if spec.cluster is not None and explained.document["hosts"]:
            raise errors.bad_request("request_spec.cluster",
                                     explained.problem)
        raise errors.conflict(explained.problem)
    return Reply(explained.document)


def register(router: Router) -> None:
    router.add("/v1/explain", "POST", explain)
