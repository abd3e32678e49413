# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev,integration,langgraph,llamaindex]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 COLUMNS=$${COLUMNS:-120} $(VENV)/bin/toolsift demo

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/toolsift bench all

clean:
	rm -rf $(VENV) build *.egg-info
