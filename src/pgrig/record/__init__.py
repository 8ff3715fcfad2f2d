"""What a run is, as every layer exchanges it: the run record and its documents.

- run.py: RunRecord (load parameters, results, context), LatencyStats, ScriptResult,
  RunFilter, StudyRecord.
- documents.py: the declared shape of the record's JSON documents: `extra` (RunExtra), and
  every document imported from it, so readers are checked by mypy instead of reading by
  string. The sub-documents, by theme: host_docs.py (`host` and `disk_limit`),
  connection_docs.py, result_docs.py, insight_docs.py (`insights` too), load_host_docs.py,
  backup_docs.py, harness_docs.py.
- protocol.py: what the rest of pgrig needs of an archive (RunReader, RunStore); the archive
  package implements it.
- json_safe.py: the JSON form of a document (datetimes, NaN).

It sits below analysis (analysis reads records, never the archive) and above request.
"""
