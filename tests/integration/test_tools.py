"""Ordinary tools on the mount behave as on a local file system: cp -a, tar, rsync,
git clone of a local repository (and git fsck), make of a small C project."""
import filecmp
import os
import shutil
import subprocess

import pytest


def run(*argv, cwd=None):
    r = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"{argv} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


def make_tree(root):
    """A small source tree with nested dirs, a symlink, a hard link, odd modes and sizes."""
    os.makedirs(root / "src" / "lib")
    (root / "src" / "main.c").write_text(
        '#include "lib/greet.h"\nint main(void) { return greet() == 42 ? 0 : 1; }\n')
    (root / "src" / "lib" / "greet.h").write_text("int greet(void);\n")
    (root / "src" / "lib" / "greet.c").write_text("int greet(void) { return 42; }\n")
    (root / "Makefile").write_text(
        "prog: src/main.o src/lib/greet.o\n\t$(CC) -o $@ $^\n"
        "src/%.o: src/%.c\n\t$(CC) -Isrc -c -o $@ $<\n"
        "src/lib/%.o: src/lib/%.c\n\t$(CC) -Isrc -c -o $@ $<\n"
        "clean:\n\trm -f prog src/*.o src/lib/*.o\n")
    (root / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    (root / "empty").write_bytes(b"")
    os.symlink("src/main.c", root / "link-to-main")
    os.link(root / "big.bin", root / "big.hardlink")
    os.chmod(root / "src" / "lib" / "greet.h", 0o640)


def assert_same_tree(a, b):
    cmp = filecmp.dircmp(a, b)

    def walk(d):
        assert not d.left_only and not d.right_only, (d.left_only, d.right_only)
        assert not d.diff_files and not d.funny_files, (d.diff_files, d.funny_files)
        for sub in d.subdirs.values():
            walk(sub)
    walk(cmp)
    # filecmp compares shallowly by stat first; compare the big file byte by byte too.
    with open(a / "big.bin", "rb") as f1, open(b / "big.bin", "rb") as f2:
        assert f1.read() == f2.read()


@pytest.fixture
def local_tree(tmp_path):
    root = tmp_path / "tree"
    make_tree(root)
    return root


def test_cp_tar_rsync(mnt, local_tree, tmp_path):
    dst = mnt / "tools-cp"
    run("cp", "-a", local_tree, dst)
    assert_same_tree(local_tree, dst)
    assert os.readlink(dst / "link-to-main") == "src/main.c"
    assert os.stat(dst / "big.bin").st_ino == os.stat(dst / "big.hardlink").st_ino
    assert os.stat(dst / "src" / "lib" / "greet.h").st_mode & 0o7777 == 0o640

    tarball = mnt / "tools.tar"
    run("tar", "-C", dst, "-cf", tarball, ".")
    out = tmp_path / "untar"
    out.mkdir()
    run("tar", "-C", out, "-xf", tarball)
    assert_same_tree(local_tree, out)

    rs = mnt / "tools-rsync"
    run("rsync", "-aH", f"{local_tree}/", f"{rs}/")
    assert_same_tree(local_tree, rs)
    # A second rsync after a change transfers only the change and converges.
    (local_tree / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    run("rsync", "-aH", "--delete", f"{local_tree}/", f"{rs}/")
    assert_same_tree(local_tree, rs)
    shutil.rmtree(dst)
    shutil.rmtree(rs)
    assert not dst.exists()


def test_git_clone_and_make(mnt, local_tree):
    if not shutil.which("git") or not shutil.which("make") or not shutil.which("cc"):
        pytest.fail("git, make and cc are needed (installed by .ci/run)")
    env_git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    run(*env_git, "init", "-q", local_tree)
    run(*env_git, "-C", local_tree, "add", "-A")
    run(*env_git, "-C", local_tree, "commit", "-qm", "initial")
    clone = mnt / "tools-clone"
    run("git", "clone", "-q", local_tree, clone)
    run("git", "-C", clone, "fsck", "--strict")
    assert run("git", "-C", clone, "status", "--porcelain") == ""
    run("make", "-C", clone)
    run(clone / "prog")
    # make sees nothing to do the second time: mtimes on the mount are coherent.
    assert "up to date" in run("make", "-C", clone, "prog")
    run("make", "-C", clone, "clean")
    assert not (clone / "prog").exists()
    shutil.rmtree(clone)
