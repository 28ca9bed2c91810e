"""Load balancing: balancers that pick an instance to move, the
utilisation history they judge hosts by, and the planner that schedules
and claims the move."""
