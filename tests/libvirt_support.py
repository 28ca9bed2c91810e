"""Shared by the unit and functional tests of the libvirt monitor."""

import os

import pytest

from compute_monitor.monitors import libvirt_domains


def require_libvirt() -> None:
    """Skip the test when libvirt-python is missing; fail it in CI
    (``CI=true``, as tests/functional/conftest.py's in_ci reads it), where
    .ci/run installs it and a silent skip would hide a broken install."""
    try:
        libvirt_domains.import_libvirt()
    except libvirt_domains.LibvirtUnavailable as e:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true: {e}", pytrace=False)
        pytest.skip(str(e))
