# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3

.PHONY: setup demo test unit lint format bench

setup:
	bash scripts/setup.sh

demo: setup
	bash scripts/demo.sh

# The files holding the tests marked quiet_host (tests/unit/test_test_layout.py keeps the list
# whole): their tier collects these alone, not the whole suite (about 12 CPU-s).
QUIET_HOST_FILES = tests/integration/test_run_series.py tests/integration/test_busy_host_pg.py

test:
	PGRIG_WITH_BROWSER=1 bash scripts/setup.sh
	# The tests start `pgrig` thousands of times: give them bytecode to load, as an installed
	# package has (with PYTHONDONTWRITEBYTECODE set, every start would compile all of pgrig).
	$(PYTHON) -m compileall -q src
	$(PYTHON) -m ruff check src tests bench scripts
	$(PYTHON) -m ruff format --check src tests bench scripts
	# mypy on one core and, on the other, one collection of the suite that writes pytest's
	# rewritten test modules: with PYTHONDONTWRITEBYTECODE set, each of the four workers would
	# rewrite every module itself (measured: 46 CPU-s and 23.5 s at the tier's start, against
	# 18 CPU-s and 9.5 s reading what this one wrote)
	$(PYTHON) -m mypy & mypy=$$!; \
	env -u PYTHONDONTWRITEBYTECODE $(PYTHON) -m pytest -q -p no:cacheprovider --collect-only \
	    >/dev/null || { echo "the suite does not collect: see pytest --collect-only"; \
	                    kill $$mypy; exit 1; }; \
	wait $$mypy
	# Most tests wait on real servers and pgbench runs: four at a time. The few that judge the
	# host's noise (drift, verdicts, the busy-host warning) then run alone on a quiet host.
	$(PYTHON) -m pytest -q -rs -p no:cacheprovider -n 4 --dist loadfile -m "not quiet_host" --durations=40
	$(PYTHON) -m pytest -q -rs -p no:cacheprovider -m quiet_host --durations=10 $(QUIET_HOST_FILES)

# The fast tier: no servers, no pgbench (seconds, not minutes).
unit:
	$(PYTHON) -m pytest -q -p no:cacheprovider -n 2 tests/unit

lint:
	$(PYTHON) -m ruff check src tests bench scripts
	$(PYTHON) -m ruff format --check src tests bench scripts
	$(PYTHON) -m mypy

format:
	$(PYTHON) -m ruff format src tests bench scripts
	$(PYTHON) -m ruff check --fix src tests bench scripts
