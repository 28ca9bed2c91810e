"""Searching configuration values on a workload (``scheduler-manage
tune``): the space (``space``), one trial (``trial``), the batched
Optuna search (``search``), a search from baseline to hold-out
(``session``) and its picture (``plot``)."""
