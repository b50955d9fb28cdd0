# diskproof: every set-up step lives here, so a fresh Debian 12 machine (as root) needs only
#   make demo   # install, bring up the 6-host lab rack, validate it, print the report, tear down
#   make test   # install, lint, sanity, unit tests, molecule scenarios against the lab
# Everything it writes stays in the checkout (.ansible/, .cache/) or under /tmp: tools/check-writes
# proves it at the end of `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
export PATH := $(BIN):$(PATH)
COLLECTION_LINK := .ansible/collections/ansible_collections/diskproof/fleet
CACHE := $(CURDIR)/.cache

# Keep every tool's state out of root's home. ANSIBLE_HOME moves ansible's tmp/, cp/ (ssh control
# sockets) and galaxy_cache/ here; molecule (ansible-compat) installs the collection into
# $$ANSIBLE_HOME/collections, where it finds the checkout's own symlink and skips the copy it would
# otherwise leave in ~/.ansible/collections. pip, ansible-lint and molecule cache under XDG_CACHE_HOME.
export ANSIBLE_HOME := $(CURDIR)/.ansible
# remote_tmp stays ~/.ansible/tmp whatever ANSIBLE_HOME says, and tasks on localhost (the judge play,
# the evidence checks, the report store) use it on this machine: /tmp instead (lab hosts get their own /tmp).
export ANSIBLE_REMOTE_TMP := /tmp/diskproof-ansible-remote-tmp
# The ssh plugin's control_path_dir defaults to ~/.ansible/cp whatever ANSIBLE_HOME says (ansible-core
# 2.19's ssh.py): the lab runs' ssh control sockets go under the checkout too.
export ANSIBLE_SSH_CONTROL_PATH_DIR := $(CURDIR)/.ansible/cp
export XDG_CACHE_HOME := $(CACHE)/xdg
export PIP_CACHE_DIR := $(CACHE)/pip
# ansible-test reads ~ itself (~/.ansible/test: the pip stand-in, its sanity venvs): give it a home
# in /tmp, so its sanity venvs (about 1 min to build per core) outlive the clean clone of each CI run.
ANSIBLE_TEST_HOME := /tmp/diskproof-ansible-test-home
# The pip each ansible-test bootstraps into its sanity venvs: 24.2 (core 2.18, 2.19), 23.1.2 (2.17).
ANSIBLE_TEST_PIP_VERSIONS := 24_2 23_1_2
WRITES_STAMP := $(CACHE)/writes.stamp

# Outside the checkout: inside it, ansible-test would see only files git tracks there (none).
SANITY_TOP := /tmp/diskproof-sanity
SANITY_ROOT := $(SANITY_TOP)/ansible_collections/diskproof/fleet

# The ansible-core versions meta/runtime.yml claims besides the venv's own (2.19): on each, the unit
# tests whose outcome goes through ansible-core: the callback, lookups, filters and the action plugin
# in real ansible-playbook runs, role templates and argument specs (Templar, playbooks), the modules'
# AnsibleModule (options, check mode, results, warnings), play_forks (CLI context); sanity on the
# oldest. What runs on plain Python once ansible-core has handed over runs once, on 2.19: module_utils,
# parsers, plugin_utils, the fio template (plain Jinja2), and bench_run's runs of real tools and its
# signal handling (test_bench_run_runner.py, test_bench_run_cancel.py). docs/tests.md, "Core-version
# matrix", has the times this choice rests on.
MATRIX_CORES := 2.17.14 2.18.19
MATRIX_SANITY_CORE := 2.17.14
MATRIX_UNIT_TESTS := $(wildcard tests/unit/plugins/action tests/unit/plugins/callback tests/unit/plugins/filter \
	tests/unit/plugins/lookup tests/unit/plugins/modules tests/unit/roles tests/unit/plugins/plugin_utils/test_fleet_waves.py)
MATRIX_UNIT_IGNORE := tests/unit/plugins/modules/test_bench_run_runner.py tests/unit/plugins/modules/test_bench_run_cancel.py \
	tests/unit/roles/test_fio_template.py

