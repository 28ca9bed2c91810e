"""The host cache: the host states of one scheduler process, read from the
``compute_nodes`` and ``allocations`` tables and refreshed before each
decision. The row shapes and the statements of a refresh are in
``scheduler.db.host_queries``.

- ``decode``: the JSON columns of a row;
- ``build``: a host state from a row, its claims and its decoding;
- ``reading``: what one refresh reads;
- ``manager``: ``HostManager``, the cache itself;
- ``refresher``: the background thread of a serving process.
"""
