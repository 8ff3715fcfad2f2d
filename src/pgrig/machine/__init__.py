"""The machine under the benchmark: know it (facts, checks), prepare it (tune) and undo (restore).

Modules, one job each:
  sysfs     reading and writing /proc, /sys and /dev under replaceable roots (tests use trees)
  cpus      CPU lists, SMT siblings and NUMA nodes; picking N CPUs one per physical core
  knobs     the kernel settings pgrig can check and change, with their recommended values
  checks    every host check of measurement.md: value, recommendation, status, why
  facts     what a run records about its host (identity facts and the checks)
  state     the values saved before `host tune --apply`, written atomically in the pgrig home
  tune      planning, applying and restoring the knobs
"""
