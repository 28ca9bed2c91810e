"""CPUWeigher: prefer hosts with more free vCPUs."""

from scheduler.weights.attribute import AttributeWeigher


class CPUWeigher(AttributeWeigher):
    """Weighs free vCPUs (vcpus x cpu_allocation_ratio minus claims).
    ``[filter_scheduler] cpu_weight_multiplier`` > 0 spreads instances
    over hosts, < 0 stacks them."""

    attribute = "free_vcpus"
    multiplier_option = "cpu_weight_multiplier"
