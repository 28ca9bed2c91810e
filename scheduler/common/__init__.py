"""What every layer may use: the clock, did-you-mean suggestions, text
tables, Prometheus metrics and the decision log line, garbage collector
tuning."""
