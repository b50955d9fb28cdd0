# -*- coding: utf-8 -*-
# Copyright: diskproof contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/_paths.py on real temporary directories: which target paths root may write through,
how a symlink on the way is judged, and how a run directory is made and re-verified by identity.

Real directories, real chown/chmod (root only: the ownership cases need os.chown to uid 65534)."""
from __future__ import annotations

import importlib.util
import os
import stat
from pathlib import Path

import pytest

_PATHS = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "_paths.py"
_SPEC = importlib.util.spec_from_file_location("diskproof_paths_under_test", _PATHS)
paths = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(paths)

OTHER_UID = 65534                      # nobody: a user who is neither root nor the connecting user
TRUSTED = frozenset({0})

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown to another uid)")


@pytest.fixture
def base(tmp_path):
    """A root-owned 0755 directory below pytest's root-owned tmp path (/tmp is sticky and passes)."""
    root = tmp_path / "base"
    root.mkdir()
    root.chmod(0o755)
    return root


def make_dir(path: Path, mode: int = 0o755, uid: int = 0) -> Path:
    path.mkdir()
    path.chmod(mode)
    os.chown(path, uid, 0)
    return path


def test_a_root_owned_path_passes_and_resolves_to_itself(base):
    target = make_dir(base / "disk1")
    assert paths.resolve_trusted(str(target), TRUSTED) == str(target)


def test_a_group_writable_parent_without_sticky_bit_is_refused_naming_it(base):
    parent = make_dir(base / "shared", 0o775)
    target = make_dir(parent / "disk1")
    with pytest.raises(paths.PathError) as caught:
        paths.resolve_trusted(str(target), TRUSTED)
    message = str(caught.value)
    assert message.startswith("directory %s is group-writable without the sticky bit (owner uid 0 (root), mode 0775)"
                              % parent), message
    assert "chmod go-w %s" % parent in message


def test_a_world_writable_target_itself_is_refused(base):
    target = make_dir(base / "open", 0o777)
    with pytest.raises(paths.PathError, match=r"%s is group and world-writable without the sticky bit .*mode 0777"
                       % target):
        paths.resolve_trusted(str(target), TRUSTED)


def test_a_sticky_world_writable_parent_like_tmp_passes(base):
    parent = make_dir(base / "scratch", 0o1777)
    target = make_dir(parent / "disk1")
    assert paths.resolve_trusted(str(target), TRUSTED) == str(target)


def test_a_parent_owned_by_another_uid_is_refused_naming_owner_and_mode(base):
    parent = make_dir(base / "users", 0o755, uid=OTHER_UID)
    target = make_dir(parent / "disk1")
    with pytest.raises(paths.PathError) as caught:
        paths.resolve_trusted(str(target), TRUSTED)
    assert str(caught.value).startswith("directory %s is owned by uid 65534 (nobody) (mode 0755), not by root or the "
                                        "connecting user (uid 0 (root))" % parent), str(caught.value)


def test_the_connecting_users_own_directory_passes_when_sudo_names_them(base):
    parent = make_dir(base / "home", 0o755, uid=OTHER_UID)
    target = make_dir(parent / "disk1")
    trusted = paths.trusted_uids(euid=0, environ={"SUDO_UID": str(OTHER_UID)})
    assert trusted == {0, OTHER_UID}
    assert paths.resolve_trusted(str(target), trusted) == str(target)


def test_a_root_owned_symlink_in_a_safe_directory_is_resolved_once_and_its_destination_checked(base):
    real = make_dir(base / "real")
    link = base / "link"
    link.symlink_to(real)
    assert paths.resolve_trusted(str(link), TRUSTED) == str(real)
    # ...and relative links, links through links, '..' after a link: the real path, as the kernel would.
    (base / "rel").symlink_to("real")
    (base / "chain").symlink_to(base / "rel")
    make_dir(real / "inner")
    assert paths.resolve_trusted(str(base / "chain" / "inner"), TRUSTED) == str(real / "inner")
    assert paths.resolve_trusted(str(base / "chain" / "inner" / ".."), TRUSTED) == str(real)
    assert paths.resolve_trusted(str(base / "chain" / "inner"), TRUSTED) == os.path.realpath(base / "chain" / "inner")


def test_a_symlink_owned_by_another_user_is_refused(base):
    real = make_dir(base / "real")
    link = base / "link"
    link.symlink_to(real)
    os.lchown(link, OTHER_UID, OTHER_UID)
    with pytest.raises(paths.PathError, match=r"^symlink %s is owned by uid 65534 \(nobody\)" % link):
        paths.resolve_trusted(str(link / "."), TRUSTED)


