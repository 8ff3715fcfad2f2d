"""Backup and restore benchmarks, alone or under load, and the check of a restored server."""
