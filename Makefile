# Two entry points for a newcomer: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP_RUNTIME := $(VENV)/.runtime-installed
STAMP_TEST := $(VENV)/.test-installed

.PHONY: demo test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUNTIME): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(STAMP_RUNTIME)

# Check the bundled training scripts and show what the fixes would change.
demo: $(STAMP_RUNTIME)
	@echo "== fabric-lsp check fixtures/examples"
	@$(BIN)/fabric-lsp check --exit-zero fixtures/examples
	@echo
	@echo "== fabric-lsp check --diff --unsafe-fixes fixtures/examples  (what --fix would change)"
	@$(BIN)/fabric-lsp check --diff --unsafe-fixes fixtures/examples || true
	@echo
	@echo "== fabric-lsp explain FAB001"
	@$(BIN)/fabric-lsp explain FAB001 | head -n 25

test: $(STAMP_TEST)
	$(BIN)/python -m pytest -n 2 -q

clean:
	rm -rf $(VENV) .pytest_cache
