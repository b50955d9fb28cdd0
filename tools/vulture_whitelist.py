# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names vulture cannot see used: Ansible, the standard library and pytest call them by name.

`make lint` runs vulture over plugins, tools, benchmarks and tests/unit with this file
(vulture only parses it: every name below counts as used). Add a name here only when a framework
calls it; a function nobody calls is dead code: delete it.
"""
# pylint: disable=pointless-statement

# vulture counts a name as used wherever it appears, an attribute of anything included.
framework = object()

# Ansible: plugin classes, documentation and class attributes found by name.
framework.ActionModule
framework.CallbackModule
framework.FilterModule
framework.LookupModule
framework.ModuleDocFragment
framework.DOCUMENTATION
framework.EXAMPLES
framework.RETURN
framework.FACTS
framework.FACTS_MODULE
framework.DEPRECATED
framework.TRANSFERS_FILES
framework.CALLBACK_VERSION
framework.CALLBACK_TYPE
framework.CALLBACK_NEEDS_ENABLED
framework.filters
# Connection plugins (benchmarks/connection_plugins): the class and the methods and flags ConnectionBase calls.
framework.Connection
framework.has_pipelining
framework.always_pipeline_modules
framework._connect
framework._connected
framework.put_file
framework.fetch_file

# Ansible callback events and the arguments their signatures must accept.
framework.v2_playbook_on_start
framework.v2_playbook_on_play_start
framework.v2_playbook_on_task_start
framework.v2_playbook_on_stats
framework.v2_runner_on_start
framework.v2_runner_on_ok
framework.v2_runner_on_failed
framework.v2_runner_on_skipped
framework.v2_runner_on_unreachable
framework.v2_runner_item_on_ok
framework.v2_runner_item_on_failed
framework.is_conditional
framework.ignore_errors
# A lookup's run(terms, variables, **kwargs): a lookup that takes no terms still accepts them.
framework.terms
framework.stats

# benchmarks/callback_scale.py: stand-ins for ansible-core's TaskResult, Task, Play and plugin
# loader objects, read by the callback and by ansible-core under these names.
framework._task_fields
framework.task_fields
framework.task_name
framework.is_changed
framework.is_failed
framework.is_unreachable
framework.is_skipped
framework._basedir
framework.get_plays
framework.loop_control
framework._original_path
framework._redirected_names
framework.ansible_aliases
framework.ansible_name

# Standard library protocols: tarfile.TarInfo fields, configparser, html.parser.HTMLParser.
framework.gname
framework.optionxform
framework.handle_starttag
framework.handle_startendtag
framework.handle_endtag
framework.handle_data

# pytest: hooks, module marks, and fixtures a test requests only for their side effect.
framework.pytest_configure
framework.pytest_collection_modifyitems
framework.pytestmark
framework.no_earlier_deprecations
framework.sata_disk
