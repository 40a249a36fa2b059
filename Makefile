# Two commands do all set-up on a fresh machine with Python 3.11 and make:
#   make run    the main job (the runner on its embedded default: a local Dask cluster)
#   make test   lint and types (make lint), then the test suite, with the Debian packages it starts programs from
#               (scripts/system-packages.toml), the pinned upstream artifacts (fetched,
#               sha256-verified) and the offline stand-ins it needs (vcsim, Kubernetes 1.33 for
#               the current stacks and 1.20 for the paper's, Helm 3, Prometheus' promtool), built into
#               $(DASK_TKG__CACHE), outside the repository.
PYTHON ?= python3.11
export PYTHON
VENV   ?= .venv
PY     := $(VENV)/bin/python
export DASK_TKG__CACHE ?= $(HOME)/.cache/dask-tkg

.PHONY: run test lint system-packages stand-ins default-image-env worker-wheels bench clean-venv

$(VENV)/.installed: requirements.txt
	$(PYTHON) scripts/install_system_packages.py --for Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	ln -sf $(CURDIR)/scripts/dask-tkg $(VENV)/bin/dask-tkg
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed requirements-test.txt
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-test.txt
	touch $@

run: $(VENV)/.installed
	$(PY) -m workloads.run $(ARGS)

system-packages:
	$(PYTHON) scripts/install_system_packages.py

stand-ins: system-packages
	$(PYTHON) scripts/fetch_artifacts.py
	scripts/build_vcsim.sh
	scripts/build_kube_current.sh
	scripts/build_kube_apiserver.sh
	scripts/build_kube_node.sh
	scripts/build_promtool.sh
	scripts/install_helm.sh

# the default Dask image's Python environment for tests/cluster/test_default_image.py (pip, into the cache)
default-image-env: $(VENV)/.test-installed
	$(PY) scripts/build_default_image_env.py

# the prepared environment's CPU wheels for tests/cluster/test_prepared_environment.py's package
# index (pip download --require-hashes of components/dask/environment/worker-cpu.lock, into the cache)
worker-wheels: $(VENV)/.test-installed
	$(PY) scripts/fetch_worker_wheels.py

# ruff and mypy over the code that ships (rules and why: pyproject.toml [tool.ruff], [tool.mypy])
lint: $(VENV)/.test-installed
	$(PY) -m ruff check
	$(PY) -m mypy

test: system-packages $(VENV)/.test-installed lint stand-ins default-image-env worker-wheels
	$(PY) -m pytest $(ARGS)

bench: $(VENV)/.installed
	$(PY) -m bench --output docs/results $(ARGS)

clean-venv:
	rm -rf $(VENV)