# Debian packages: the benchmark tools, what the lab needs (sshd, namespaces, loop devices,
# ext4, systemd-nspawn for its systemd hosts), udevadm for the evidence bundle (a minimal Debian
# 12 lacks it), what the venv needs, and Chromium for the report.html test.
APT_PACKAGES := openssh-server openssh-client fio sysbench bonnie++ ioping smartmontools cron \
	iproute2 util-linux fdisk e2fsprogs nvme-cli udev coreutils python3 python3-venv rsync git \
	systemd-container chromium

DEMO_SPEC := lab/rack6.yml
DEMO_LAB := rack6
REPORT_DIR := $(CURDIR)/diskproof-report

.PHONY: help deps apt venv collection demo test lint sanity units integration integration-shared integration-alone \
	package molecule clean \
	matrix matrix-units matrix-sanity matrix-venvs writes-stamp check-writes

help:
	@echo "make demo   install what is needed, validate the 6-host lab rack, print the report ($(REPORT_DIR))"
	@echo "make test   install what is needed, then lint, sanity, unit tests and molecule"

deps: apt venv collection

# Installs only what is missing, so a second run costs a second.
apt:
	@missing=""; for package in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' "$$package" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "apt: installing$$missing"; \
		apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi; \
	fc-cache -s   # the system font cache, which chromium's first start would write during make test (check-writes)

venv: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv "$(VENV)"
	"$(BIN)/pip" install -q --disable-pip-version-check -r requirements-dev.txt
	touch "$@"

# Playbooks and tests find the checkout as the collection diskproof.fleet through this link.
collection: $(COLLECTION_LINK)
$(COLLECTION_LINK):
	mkdir -p "$(dir $@)"
	ln -sfn ../../../.. "$@"

demo: deps
	tools/demo "$(DEMO_SPEC)" "$(DEMO_LAB)" "$(REPORT_DIR)"

# The stages of `make test`, timed (tools/ci-stages: each stage's output whole when it ends, then a table of every
# stage and the end of each failed one's log). Phases run one after the other, lanes (|) side by side: first what
# needs only the two cores, in two lanes; then the integration test files side by side (their labs mostly wait on
# throttled disks); then what measures the machine's page cache and so runs with no other lab up: the integration
# files marked alone, and molecule (its verify holds buffered writes to the lab's speeds); check-writes last.
# docs/tests.md, "make test", has the times this order rests on.
CI_PHASES := "units lint package | sanity matrix" "integration-shared" "integration-alone molecule" "check-writes"
test: deps writes-stamp
	@MAKE="$(MAKE)" tools/ci-stages "$(CACHE)/stages" $(CI_PHASES)

# After deps (apt installs system packages on purpose): from here on only the checkout and /tmp.
writes-stamp:
	mkdir -p "$(CACHE)" && touch "$(WRITES_STAMP)"

check-writes:
	tools/check-writes "$(WRITES_STAMP)"

