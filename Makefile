# diskproof: every set-up step lives here, so a fresh Debian 12 machine (as root) needs only
#   make demo   # install, bring up the 6-host lab rack, validate it, print the report, tear down
#   make test   # install, lint, sanity, unit tests, molecule scenarios against the lab
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
export PATH := $(BIN):$(PATH)
COLLECTION_LINK := .ansible/collections/ansible_collections/diskproof/fleet
# Outside the checkout: inside it, ansible-test would see only files git tracks there (none).
SANITY_ROOT := /tmp/diskproof-sanity/ansible_collections/diskproof/fleet
ANSIBLE_TEST_PIP_STANDIN := $(HOME)/.ansible/test/cache/get_pip_24_2.py

# Debian packages: the benchmark tools, what the lab needs (sshd, namespaces, loop devices,
# ext4, systemd-nspawn for its systemd hosts), udevadm for the evidence bundle (a minimal Debian
# 12 lacks it), what the venv needs, and Chromium for the report.html test.
APT_PACKAGES := openssh-server openssh-client fio sysbench bonnie++ ioping smartmontools cron \
	iproute2 util-linux fdisk e2fsprogs nvme-cli udev coreutils python3 python3-venv rsync git \
	systemd-container chromium

DEMO_SPEC := lab/rack6.yml
DEMO_LAB := rack6
REPORT_DIR := $(CURDIR)/diskproof-report

.PHONY: help deps apt venv collection demo test lint sanity units integration package molecule clean

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
	fi

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

test: deps lint sanity units integration package molecule
	@echo "make test: all passed"

lint: deps
	yamllint --strict .
	ansible-lint --profile production

# ansible-test wants the collection at a path ending in ansible_collections/diskproof/fleet and
# downloads a pip bootstrap script this machine cannot reach: copy the tree, use the stand-in.
sanity: deps
	mkdir -p "$(dir $(ANSIBLE_TEST_PIP_STANDIN))"
	cp tools/get_pip_offline.py "$(ANSIBLE_TEST_PIP_STANDIN)"
	rm -rf "$(SANITY_ROOT)" && mkdir -p "$(SANITY_ROOT)"
	git ls-files --cached --others --exclude-standard -z | rsync -a --from0 --files-from=- ./ "$(SANITY_ROOT)/"
	cd "$(SANITY_ROOT)" && ansible-test sanity --local --python 3.11 --color no

units: deps
	pytest -q tests/unit

# Real devices, real ansible-playbook runs; they build and remove their own loop devices and labs.
integration: deps
	pytest -q --durations=0 tests/integration

# The tarball users install: build it, install it into an empty path, render the plugin docs.
package: deps
	rm -rf .cache/package && mkdir -p .cache/package/collections
	ansible-galaxy collection build --force --output-path .cache/package .
	ansible-galaxy collection install --force -p .cache/package/collections .cache/package/diskproof-fleet-*.tar.gz
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc diskproof.fleet.bench_facts >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t callback diskproof.fleet.report >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t role diskproof.fleet.benchmark >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc diskproof.fleet.disk_facts >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc diskproof.fleet.quiesce >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t lookup diskproof.fleet.controller_run >/dev/null
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.cache/package/collections ansible-doc -t lookup diskproof.fleet.report_inputs >/dev/null
	@echo "package: built, installed and documented: $$(ls .cache/package/*.tar.gz)"
	# The AWX execution environment: ansible-builder writes its build context (no container engine).
	rm -rf .cache/ee
	ansible-builder create -f execution-environment.yml --context .cache/ee --output-filename Containerfile
	grep -q 'ansible-galaxy collection install' .cache/ee/Containerfile
	test -f .cache/ee/_build/collections/diskproof-fleet-$$(awk '/^version:/ {print $$2}' galaxy.yml).tar.gz
	@echo "package: execution environment build context in .cache/ee"

molecule: deps
	molecule test --all

clean:
	rm -rf .cache .pytest_cache diskproof-report
