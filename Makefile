# hierbench: `make test` and `make demo` set everything up on a fresh machine first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Shared libraries that the wheels of Open3D and VTK (PyVista) load, and Mesa's
# software renderer for headless EGL / OSMesa rendering.
DEB_PACKAGES := libusb-1.0-0 libgomp1 libegl1 libgl1 libgl1-mesa-dri libosmesa6

.PHONY: setup test test-all demo bench clean

setup: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "note: Boxhead needs the Debian packages$$missing (install them as root)"; fi; \
	fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[tf,dev,boxhead,beam,fast]"
	touch $(STAMP)

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

test-all: setup
	$(BIN)/python -m pytest -q -m ""

demo: setup
	$(BIN)/hierbench run

bench: setup
	$(BIN)/python -m benchmarks.generation
	$(BIN)/python -m benchmarks.metrics_speed
	$(BIN)/python -m benchmarks.dci_backends
	$(BIN)/python -m benchmarks.mimosa_speed
	$(BIN)/python -m benchmarks.boxhead_speed
	$(BIN)/python -m benchmarks.models_throughput

clean:
	rm -rf $(VENV) build *.egg-info
