# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only module: returns its input as ansible_facts.diskproof_results, like bench_run does."""
from __future__ import annotations

DOCUMENTATION = r"""
module: emit_records
short_description: Test double that returns given records as ansible_facts.diskproof_results
description:
  - Used only by the callback tests to feed diskproof.fleet.report with records of the result schema.
options:
  records:
    description: Records returned unchanged under C(ansible_facts.diskproof_results).
    type: list
    elements: dict
    required: true
  fail_msg:
    description: When set, the task fails with this message and still returns the records.
    type: str
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "records": {"type": "list", "elements": "dict", "required": True},
            "fail_msg": {"type": "str"},
        },
        supports_check_mode=True,
    )
    facts = {"diskproof_results": module.params["records"]}
    if module.params["fail_msg"]:
        module.fail_json(msg=module.params["fail_msg"], ansible_facts=facts)
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
