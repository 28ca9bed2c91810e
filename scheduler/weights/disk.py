"""DiskWeigher: prefer hosts with more free local disk."""

from scheduler.weights.attribute import AttributeWeigher


class DiskWeigher(AttributeWeigher):
    """Weighs free local disk in GB (local_gb x disk_allocation_ratio
    minus claims). ``[filter_scheduler] disk_weight_multiplier`` > 0
    spreads instances over hosts, < 0 stacks them."""

    attribute = "free_disk_gb"
    multiplier_option = "disk_weight_multiplier"
