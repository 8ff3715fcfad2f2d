"""Automatic tuning: an Optuna search over a version-aware knob space, every trial an archived
run of a pgrig study, then a confirmation of the winner by interleaved repeats judged by the one
comparison engine (analysis/compare.py). See docs/architecture.md."""
