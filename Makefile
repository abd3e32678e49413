# The two set-up commands of the README: `make demo` and `make test`.
# `make demo` installs the run-time set only (`pip install toolsift`: no torch, no test tools);
# `make test` and `make install` add every extra the suite needs (dev, integration, train, bench,
# langgraph, llamaindex).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
RUN    := $(VENV)/.installed-run
STAMP  := $(VENV)/.installed

.PHONY: demo test bench install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUN): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e .
	touch $(RUN)

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev,integration,train,bench,langgraph,llamaindex]'
	touch $(STAMP) $(RUN)

install: $(STAMP)

demo: $(RUN)
	HF_HUB_OFFLINE=1 COLUMNS=$${COLUMNS:-120} $(VENV)/bin/toolsift demo

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/toolsift bench all

clean:
	rm -rf $(VENV) build *.egg-info
