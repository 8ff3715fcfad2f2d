"""View models: what a surface shows, computed once; the CLI, the web pages and the reports
only render them (the pattern of insights/changes.py and optuna's visualization "info" objects).

- compare.py: a comparison of runs or groups of repeats (metrics with the engine's ratios and
  verdicts, context, settings diff, what changed), as `runs compare`, the compare page and
  `report compare` show it;
- run_summary.py: one run's summary (what ran, where, its results), its settings that differ
  from the defaults and its host checks, as `runs show`, the run page and `report run` show it;
- settings.py: the one rule for a setting's row (values in human units, the layer that set it);
- study.py: a study (points, runs per point, TPS with bounds, verdicts with bounds, evidence,
  the best point, notes), as `study show`, the study page and `study report` show it, over the
  figures of study_data.py.

Values are text already formatted by pgrig/format.py; tables are pgrig/table.py's Table.
"""
