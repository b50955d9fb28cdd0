"""/etc/os-release: which distribution."""
from __future__ import annotations

from ansible_collections.diskproof.fleet.plugins.module_utils._parse.os_release import parse_os_release


def test_os_release():
    release = parse_os_release('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\n'
                               'VERSION_ID="12"\nVERSION_CODENAME=bookworm\nID=debian\n')
    assert release == {"id": "debian", "version_id": "12", "name": "Debian GNU/Linux",
                       "pretty_name": "Debian GNU/Linux 12 (bookworm)", "version_codename": "bookworm"}
