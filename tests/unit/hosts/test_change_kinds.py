"""Every HostState attribute says which kinds of change move it."""

import dataclasses

from scheduler.filters.nova_names import NOVA_NAMES
from scheduler.hosts import change_kinds
from scheduler.hosts.state import HostState


def _attributes() -> set[str]:
    fields = {field.name for field in dataclasses.fields(HostState)}
    properties = {name for name, value in vars(HostState).items()
                  if isinstance(value, property)}
    return fields | properties


def test_every_host_state_attribute_is_declared():
    # A field added to HostState must be placed: an undeclared one is
    # recomputed at every change, so the table stays right, but its
    # column is patched for every report and claim for nothing.
    assert set(change_kinds.ATTRIBUTES) == _attributes()


def test_an_unknown_attribute_moves_with_every_change():
    assert change_kinds.of_attribute("a_subclass_field") == change_kinds.ANY
    assert change_kinds.of_attribute("free_vcpus") == change_kinds.CLAIMS


def test_nova_names_are_not_host_state_attributes():
    # ComputeCapabilitiesFilter reads a Nova name through its own
    # function: it must fall back to every change, not to the kinds of a
    # HostState attribute of the same name.
    assert not set(NOVA_NAMES) & set(change_kinds.ATTRIBUTES)
