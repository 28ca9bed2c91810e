"""Load balancing: balancers that pick an instance to move, the
utilisation history they judge hosts by, and the planner that schedules
and claims the move.

Entry point: ``scheduler.placement.balance_planner.BalancePlanner(conf,
on_planned=...).balance(cluster=None, dry_run=False)``, one balancing
tick. Modules: ``base`` (the plugin interface and parameter validation),
``even_distribution``, ``power_saving``, ``even_vm_count``,
``steady_load`` (the balancers), ``history`` (utilization_samples),
``migrations`` (the migrations table and ending a migration),
``planner``.
"""
