"""What pgrig needs of an archive: defined in pgrig.record.protocol (beside the records it
exchanges, below analysis). Kept here so existing imports keep working."""

from pgrig.record.protocol import RunReader, RunStore

__all__ = ["RunReader", "RunStore"]
