# netcfg developer entry points. `make demo` and `make test` set up everything
# they need (a venv in .venv; Debian packages when run as root on Debian).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
NETCFG := $(VENV)/bin/netcfg
STAMP  := $(VENV)/.installed-stamp
EXAMPLE ?= templates/examples/tenants.tmpl

.PHONY: all venv deps test test-unit demo bench bench-compile clean

all: test

# Debian packages the tests and benchmarks use; installed only when missing.
DEB_PACKAGES := iproute2 ifupdown2 python3-mako
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "missing Debian packages (install them as root): $$missing"; fi; \
	fi

$(STAMP): setup.cfg pyproject.toml
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
	  echo "python3 -m venv failed; installing python3-venv"; \
	  apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

venv: $(STAMP)

test: deps venv
	$(PY) -m pytest -q tests/unit tests/golden

test-unit: venv
	$(PY) -m pytest -q tests/unit tests/golden

demo: venv
	@echo "== render: $(EXAMPLE)"; $(NETCFG) render -c $(EXAMPLE) | head -40; echo "   ..."
	@echo; echo "== check"; $(NETCFG) check -c $(EXAMPLE)
	@echo; echo "== plan"; $(NETCFG) plan -c $(EXAMPLE) | head -60
	@echo; echo "== lowering on the per-VLAN bridge example"
	@$(NETCFG) plan -c templates/examples/per-vlan-bridges.tmpl | sed -n '1,/^batch/p'

bench: bench-compile

bench-compile: deps venv
	$(PY) bench/compile/run.py --netcfg $(NETCFG)

clean:
	rm -rf $(VENV) build *.egg-info bench/out .pytest_cache .hypothesis
