"""Environments on other hosts, each driven through that host's pgrig: create, destroy, forward a
command, replicas on further hosts, repair (the CLI parses, calls these and renders)."""
