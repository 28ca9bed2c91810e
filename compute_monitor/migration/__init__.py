"""The node's migration agent (``migration-agent``): carries out the
moves the balancers planned out of this node, with libvirt."""
