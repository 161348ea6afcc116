# Set up a local virtual environment on first use; every target below reuses it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: bytecode run lint test tests test-slow screenshots benchmark train evaluate clean

# The install (scripts/install_venv.sh): uv, which pip fetches into the venv, installs the project editable with
# its dev extras (about 20 s from a fresh clone where pip took 60-80 s; pip still installs where uv cannot), then
# compiles the bytecode of advisor, tui and the installed packages (less their own test folders).
$(STAMP): pyproject.toml scripts/install_venv.sh
	scripts/install_venv.sh $(PYTHON) $(VENV)
	touch $(STAMP)

# Recompile what changed since install (cheap when nothing did), so runs never pay for compiling.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q advisor tui

run: $(STAMP) bytecode
	$(BIN)/gpu-advisor

# The lint and type gate: style and bugs (ruff), formatting (ruff format), types of the core and the UI (mypy,
# every function annotated), the architecture contracts (lint-imports: stages import only downward; the core
# never imports the UI), the size of every function in advisor/ and tui/ (check_complexity: at most 60
# lines, cyclomatic complexity 20), and no dead code in them (check_dead_code: vulture, uses read from the
# whole checkout, Textual's hooks whitelisted).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy advisor tui
	$(BIN)/lint-imports
	$(BIN)/python scripts/check_complexity.py
	$(BIN)/python scripts/check_dead_code.py

# The suite on TEST_WORKERS processes (pytest-xdist). Three on the 2-core reference machine: many UI tests wait
# on the terminal rather than compute, and a third worker computes meanwhile (234 s against 265 s with two).
# loadgroup: tests marked xdist_group (the wheel build) stay on one worker.
TEST_WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

# The gate and the suite side by side (make -j2): the gate's single-process steps fill the cores the test
# workers leave idle, so `make test` takes about the suite's time; it fails when either fails.
test: $(STAMP)
	@$(MAKE) --no-print-directory -j2 lint tests

tests: $(STAMP)
	$(PYTEST)

# The same suite at full scale: more property examples, more parallel calibrate writers
# (GPU_ADVISOR_SLOW_TESTS, read by tests/scale.py).
test-slow: lint
	GPU_ADVISOR_SLOW_TESTS=1 $(PYTEST)

screenshots: $(STAMP)
	$(BIN)/python scripts/make_screenshots.py

benchmark: $(STAMP) bytecode
	$(BIN)/python benchmarks/bench_recommend.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_fleet.py
	$(BIN)/python benchmarks/bench_first_frame.py

train: $(STAMP)
	$(BIN)/gpu-advisor model train
	$(BIN)/python -m advisor.learned.serving.train

evaluate: $(STAMP)
	$(BIN)/gpu-advisor model evaluate
	$(BIN)/python benchmarks/bench_accuracy.py

clean:
	rm -rf $(VENV) build dist *.egg-info
