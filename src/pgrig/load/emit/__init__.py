"""Experiments written out for another runner instead of run here (`--emit k8s`)."""
