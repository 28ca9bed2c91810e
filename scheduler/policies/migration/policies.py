"""Migration policies (oVirt's): how a live migration converges.

A policy says how many migrations a host runs at a time (maxMigrations,
which also divides the bandwidth) and gives a convergence schedule: the
actions before the migration starts (initialItems), those to take when
it stalls for a number of iterations (convergenceItems) and those once
the schedule is exhausted (lastItems). scheduler.policies.migration.convergence
plays a schedule.

The built-ins carry oVirt's published values. Custom policies come from
``[migration] policies_file`` (schema: scheduler/schemas/
migration_policies.json); their ids may not reuse a built-in's, so that a
built-in always means the same thing. ``[migration] cluster_policies``
and ``default_policy`` say which policy a cluster uses; a request may
name another.
"""

import dataclasses
import functools
import importlib.resources
import json
from collections.abc import Mapping
from collections.abc import Sequence

from oslo_config import cfg

from scheduler import exception
from scheduler.common import suggest
from scheduler.conf import migration as migration_conf

SET_DOWNTIME = "setDowntime"
POSTCOPY = "postcopy"
ABORT = "abort"
#: Actions after which nothing else can happen to the migration.
FINAL_ACTIONS = (POSTCOPY, ABORT)

LEGACY = "legacy"

_GROUP = "migration"
_FILE_OPTION = "policies_file"


class UnusableMigrationPolicy(exception.SchedulerError):
    """The policy a cluster is mapped to is unknown or was rejected when
    the policies file was read; other clusters are unaffected."""


@dataclasses.dataclass(frozen=True)
class Action:
    """One step of a schedule; ``params`` of setDowntime is the downtime
    in milliseconds, postcopy and abort take none."""

    action: str
    params: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class ConvergenceItem:
    stalling_limit: int
    action: Action


@dataclasses.dataclass(frozen=True)
class ConvergenceSchedule:
    initial_items: tuple[Action, ...]
    convergence_items: tuple[ConvergenceItem, ...]
    last_items: tuple[Action, ...]


@dataclasses.dataclass(frozen=True)
class MigrationPolicy:
    """A migration policy. ``schedule`` None (legacy) leaves convergence
    to the hypervisor; so does ``max_migrations`` None for concurrency,
    and the bandwidth is then not divided."""

    id: str
    name: str
    description: str
    max_migrations: int | None
    auto_convergence: bool
    migration_compression: bool
    enable_guest_events: bool
    schedule: ConvergenceSchedule | None


def _downtime(ms: int) -> Action:
    return Action(SET_DOWNTIME, (ms,))


# oVirt's stepwise downtimes (ms) at 1, 2, 3, 4 and 6 stalled iterations.
_DOWNTIME_STEPS = tuple(ConvergenceItem(limit, _downtime(ms)) for limit, ms
                        in ((1, 150), (2, 200), (3, 300), (4, 400),
                            (6, 500)))


def _stepwise(last_items: Sequence[Action]) -> ConvergenceSchedule:
    return ConvergenceSchedule((_downtime(100),), _DOWNTIME_STEPS,
                               tuple(last_items))


_BUILTINS = (
    MigrationPolicy(
        LEGACY, "Legacy",
        "The hypervisor's own convergence handling and limits.",
        None, False, False, False, None),
    MigrationPolicy(
        "minimal_downtime", "Minimal downtime",
        "A safe policy which in typical situations lets the VM converge. "
        "If the VM is not converging for a long time, the migration is "
        "aborted.",
        2, True, True, True, _stepwise([Action(ABORT)])),
    # The seed specifies only the last step; the rest is minimal_downtime.
    MigrationPolicy(
        "post_copy", "Post-copy migration",
        "As minimal downtime, but switches to post-copy instead of "
        "aborting: the VM always moves, and is lost if the network fails "
        "during the post-copy phase.",
        2, True, True, True, _stepwise([Action(POSTCOPY)])),
    MigrationPolicy(
        "suspend_workload_if_needed", "Suspend workload if needed",
        "A safe policy which makes also a highly loaded VM converge in "
        "most situations, at the cost of a noticeable slowdown; if it "
        "still does not converge, the migration is aborted.",
        1, True, True, True,
        _stepwise([_downtime(5000), Action(ABORT)])),
)
BUILTIN_POLICIES: dict[str, MigrationPolicy] = {policy.id: policy
                                                for policy in _BUILTINS}


