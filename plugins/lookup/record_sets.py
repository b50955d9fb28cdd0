# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: record_sets
author: diskproof maintainers (@diskproof)
version_added: 0.2.0
short_description: Read and check the record sets (report.json files) of runs to merge into one fleet verdict
description:
  - Reads every C(report.json) named by the terms (files, directories holding one, or glob patterns of
    either), checks each is a record set this collection can replay - report schema 1 or 2, written by the
    same major version of diskproof.fleet, a hosts section with each host's status and problems, and as many
    records per host as that section counts - and returns one entry per host.
  - A host in two record sets is refused, naming both files - the slices of a sliced job, and the sites of a
    fleet, hold disjoint hosts. Names are compared as M(ansible.builtin.add_host) will make them (C(n07:22) is host
    C(n07), port 22), and a name add_host would change is refused - the report callback never writes one.
  - A record set larger than O(max_bytes) is refused before it is read.
  - Every problem of every file is listed in one error, before any host is replayed.
  - C(playbooks/merge.yml) adds each returned host to the inventory with its entry, and
    M(diskproof.fleet.replay_records) replays it through the report callback, which judges the whole fleet once.
  - Runs on the controller, where the files are; reads them only.
options:
  _terms:
    description:
      - report.json files, directories holding one, or glob patterns (for example C(slices/*/report.json)); lists
        of them are flattened.
    type: list
    elements: str
    required: true
  max_bytes:
    description:
      - The largest record set read, in bytes - indexing one takes about 8 times its size in memory.
        C(playbooks/merge.yml) passes C(diskproof_record_sets_max_bytes).
    type: int
    default: 134217728
seealso:
  - module: diskproof.fleet.replay_records
"""

EXAMPLES = r"""
- name: Every host of three slices' reports
  ansible.builtin.debug:
    msg: "{{ query('diskproof.fleet.record_sets', 'slice1/report.json', 'slice2', 'site-b/*/report.json') }}"
"""

RETURN = r"""
_raw:
  description:
    - One entry per host, sorted by host - C(host), C(source) (the report.json), C(status) (ok, failed,
      unreachable), C(problems) (each C(task), C(status), C(message)), C(records) (how many), and what
      M(diskproof.fleet.replay_records) needs to read them back - C(identity) (device, inode, size, modification and
      change time - the file must not change in between), C(spans) (byte ranges of the host's results),
      C(collection_version); and C(sha256), the record set's digest (a merge publishes it to the report store).
  type: list
  elements: dict
"""

import os

from ansible.errors import AnsibleError, AnsibleLookupError
from ansible.parsing.utils.addresses import parse_address
from ansible.plugins.lookup import LookupBase
from ansible_collections.diskproof.fleet.plugins.plugin_utils import _record_sets

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def add_host_name(name):
    """The inventory name ansible.builtin.add_host gives ``name``: what parse_address keeps of it (a ':port'
    suffix goes to ansible_ssh_port), or the name as given when it is no address (add_host's own fallback)."""
    try:
        host, _port = parse_address(name, allow_ranges=False)
    except AnsibleError:
        return name
    return host


class LookupModule(LookupBase):
    """Host entries of every record set given."""

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        specs = []
        pending = list(terms)
        while pending:  # lists of lists (a variable per slice, each a path or a list of them) flattened, in order
            term = pending.pop(0)
            if isinstance(term, (list, tuple)):
                pending[0:0] = list(term)
            else:
                specs.append(term)
        try:
            paths = _record_sets.record_set_files(specs)
            return _record_sets.index_record_sets(paths, _record_sets.collection_version(COLLECTION_ROOT),
                                                  inventory_name=add_host_name, max_bytes=self.get_option("max_bytes"))
        except _record_sets.RecordSetError as exc:
            raise AnsibleLookupError(str(exc)) from exc