def test_a_root_owned_symlink_into_a_writable_location_is_refused_at_the_destination(base):
    unsafe = make_dir(base / "unsafe", 0o777)
    destination = make_dir(unsafe / "disk")
    (base / "link").symlink_to(destination)
    with pytest.raises(paths.PathError, match=r"^directory %s is group and world-writable" % unsafe):
        paths.resolve_trusted(str(base / "link"), TRUSTED)


def test_a_symlink_loop_and_relative_and_missing_paths_are_refused(base):
    (base / "a").symlink_to(base / "b")
    (base / "b").symlink_to(base / "a")
    with pytest.raises(paths.PathError, match="more than 40 symlinks"):
        paths.resolve_trusted(str(base / "a"), TRUSTED)
    with pytest.raises(paths.PathError, match="is not an absolute path"):
        paths.resolve_trusted("srv/disk1", TRUSTED)
    with pytest.raises(paths.PathError, match="No such file or directory"):
        paths.resolve_trusted(str(base / "missing"), TRUSTED)


def test_injected_lstat_decides_for_the_root_directory_too(base):
    """A stand-in lstat: '/' group-writable (a broken image) is refused like any other component."""
    def lstat(path):
        info = os.lstat(path)
        if path == "/":
            return os.stat_result((stat.S_IFDIR | 0o775,) + tuple(info)[1:])
        return info
    with pytest.raises(paths.PathError, match=r"^directory / is group-writable"):
        paths.resolve_trusted(str(base), TRUSTED, lstat=lstat)


def test_make_directory_creates_under_a_nofollow_descriptor_and_returns_its_identity(base):
    fd, info = paths.make_directory(str(base), "diskproof-r1", 0o755, TRUSTED)
    try:
        made = os.lstat(base / "diskproof-r1")
        assert (info.st_dev, info.st_ino) == (made.st_dev, made.st_ino)
        assert stat.S_IMODE(made.st_mode) == 0o755 and made.st_uid == 0
        assert os.fstat(fd).st_ino == made.st_ino
    finally:
        os.close(fd)
    with pytest.raises(FileExistsError):
        paths.make_directory(str(base), "diskproof-r1", 0o755, TRUSTED)


def test_make_directory_refuses_a_parent_reached_through_a_symlink(base):
    real = make_dir(base / "real")
    (base / "link").symlink_to(real)
    with pytest.raises(OSError):
        paths.make_directory(str(base / "link"), "diskproof-r2", 0o755, TRUSTED)
    assert os.listdir(real) == []


def test_verify_directory_accepts_the_same_directory_and_refuses_a_swap_to_a_symlink(base):
    fd, info = paths.make_directory(str(base), "diskproof-r3", 0o755, TRUSTED)
    os.close(fd)
    run_dir = str(base / "diskproof-r3")
    expected = (info.st_dev, info.st_ino)
    os.close(paths.verify_directory(run_dir, expected, TRUSTED))
    assert paths.same_identity(run_dir, expected) is None

    decoy = make_dir(base / "decoy")
    os.rename(run_dir, str(base / "moved"))
    os.symlink(decoy, run_dir)
    with pytest.raises(paths.PathError) as caught:
        paths.verify_directory(run_dir, expected, TRUSTED)
    assert str(caught.value).startswith("the run directory %s was swapped after the plan created it: it is now a "
                                        "symlink to %s" % (run_dir, decoy)), str(caught.value)
    assert "device %d, inode %d" % (decoy.stat().st_dev, decoy.stat().st_ino) in paths.same_identity(run_dir, expected)


def test_verify_directory_refuses_another_directory_of_the_same_name_and_a_swapped_parent(base):
    parent = make_dir(base / "target")
    fd, info = paths.make_directory(str(parent), "diskproof-r4", 0o755, TRUSTED)
    os.close(fd)
    run_dir = str(parent / "diskproof-r4")
    expected = (info.st_dev, info.st_ino)
    os.rename(run_dir, str(parent / "moved"))
    make_dir(parent / "diskproof-r4")
    with pytest.raises(paths.PathError, match=r"was swapped after the plan created it: it is now device \d+, inode"):
        paths.verify_directory(run_dir, expected, TRUSTED)
    # The parent swapped for a symlink to a copy of the layout: the walk stops at the parent.
    os.rename(str(parent), str(base / "target-moved"))
    os.symlink(base / "target-moved", str(parent))
    with pytest.raises(paths.PathError, match=r"its component %s is now a symlink to" % parent):
        paths.verify_directory(run_dir, expected, TRUSTED)


def test_verify_directory_refuses_a_run_directory_opened_to_others(base):
    fd, info = paths.make_directory(str(base), "diskproof-r5", 0o755, TRUSTED)
    os.close(fd)
    os.chmod(base / "diskproof-r5", 0o777)
    with pytest.raises(paths.PathError, match="changed after the plan created it: directory .* world-writable"):
        paths.verify_directory(str(base / "diskproof-r5"), (info.st_dev, info.st_ino), TRUSTED)
