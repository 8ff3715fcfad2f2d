"""What a run is, as every layer exchanges it: the run record and its documents.

- run.py: RunRecord (load parameters, results, context), LatencyStats, ScriptResult,
  RunFilter, StudyRecord.
- documents.py: the declared shape of the record's JSON documents: `extra` (RunExtra),
  `host` (HostDoc, with its checks) and `insights` (InsightsDoc), so readers are checked by
  mypy instead of reading by string.
- protocol.py: what the rest of pgrig needs of an archive (RunReader, RunStore); the archive
  package implements it.
- json_safe.py: the JSON form of a document (datetimes, NaN).

It sits below analysis (analysis reads records, never the archive) and above request.
"""
