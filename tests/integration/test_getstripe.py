"""getstripe's options as Lustre 2.15's lfs prints them for a plain RAID0 layout and a
directory's default: -q -m -g -L -p -F -R -D -N -I -z --hex-idx --component-count."""
import os

import pytest

TABLE = "\tobdidx\t\t objid\t\t objid\t\t group\n"
UNSET = "stripe_count:  1 stripe_size:   1048576 pattern:       0 stripe_offset: -1"
NO_LMV = ("lmv_stripe_count: 0 lmv_stripe_offset: -1 lmv_hash_type: none "
          "lmv_max_inherit: -1 lmv_max_inherit_rr: 0")


def gs(nacre_cli, *args):
    r = nacre_cli("getstripe", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def tree(mnt, nacre_cli, request):
    """d (default -c 2 -S 256K) holding f (2 stripes of 128K) and sub (no default)."""
    d = os.path.join(mnt, "gs-" + request.node.name)
    os.mkdir(d)
    nacre_cli("setstripe", "-c", 2, "-S", "256K", d, check=True)
    f = os.path.join(d, "f")
    nacre_cli("setstripe", "-c", 2, "-S", "128K", f, check=True)
    with open(f, "wb") as fh:
        fh.write(b"x" * 300000)
    os.mkdir(os.path.join(d, "sub"))  # a new directory takes its parent's default: drop it
    nacre_cli("setstripe", "-d", os.path.join(d, "sub"), check=True)
    fid = nacre_cli("path2fid", f, check=True).stdout.strip()
    oid = int(fid.strip("[]").split(":")[1], 16)
    full = gs(nacre_cli, f).splitlines()
    gen = int(full[4].split()[1])
    osts = [int(line.split("\t")[1]) for line in full[7:9]]
    rows = "".join("\t%6u\t%14u\t%#13x\t%14u\n" % (o, oid, oid, 0) for o in osts)
    return dict(d=d, f=f, sub=os.path.join(d, "sub"), fid=fid, gen=gen, osts=osts,
                rows=rows, oid=oid)


def test_file_fields(tree, nacre_cli):
    f, gen, osts = tree["f"], tree["gen"], tree["osts"]
    # -q: the objects only (the path still named, as lfs does at depth 1)
    assert gs(nacre_cli, "-q", f) == f"{f}\n" + TABLE + tree["rows"] + "\n"
    assert gs(nacre_cli, "--quiet", "-v", f) == f"{f}\n" + TABLE + tree["rows"] + "\n"
    # one field: its bare value, then lfs's blank line
    assert gs(nacre_cli, "-g", f) == f"{gen}\n\n"
    assert gs(nacre_cli, "--layout", f) == "raid0\n\n"
    assert gs(nacre_cli, "-F", f) == f"{tree['fid']}\n\n"
    assert gs(nacre_cli, "--fid", "-y", f) == f"{tree['fid'].strip('[]')}\n\n"
    # several fields: labelled, one per line, in lfs's order whatever the options' order
    assert gs(nacre_cli, "-i", "-g", "-c", "-S", f) == (
        "lmm_stripe_count:  2\nlmm_stripe_size:   131072\n"
        f"lmm_layout_gen:    {gen}\nlmm_stripe_offset: {osts[0]}\n\n")
    assert gs(nacre_cli, "-L", "-F", f) == (
        f"lmm_fid:           {tree['fid']}\nlmm_pattern:       raid0\n\n")
    # what a plain layout has none of: no pool, mirror count or extension size
    for opt in ("-p", "--pool", "-N", "--mirror-count", "-z", "--extension-size"):
        assert gs(nacre_cli, opt, f) == "\n", opt
    # the MDT index: every inode is on MDT0000
    assert gs(nacre_cli, "-m", f) == "0\n"
    assert gs(nacre_cli, "--mdt-index", f, tree["d"]) == "0\n0\n"
    assert gs(nacre_cli, "-v", "-m", f) == f"{f}\nmdt_index:\t0\n"


def test_component_views_of_a_plain_layout(tree, nacre_cli):
    """lfs shows a plain layout as one component (id 0) of a layout counting 0 entries."""
    f, gen = tree["f"], tree["gen"]
    assert gs(nacre_cli, "--component-count", f) == "0\n\n"
    assert gs(nacre_cli, "--comp-count", tree["d"]) == "0\n\n"
    assert gs(nacre_cli, "-I", f) == "0\n\n"
    assert gs(nacre_cli, "--component-count", "-c", f) == (
        "  lcm_entry_count:   0\n      lmm_stripe_count:  2\n\n")
    # -I ID: only that component; a plain layout has none numbered 1
    assert gs(nacre_cli, "-I1", f) == (
        f"{f}\n  lcm_layout_gen:    {gen}\n  lcm_mirror_count:  1\n  lcm_entry_count:   0\n")
    assert gs(nacre_cli, "--component-id=1", "-d", tree["d"]) == (
        "  lcm_layout_gen:    0\n  lcm_mirror_count:  1\n  lcm_entry_count:   0\n")
    assert gs(nacre_cli, "-v", "-I1", f) == (
        f"{f}\ncomposite_header:\n  lcm_magic:         0x0BD10BD0\n"
        f"  lcm_size:          {32 + 48 + 32 + 24 * 2}\n  lcm_flags:         0\n"
        f"  lcm_layout_gen:    {gen}\n  lcm_mirror_count:  1\n  lcm_entry_count:   0\n"
        "components:\n")
    r = nacre_cli("getstripe", "-I0", f)
    assert r.returncode != 0 and "bad component id '0'" in r.stderr


def test_hex_idx(tree, nacre_cli):
    f, osts, oid = tree["f"], tree["osts"], tree["oid"]
    out = gs(nacre_cli, "--hex-idx", f)
    rows = "".join("\t%#6x\t%14u\t%#13x\t%14u\n" % (o, oid, oid, 0) for o in osts)
    assert out.endswith(TABLE + rows + "\n"), out
    assert f"lmm_stripe_offset: {osts[0]:#x}\n" in out
    assert gs(nacre_cli, "--hex-idx", "-i", f) == f"{osts[0]:#x}\n\n"
    assert gs(nacre_cli, "--hex-idx", "-i", tree["d"]) == "-1\n\n"


def test_directory_fields_raw_and_verbose(tree, nacre_cli):
    d, sub = tree["d"], tree["sub"]
    dfid = nacre_cli("path2fid", d, check=True).stdout.strip()
    subfid = nacre_cli("path2fid", sub, check=True).stdout.strip()
    # a directory's fields share one line
    assert gs(nacre_cli, "-c", "-S", d) == "stripe_count:  2 stripe_size:   262144\n\n"
    assert gs(nacre_cli, "-L", d) == "raid0\n\n"
    assert gs(nacre_cli, "-L", sub) == "0\n\n"
    assert gs(nacre_cli, "-g", d) == "\n"  # directories have no layout generation
    assert gs(nacre_cli, "-F", d) == f"{dfid}\n\n"
    assert gs(nacre_cli, "-y", "-d", d) == (
        "stripe_count:  2\nstripe_size:   262144\npattern:       raid0\nstripe_offset: -1\n\n")
    # -R: no file system default filled in
    nacre_cli("setstripe", "-S", "512K", sub, check=True)  # count left to the default
    assert gs(nacre_cli, "-d", sub) == (
        "stripe_count:  1 stripe_size:   524288 pattern:       raid0 stripe_offset: -1\n\n")
    assert gs(nacre_cli, "-R", "-d", sub) == (
        "stripe_count:  0 stripe_size:   524288 pattern:       raid0 stripe_offset: -1\n\n")
    nacre_cli("setstripe", "-d", sub, check=True)
    assert gs(nacre_cli, "-d", sub) == UNSET + "\n\n"
    assert gs(nacre_cli, "--raw", "-d", sub) == (
        "stripe_count:  0 stripe_size:   0 pattern:       0 stripe_offset: -1\n\n")
    # -v: a directory without a default of its own is marked (Default), and has its lmm_fid
    assert gs(nacre_cli, "-v", sub) == f"(Default) {sub}\nlmm_fid:           {subfid}\n" \
        + UNSET + "\n\n"
    out = gs(nacre_cli, "-v", d)
    assert out.startswith(f"{d}\nlmm_fid:           {dfid}\nstripe_count:  2 "), out
    # the entries at depth 1: a subdirectory shows its (unset) default too
    out = gs(nacre_cli, d)
    assert f"\n{sub}\n{UNSET}\n\n" in out, out


def test_default_directory_striping_and_recursion(tree, nacre_cli):
    """-D: the directory striping default; nacre stripes no directory, so lfs's values for
    none set. Files have none and print nothing."""
    d, sub, f = tree["d"], tree["sub"], tree["f"]
    assert gs(nacre_cli, "-D", f) == ""
    assert gs(nacre_cli, "-D", "-d", d) == NO_LMV + "\n"
    assert gs(nacre_cli, "--default", d) == \
        f"(Default){d}\n{NO_LMV}\n(Default){sub}\n{NO_LMV}\n"
    assert gs(nacre_cli, "-D", "-c", d) == "0\n"
    # -r descends; -q shows directories as a blank line and files as their objects
    deep = os.path.join(sub, "deep")
    nacre_cli("setstripe", "-c", 1, "-i", 1, deep, check=True)
    with open(deep, "wb") as fh:
        fh.write(b"y")
    dfid = nacre_cli("path2fid", deep, check=True).stdout.strip()
    doid = int(dfid.strip("[]").split(":")[1], 16)
    deep_rows = "\t%6u\t%14u\t%#13x\t%14u\n" % (1, doid, doid, 0)
    assert gs(nacre_cli, "-q", "-r", d) == (
        "\n" + f"{f}\n" + TABLE + tree["rows"] + "\n" + "\n"
        + f"{deep}\n" + TABLE + deep_rows + "\n")
    assert gs(nacre_cli, "-r", "-m", d) == "0\n" * 4  # d, f, sub, deep
    assert gs(nacre_cli, "-r", "-v", "-m", d) == "".join(
        f"{p}\nmdt_index:\t0\n" for p in (d, f, sub, deep))
    os.unlink(deep)
