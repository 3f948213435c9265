# The two commands of the README: `make demo` and `make test` (the full suite, what CI runs).
# Both create .venv with the project installed; `make test` adds the test and parity extras.
# `make test-fast`: the edit-test loop, every test that takes seconds (not marked slow or heavy), with the test extra
# only (the parity extra's torch and transformers are for tests that skip without them).
# `make test` runs TEST_WORKERS pytest processes (pytest-xdist), each taking whole test files in conftest's
# LONGEST_FIRST order (--no-loadscope-reorder keeps it): most slow tests spend
# their time starting Python and TensorFlow in subprocesses, one core's work, so two workers on two cores nearly
# halve the suite's time. TEST_WORKERS=0 runs it in one process.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
TEST_WORKERS ?= 2
BIN := $(VENV)/bin
export PYTHONHASHSEED ?= 0

.PHONY: demo test test-fast coverage lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=24"

$(VENV)/.installed-base: setup.py $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: setup.py $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test,parity]"
	touch $@ $(VENV)/.installed-test-only $(VENV)/.installed-base

# test-fast needs no reference implementations (torch, transformers, keras-hub): their tests skip without them.
$(VENV)/.installed-test-only: setup.py $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	$(BIN)/python -m albert_tf.demo $(DEMO_ARGS)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS) tests

test-fast: $(VENV)/.installed-test-only
	$(BIN)/python -m pytest -q -m "not slow and not heavy" -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		$(PYTEST_ARGS) tests

# `make coverage`: the suite as `make test` runs it, under coverage.py (pyproject.toml [tool.coverage]: every Python
# process the tests start is measured too), then the line coverage of albert_tf/ per file and in total.
coverage: $(VENV)/.installed-test
	rm -f .coverage .coverage.*
	COVERAGE_FILE=$(CURDIR)/.coverage $(BIN)/python -m coverage run -m pytest -q -n $(TEST_WORKERS) --dist loadfile \
		--no-loadscope-reorder $(PYTEST_ARGS) tests; status=$$?; \
		COVERAGE_FILE=$(CURDIR)/.coverage $(BIN)/python -m coverage combine -q \
		&& COVERAGE_FILE=$(CURDIR)/.coverage $(BIN)/python -m coverage report --format=total \
		&& COVERAGE_FILE=$(CURDIR)/.coverage $(BIN)/python -m coverage report > coverage.txt; exit $$status

lint: $(VENV)/.installed-test-only
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