@dataclasses.dataclass(frozen=True)
class MigrationPolicies:
    """The usable policies, the per-cluster mapping and the default.

    ``errors`` maps the id of each rejected custom policy (or of a
    missing one a cluster is mapped to) to why; the file as a whole is
    under the key ``None``.
    """

    policies: Mapping[str, MigrationPolicy]
    cluster_policies: Mapping[str, str]
    default_policy: str
    errors: Mapping[str | None, str] = dataclasses.field(
        default_factory=dict)

    def policy_for(self, cluster: str | None,
                   requested: str | None = None) -> MigrationPolicy:
        """The request's own policy, else the cluster's, else the default.

        Raises InvalidRequest for an unknown requested id and
        UnusableMigrationPolicy when the cluster's policy is unusable.
        """
        if requested is not None:
            if requested not in self.policies:
                raise exception.InvalidRequest(
                    f"migration_policy: unknown migration policy "
                    f"{requested!r}; expected one of "
                    f"{', '.join(sorted(self.policies))}")
            return self.policies[requested]
        policy_id = self.cluster_policies.get(cluster, self.default_policy)
        try:
            return self.policies[policy_id]
        except KeyError:
            reason = self.errors.get(policy_id, "unknown policy")
            raise UnusableMigrationPolicy(
                f"migration policy {policy_id!r} of cluster {cluster!r} is "
                f"unusable: {reason}") from None


@functools.cache
def policies_schema() -> dict:
    """The published JSON schema of the policies file (package data)."""
    # Here and in parse_policies_file: jsonschema costs every program
    # 40 ms at start, and only a policies file needs it.
    import jsonschema

    text = importlib.resources.files("scheduler").joinpath(
        "schemas", "migration_policies.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def load_migration_policies(conf: cfg.ConfigOpts) -> MigrationPolicies:
    """Read and check everything; raises ConfigError on the first problem
    (start-up: the operator fixes the file before the service runs)."""
    policies, problems = _checked(conf)
    if problems:
        raise problems[0]
    return policies


def migration_problems(conf: cfg.ConfigOpts) -> list[exception.ConfigError]:
    """Every problem (``config check``): each rejected policy of the
    file, each unknown policy a cluster or the default names."""
    return _checked(conf)[1]


def _checked(conf: cfg.ConfigOpts
             ) -> tuple[MigrationPolicies, list[exception.ConfigError]]:
    custom, file_errors = _read_file(conf)
    problems = [exception.ConfigError(_GROUP, _FILE_OPTION,
                                      conf.migration.policies_file, problem)
                for problem in file_errors.values()]
    policies = _assemble(conf, custom, {})
    # Policies the file names but rejected are reported above already.
    known = set(policies.policies) | set(file_errors)
    expected = ", ".join(sorted(policies.policies))
    problems.extend(
        exception.ConfigError(
            _GROUP, "cluster_policies", f"{cluster}:{policy_id}",
            f"unknown migration policy, expected one of {expected}"
            + suggest.did_you_mean(policy_id, policies.policies))
        for cluster, policy_id in policies.cluster_policies.items()
        if policy_id not in known)
    if policies.default_policy not in known:
        problems.append(exception.ConfigError(
            _GROUP, "default_policy", policies.default_policy,
            f"unknown migration policy, expected one of {expected}"
            + suggest.did_you_mean(policies.default_policy,
                                   policies.policies)))
    return policies, problems


def read_migration_policies(conf: cfg.ConfigOpts) -> MigrationPolicies:
    """Read the policies without raising: a rejected custom policy is left
    out and its problem recorded in ``errors``, the others stay usable
    (runtime: one bad policy must not stop other clusters)."""
    return _assemble(conf, *_read_file(conf))


def _read_file(conf: cfg.ConfigOpts) -> tuple[dict[str, MigrationPolicy],
                                              dict[str | None, str]]:
    path = conf.migration.policies_file
    return parse_policies_file(path) if path else ({}, {})


def _assemble(conf: cfg.ConfigOpts, custom: Mapping[str, MigrationPolicy],
              file_errors: Mapping[str | None, str]) -> MigrationPolicies:
    policies = {**BUILTIN_POLICIES, **custom}
    errors = dict(file_errors)
    mapping = dict(conf.migration.cluster_policies)
    for policy_id in set(mapping.values()) | {conf.migration.default_policy}:
        if policy_id not in policies:
            errors.setdefault(policy_id, "unknown migration policy")
    return MigrationPolicies(policies, mapping,
                             conf.migration.default_policy, errors)


def parse_policies_file(path: str) -> tuple[dict[str, MigrationPolicy],
                                            dict[str | None, str]]:
    """The valid policies of the file and, per rejected policy id (None
    for the file as a whole), the problem: ``policy 'x': $[0].field:
    what is wrong``."""
    try:
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream)
    except (OSError, UnicodeDecodeError) as e:
        return {}, {None: f"cannot read the file: {e}"}
    except json.JSONDecodeError as e:
        return {}, {None: f"not JSON: {e}"}
    import jsonschema

    validator = jsonschema.Draft202012Validator(policies_schema())
    problems: dict[int, str] = {}
    for error in sorted(validator.iter_errors(document),
                        key=lambda e: list(e.absolute_path)):
        if not error.absolute_path:
            return {}, {None: f"$: {error.message}"}
        problems.setdefault(error.absolute_path[0],
                            f"{_json_path(error.absolute_path)}: "
                            f"{error.message}")
    policies: dict[str, MigrationPolicy] = {}
    errors: dict[str | None, str] = {}
    for index, item in enumerate(document):
        policy_id = _id_of(item, index)
        problem = problems.get(index) or _semantic_problem(
            item, index, policies)
        if problem is not None:
            errors[policy_id] = f"policy {policy_id!r}: {problem}"
            continue
        policies[policy_id] = _policy(item)
    return policies, errors


