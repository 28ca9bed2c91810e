"""NumInstancesWeigher: weigh hosts by how many instances they run."""

from scheduler.weights.attribute import AttributeWeigher


class NumInstancesWeigher(AttributeWeigher):
    """Weighs the number of instances on the host.
    ``[filter_scheduler] num_instances_weight_multiplier`` > 0 packs
    instances onto busy hosts, < 0 prefers quiet ones; the default 0.0
    leaves it without effect."""

    attribute = "num_instances"
    multiplier_option = "num_instances_weight_multiplier"
