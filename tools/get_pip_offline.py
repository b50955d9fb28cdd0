"""Offline stand-in for the get-pip.py script that ansible-test downloads.

ansible-test sanity bootstraps pip in its virtual environments by downloading get-pip.py from a
host this machine cannot reach. This stand-in does the same job with what Python ships: ensurepip
for pip itself, then a normal ``pip install`` of the packages ansible-test asked for (from the
package registry, which is reachable).
"""
from __future__ import annotations

import subprocess
import sys

# get-pip.py options that plain pip does not understand.
GET_PIP_ONLY_OPTIONS = {"--no-setuptools", "--no-wheel"}


def main() -> int:
    pip_arguments = [argument for argument in sys.argv[1:] if argument not in GET_PIP_ONLY_OPTIONS]
    subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", *pip_arguments], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
