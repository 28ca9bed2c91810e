"""Placement-quality simulator (``scheduler-manage simulate``).

A workload (``trace``: the Azure Public Dataset ``vmtable`` layout, or a
synthetic one shaped like it) is replayed on simulated compute nodes
(``fleet``) whose metrics come from the instances they host
(``cpu_model``), against the real engine: ``runner`` calls the same
``SchedulerManager`` that ``scheduler-service`` runs, on simulated time
(``scheduler.common.clock``). ``figures`` turns what happened into the numbers
of the report, ``plot`` into a picture.
"""
