"""pgrig: a PostgreSQL benchmarking and tuning lab."""

__version__ = "0.1.0"