lint: deps
	yamllint --strict .
	ansible-lint --profile production
	# Each role's argument_specs and defaults/main.yml say the same (names, defaults).
	tools/lint-argument-specs
	# What Galaxy and the docsite render: every plugin and role documented, every reference valid.
	antsibull-docs --config-file tools/antsibull.cfg lint-collection-docs --plugin-docs \
		--validate-collection-refs dependent --disallow-unknown-collection-refs .
	# Dead code fails: a function, class or constant nothing uses (tools/vulture_whitelist.py names what frameworks call).
	vulture plugins benchmarks tests/unit tools/*.py tools/labkit --min-confidence 60 --ignore-decorators "@pytest.fixture"

# ansible-test wants the collection at a path ending in ansible_collections/diskproof/fleet and
# downloads a pip bootstrap script this machine cannot reach: copy the tree, use the stand-in.
# $(1): directory of the ansible-test to run (the venv's, or a matrix venv's).
define run_sanity
	mkdir -p "$(ANSIBLE_TEST_HOME)/.ansible/test/cache"
	for version in $(ANSIBLE_TEST_PIP_VERSIONS); do \
		cp tools/get_pip_offline.py "$(ANSIBLE_TEST_HOME)/.ansible/test/cache/get_pip_$$version.py"; done
	rm -rf "$(SANITY_ROOT)" && mkdir -p "$(SANITY_ROOT)"
	git ls-files --cached --others --exclude-standard -z | rsync -a --from0 --files-from=- ./ "$(SANITY_ROOT)/"
	cd "$(SANITY_ROOT)" && HOME="$(ANSIBLE_TEST_HOME)" "$(1)/ansible-test" sanity --local --python 3.11 --color no
endef

sanity: deps
	$(call run_sanity,$(BIN))

# Only the venv: no root, no apt packages, no browser (tests that need them skip, saying why: docs/tests.md).
units: venv collection
	pytest -q tests/unit

# One venv per claimed ansible-core under .cache/core-X.Y: that core plus the unit tests' packages at
# the versions requirements-dev.txt pins (resolvelib excepted: each core pins its own range).
matrix-venvs: $(foreach core,$(MATRIX_CORES),$(CACHE)/core-$(basename $(core))/.installed)
$(CACHE)/core-%/.installed: requirements-dev.txt
	rm -rf "$(dir $@)" && $(PYTHON) -m venv "$(dir $@)"
	grep -viE '^(ansible-core|resolvelib)==' requirements-dev.txt > "$(dir $@)constraints.txt"
	"$(dir $@)bin/pip" install -q --disable-pip-version-check -c "$(dir $@)constraints.txt" \
		"ansible-core==$(filter $*.%,$(MATRIX_CORES))" pytest pytest-xdist hypothesis lxml jsonschema PyYAML
	touch "$@"

# The ansible-facing unit tests on every older core the collection claims, and sanity on the oldest.
matrix: matrix-units matrix-sanity

# The cores side by side (none of these tests watches what the whole machine does: the disk's counters and /tmp are
# test_bench_run_runner.py's), each one's output printed whole when both are done.
matrix-units: deps matrix-venvs
	@for core in $(MATRIX_CORES); do \
		( start=$$(date +%s); rc=0; "$(CACHE)/core-$${core%.*}/bin/python" -m pytest -q -p no:cacheprovider \
			$(addprefix --ignore=,$(MATRIX_UNIT_IGNORE)) $(MATRIX_UNIT_TESTS) > "$(CACHE)/matrix-$$core.log" 2>&1 || rc=$$?; \
		  echo "$$rc $$(( $$(date +%s) - start ))" > "$(CACHE)/matrix-$$core.result" ) & \
	done; wait; \
	failed=""; for core in $(MATRIX_CORES); do \
		read -r rc seconds < "$(CACHE)/matrix-$$core.result"; echo "matrix: unit tests on ansible-core $$core"; \
		cat "$(CACHE)/matrix-$$core.log"; echo "matrix: ansible-core $$core units took $$seconds s"; \
		[ "$$rc" = 0 ] || failed="$$failed $$core"; \
	done; \
	if [ -n "$$failed" ]; then echo "matrix: unit tests failed on ansible-core$$failed" >&2; exit 1; fi

matrix-sanity: deps matrix-venvs
	@date +%s > "$(CACHE)/matrix-sanity.start"
	$(call run_sanity,$(CACHE)/core-$(basename $(MATRIX_SANITY_CORE))/bin)
	@echo "matrix: ansible-core $(MATRIX_SANITY_CORE) sanity took $$(( $$(date +%s) - $$(cat "$(CACHE)/matrix-sanity.start") )) s"

# Real devices, real ansible-playbook runs; they build and remove their own loop devices and labs. The test files
# run side by side, a lab each, INTEGRATION_WORKERS at a time; then those marked `alone`, one after the other
# (tests/integration/conftest.py; docs/tests.md, "Integration tests in parallel": why 4). Per-file times, lab up
# and down included: $(CACHE)/integration-*.xml.
INTEGRATION_WORKERS ?= 4
integration: deps
	@rc=0; $(MAKE) --no-print-directory integration-shared || rc=$$?; \
	$(MAKE) --no-print-directory integration-alone || rc=$$?; exit $$rc

integration-shared: deps
	pytest -q --durations=0 -n $(INTEGRATION_WORKERS) --dist loadfile --no-loadscope-reorder -m "not alone" \
		--junitxml=$(CACHE)/integration-shared.xml tests/integration

# Exit code 5: no file is marked alone.
integration-alone: deps
	pytest -q --durations=0 -m alone --junitxml=$(CACHE)/integration-alone.xml tests/integration || [ $$? -eq 5 ]

# The tarball users install: build it, install it into an empty path, render the plugin docs.
package: deps
	rm -rf .cache/package && mkdir -p .cache/package/collections
	ansible-galaxy collection build --force --output-path .cache/package .
	ansible-galaxy collection install --force -p .cache/package/collections .cache/package/diskproof-fleet-*.tar.gz
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc diskproof.fleet.bench_facts >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc diskproof.fleet.bench_run >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t callback diskproof.fleet.report >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t role diskproof.fleet.benchmark >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc diskproof.fleet.disk_facts >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc diskproof.fleet.quiesce >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t lookup diskproof.fleet.controller_run >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t lookup diskproof.fleet.report_inputs >/dev/null
	@echo "package: built, installed and documented: $$(ls .cache/package/*.tar.gz)"
	# What Galaxy / Automation Hub run on upload (offline; ansible-test is `make sanity`'s job).
	mkdir -p .cache/package/importer/tmp
	cd .cache/package/importer && GALAXY_IMPORTER_CONFIG=$(CURDIR)/tools/galaxy-importer.cfg \
		GALAXY_IMPORTER_ANSIBLE_LOCAL_TMP=$(CURDIR)/.cache/package/importer/tmp \
		GALAXY_IMPORTER_TMP_ROOT_DIR=$(CURDIR)/.cache/package/importer/tmp \
		python -m galaxy_importer.main $(CURDIR)/.cache/package/diskproof-fleet-*.tar.gz | tee importer.log
	grep -q '^Importer processing completed successfully' .cache/package/importer/importer.log
	! grep -E '^(WARNING|ERROR)' .cache/package/importer/importer.log
	# The AWX execution environment: ansible-builder writes its build context (no container engine).
	rm -rf .cache/ee
	ansible-builder create -f execution-environment.yml --context .cache/ee --output-filename Containerfile
	grep -q 'ansible-galaxy collection install' .cache/ee/Containerfile
	test -f .cache/ee/_build/collections/diskproof-fleet-$$(awk '/^version:/ {print $$2}' galaxy.yml).tar.gz
	# The EE's system packages come from the installed collection's bindep.txt, as ansible-builder's
	# build stage will read them (its introspect step): gnupg2 must be among them.
	ansible-builder introspect --sanitize .cache/package/collections | tee .cache/ee/introspect.txt
	grep -q "^- 'gnupg2 " .cache/ee/introspect.txt
	@echo "package: execution environment build context in .cache/ee"

# A failed check is printed again at the end: CI shows only the tail of a long log, and molecule's
# recap ("verify: Executed: Failed") does not say which check failed or with which figures.
molecule: deps
	molecule test --all 2>&1 | tee $(CACHE)/molecule.log || { \
		echo "molecule failed; its failed checks:"; \
		sed 's/\x1b\[[0-9;]*m//g; s/^ *│ //' $(CACHE)/molecule.log | awk ' \
			/^(ok|changed|skipping|included|TASK|PLAY)[: []/ { state = 0 } \
			/^(failed|fatal): \[/ { print; state = ($$0 ~ /"msg": / ? 0 : 1); next } \
			state == 1 && /^ *"msg": / { print; state = 2; next } \
			state == 2 { if ($$0 ~ /^ *("[a-z_]+": |[]}])/) state = 0; else print }' | cut -c1-300 | tail -n 16; \
		exit 1; }

clean:
	rm -rf .cache .pytest_cache diskproof-report
