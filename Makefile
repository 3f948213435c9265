# The two commands of the README: `make demo` and `make test`.
# Both create .venv with the project installed; `make test` adds the test and parity extras.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export PYTHONHASHSEED ?= 0

.PHONY: demo test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=24"

$(VENV)/.installed-base: setup.py $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: setup.py $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test,parity]"
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	$(BIN)/python -m albert_tf.demo $(DEMO_ARGS)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q $(PYTEST_ARGS) tests

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
