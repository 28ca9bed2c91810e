"""Cluster policies: their configuration, the stored policies of the REST
API, their units, the live set the service reads, and migration
policies."""
