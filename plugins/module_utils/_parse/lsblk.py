# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``lsblk -J -b -O``: the block-device tree, one node per device with its holders as children."""

from __future__ import annotations

import re
from typing import Any, Dict, List

from .errors import SourceError
from .values import as_bool, as_int, load_json, text_value

SOURCE = "lsblk JSON"

# lsblk column -> key in our node, converter.
_LSBLK_TEXT = {
    "name": "name",
    "path": "path",
    "type": "type",
    "model": "model",
    "serial": "serial",
    "wwn": "wwn",
    "rev": "rev",
    "vendor": "vendor",
    "tran": "tran",
    "sched": "scheduler",
    "fstype": "fstype",
    "pttype": "pttype",
    "uuid": "uuid",
    "label": "label",
    "partuuid": "partuuid",
    "partlabel": "partlabel",
    "hctl": "hctl",
    "subsystems": "subsystems",
}
_LSBLK_INT = {"size": "size_bytes", "log-sec": "logical_block_size", "phy-sec": "physical_block_size"}
_LSBLK_BOOL = {"rota": "rotational", "rm": "removable", "ro": "read_only"}


def _lsblk_node(raw: Any, where: str) -> Dict[str, Any]:
    if not isinstance(raw, dict):
        raise SourceError(SOURCE, "an object per block device at %s" % where, repr(raw))
    kname = text_value(raw.get("kname")) or text_value(raw.get("name"))
    if kname is None:
        raise SourceError(SOURCE, "kname or name at %s (run lsblk with -O)" % where, repr(raw)[:200])
    kname = kname.rsplit("/", 1)[-1]
    maj_min = text_value(raw.get("maj:min"))
    if maj_min is None or not re.match(r"^[0-9]+:[0-9]+$", maj_min):
        raise SourceError(SOURCE, "maj:min of %s (run lsblk with -O)" % kname, repr(raw.get("maj:min")))
    if text_value(raw.get("type")) is None:
        raise SourceError(SOURCE, "type of %s (run lsblk with -O)" % kname)
    node: Dict[str, Any] = {"kname": kname, "maj_min": maj_min}
    for column, key in _LSBLK_TEXT.items():
        node[key] = text_value(raw.get(column))
    for column, key in _LSBLK_INT.items():
        node[key] = as_int(raw.get(column), SOURCE, "%s of %s" % (column, kname))
    for column, key in _LSBLK_BOOL.items():
        node[key] = as_bool(raw.get(column), SOURCE, "%s of %s" % (column, kname))
    node["path"] = node["path"] or "/dev/" + kname
    mounts = raw.get("mountpoints")
    if mounts is None:
        mounts = [raw.get("mountpoint")]
    if not isinstance(mounts, list):
        raise SourceError(SOURCE, "a list of mountpoints for %s" % kname, repr(mounts))
    node["mountpoints"] = [str(point) for point in mounts if point]
    children = raw.get("children") or []
    if not isinstance(children, list):
        raise SourceError(SOURCE, "a list of children for %s" % kname, repr(children)[:200])
    node["children"] = [_lsblk_node(child, "%s.children[%d]" % (kname, index)) for index, child in enumerate(children)]
    return node


def parse_lsblk(text: str) -> List[Dict[str, Any]]:
    """The device tree of `lsblk -J -b -O`: top-level devices, each with its holders as children.

    Keys per node: kname, name, path, type, maj_min, size_bytes, rotational, removable, read_only,
    logical_block_size, physical_block_size, model, serial, wwn, rev, vendor, tran, scheduler, fstype,
    pttype, uuid, label, partuuid, partlabel, hctl, subsystems, mountpoints (list, swap shown as
    "[SWAP]"), children. Strings are stripped, blanks are None; old lsblk's "0"/"1" become booleans.
    """
    data = load_json(text, SOURCE)
    if not isinstance(data, dict) or not isinstance(data.get("blockdevices"), list):
        raise SourceError(SOURCE, 'an object with a "blockdevices" list', text.strip()[:200])
    return [_lsblk_node(raw, "blockdevices[%d]" % index) for index, raw in enumerate(data["blockdevices"])]
