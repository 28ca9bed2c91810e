"""RAMWeigher: prefer hosts with more free RAM."""

from scheduler.weights.attribute import AttributeWeigher


class RAMWeigher(AttributeWeigher):
    """Weighs free RAM in MB (capacity x ram_allocation_ratio minus
    claims). ``[filter_scheduler] ram_weight_multiplier`` > 0 spreads
    instances over hosts, < 0 stacks them."""

    attribute = "free_ram_mb"
    multiplier_option = "ram_weight_multiplier"
