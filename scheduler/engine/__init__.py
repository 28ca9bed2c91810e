"""One decision: the filter scheduler running filters and weighers over the
host table, the decision's record, the guard that contains faulty
plugins and the warnings of a request."""
