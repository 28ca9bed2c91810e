"""The roles of a permission and the cluster name that means all of
them; apart from permissions.py so that ``scheduler-manage``'s parser
(``permission add --role``) does not import SQLAlchemy."""

ROLES = ("admin", "cluster_admin", "reader")
ALL_CLUSTERS = "*"