def _id_of(item: object, index: int) -> str:
    if isinstance(item, dict) and isinstance(item.get("id"), str):
        return item["id"]
    return f"#{index}"


def _json_path(parts: Sequence[object]) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else
                         f".{part}" for part in parts)


def _semantic_problem(item: dict, index: int,
                      seen: Mapping[str, MigrationPolicy]) -> str | None:
    """What the schema cannot say: unique ids, increasing stalling
    limits, nothing after a final action."""
    at = f"$[{index}]"
    if item["id"] in BUILTIN_POLICIES:
        return (f"{at}.id: {item['id']!r} is a built-in policy; give the "
                "custom policy another id")
    if item["id"] in seen:
        return f"{at}.id: {item['id']!r} is used by an earlier policy"
    config = item["config"]
    previous = None
    for number, step in enumerate(config["convergenceItems"]):
        limit = step["stallingLimit"]
        if previous is not None and limit <= previous:
            return (f"{at}.config.convergenceItems[{number}].stallingLimit: "
                    f"{limit} is not greater than the previous limit "
                    f"{previous}")
        previous = limit
    sequence = ([(f"convergenceItems[{n}].convergenceItem", s[
        "convergenceItem"]) for n, s in enumerate(config["convergenceItems"])]
                + [(f"lastItems[{n}]", a)
                   for n, a in enumerate(config["lastItems"])])
    for (where, action), _ in zip(sequence, sequence[1:], strict=False):
        if action["action"] in FINAL_ACTIONS:
            return (f"{at}.config.{where}.action: nothing can follow "
                    f"{action['action']!r}")
    return None


def _action(item: Mapping) -> Action:
    return Action(item["action"], tuple(int(p) for p in item["params"]))


def _policy(item: Mapping) -> MigrationPolicy:
    config = item["config"]
    return MigrationPolicy(
        item["id"], item["name"], item.get("description", ""),
        item["maxMigrations"], item["autoConvergence"],
        item["migrationCompression"], item["enableGuestEvents"],
        ConvergenceSchedule(
            tuple(_action(a) for a in config["initialItems"]),
            tuple(ConvergenceItem(s["stallingLimit"],
                                  _action(s["convergenceItem"]))
                  for s in config["convergenceItems"]),
            tuple(_action(a) for a in config["lastItems"])))


def bandwidth_per_migration(conf: cfg.ConfigOpts, policy: MigrationPolicy,
                            link_speed_mbps: int | None = None,
                            hypervisor_default_mbps: int | None = None,
                            setting: str | int | None = None
                            ) -> int | None:
    """Mbps one migration may use; None lets the hypervisor decide.

    ``auto`` takes the link speed of the host's migration network when
    known; a number is the operator's. Either is shared by the policy's
    maxMigrations concurrent migrations (oVirt). Otherwise the
    hypervisor's own per-migration default applies, undivided.
    ``setting`` (a cluster's, set through the REST API) replaces
    ``[migration] bandwidth``.
    """
    if setting is None:
        setting = conf.migration.bandwidth
    if setting == migration_conf.BANDWIDTH_AUTO and link_speed_mbps:
        total = link_speed_mbps
    elif isinstance(setting, int):
        total = setting
    else:
        return hypervisor_default_mbps
    return max(1, total // (policy.max_migrations or 1))
