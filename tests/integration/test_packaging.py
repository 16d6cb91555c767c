"""What a site installs: install paths, systemd units, man pages, bash completion, the lfs
alias, "did you mean", and the Debian package (built, listed, and installed on a clean Debian
12 container).

The man pages and the completion are written at build time by scripts/gen-docs from the
programs' own --help (BUILD/doc); these tests read them there and in an install tree made
with `cmake --install --prefix /usr` into a temporary DESTDIR.

test_deb_installs_on_clean_debian12 needs podman (runc), debootstrap and Debian's apt
repository: a minimal bookworm root is made once with debootstrap into
/var/cache/nacre-debian12/root (about a minute) and imported as the image
localhost/nacre-debian12:base; each run then takes 20-50 s (apt fetches the dependencies).
It runs on a normal build only (the package of a sanitizer build would need the sanitizer
runtime in the container). test_units_pass_systemd_analyze_verify needs systemd.
"""
import fcntl
import gzip
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD, REPO, binary, daemon_env

UNITS = ("nacre-mds@.service", "nacre-oss@.service", "nacre-copytool@.service")
DEBIAN_ROOT = Path("/var/cache/nacre-debian12/root")
DEBIAN_IMAGE = "localhost/nacre-debian12:base"


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run([str(a) for a in argv], **kw)


def verbs():
    """The verbs `nacre help` lists (the command table)."""
    out = run([binary("nacre"), "help"], check=True).stdout
    names = re.findall(r"^  (\S+)\s", out.split("commands:\n", 1)[1], re.M)
    assert "getstripe" in names and "help" in names, out
    return names


def sanitizer_build():
    cache = (BUILD / "CMakeCache.txt").read_text()
    return re.search(r"^NACRE_SANITIZE:STRING=\S", cache, re.M) is not None


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`cmake --install BUILD --prefix /usr` into a DESTDIR; returns the DESTDIR."""
    binary("nacre")
    root = tmp_path_factory.mktemp("destdir")
    r = run(["cmake", "--install", BUILD, "--prefix", "/usr"], env=dict(os.environ,
                                                                          DESTDIR=str(root)))
    assert r.returncode == 0, f"cmake --install failed:\n{r.stdout}{r.stderr}"
    return root


def in_root(root, path):
    """path inside root, following symbolic links as the installed system would."""
    p = Path(path)
    for _ in range(10):
        full = root / p.relative_to("/")
        if not full.is_symlink():
            return full
        target = Path(os.readlink(full))
        p = target if target.is_absolute() else p.parent / target
    raise AssertionError(f"symlink loop at {path}")


# ---------------------------------------------------------------- did you mean, lfs


def test_mistyped_verb_suggests_the_closest(nacre_cli):
    r = nacre_cli("getstrip", "/tmp")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "nacre: 'getstrip' is not a nacre command. Did you mean 'getstripe'?\n"
    # a swap of two letters, an abbreviation, and `help VERB` suggest too
    assert nacre_cli("gtestripe").stderr.endswith("Did you mean 'getstripe'?\n")
    assert nacre_cli("hsm_stat").stderr.endswith("Did you mean 'hsm_state'?\n")
    r = nacre_cli("help", "setstrip")
    assert r.returncode == 1
    assert r.stderr == "nacre: 'setstrip' is not a nacre command. Did you mean 'setstripe'?\n"
    # nothing close: the list is where to look
    r = nacre_cli("frobnicate")
    assert r.returncode == 1
    assert r.stderr == ("nacre: 'frobnicate' is not a nacre command: run `nacre help` for "
                        "the list\n")


def test_lfs_alias_runs_getstripe_on_a_mount(mnt, nacre_cli):
    lfs = BUILD / "lfs"
    assert os.readlink(lfs) == "nacre"
    f = os.path.join(mnt, "lfs-alias")
    r = run([lfs, "setstripe", "-c", "2", "-S", "128K", f], env=daemon_env())
    assert r.returncode == 0, r.stderr
    via_lfs = run([lfs, "getstripe", f], env=daemon_env())
    assert via_lfs.returncode == 0, via_lfs.stderr
    assert via_lfs.stdout == nacre_cli("getstripe", f, check=True).stdout
    assert "lmm_stripe_count:  2\nlmm_stripe_size:   131072\n" in via_lfs.stdout
    assert run([lfs, "getstripe", "-c", f]).stdout == "2\n\n"  # lfs 2.15: a blank line after each layout
    # messages name the program it was run as
    r = run([lfs, "getstrip", f])
    assert r.returncode == 1
    assert r.stderr == "lfs: 'getstrip' is not an lfs command. Did you mean 'getstripe'?\n"


# ---------------------------------------------------------------- man pages, completion


def rendered(page):
    """The page as man(1) shows it, plain text, wide enough that nothing wraps."""
    r = run(["man", "-l", page], env=dict(os.environ, MANWIDTH="200", LC_ALL="C.UTF-8",
                                          MAN_KEEP_FORMATTING="", MANPAGER="cat",
                                          PAGER="cat"))
    assert r.returncode == 0, f"man -l {page}: {r.stderr}"
    return r.stdout


def assert_page_has(page, text):
    """Every line of text is a line of the rendered page (man indents by 7 columns); the
    SYNOPSIS has no "usage:" word, and the usage lines continuing the first moved left as
    much."""
    page_text = rendered(page)
    assert "usage:" not in page_text.split("DESCRIPTION")[0], f"{page}: 'usage:' in SYNOPSIS"
    shown = {line.rstrip() for line in page_text.splitlines()}
    lines = text.rstrip("\n").expandtabs().split("\n")
    if lines[0].startswith("usage: "):
        lines[0] = lines[0][len("usage: "):]
    missing = [line for line in lines if line.strip() and
               "       " + line.rstrip() not in shown and
               not (line.startswith(" " * 7) and "       " + line[7:].rstrip() in shown)]
    assert not missing, f"{page} lacks these lines of --help:\n" + "\n".join(missing)


def test_every_verb_has_a_man_page_with_its_usage(nacre_cli):
    man1 = BUILD / "doc" / "man" / "man1"
    names = verbs()
    for v in names:
        page = man1 / f"nacre-{v}.1"
        assert page.exists(), f"no man page for `nacre {v}`"
        assert_page_has(page, nacre_cli(v, "--help", check=True).stdout)
    top = rendered(man1 / "nacre.1")
    for v in names:
        assert f"nacre-{v}(1)" in top, f"nacre(1) does not list nacre-{v}"
    assert (man1 / "lfs.1").read_text() == ".so man1/nacre.1\n"
    for v in names:  # `man lfs-getstripe`, as on Lustre
        assert (man1 / f"lfs-{v}.1").read_text() == f".so man1/nacre-{v}.1\n"


def test_program_man_pages_have_their_help():
    man = BUILD / "doc" / "man"
    for prog, sect in (("nacre-mds", 8), ("nacre-oss", 8), ("nacre-mount", 8),
                       ("nacre-copytool", 8), ("nacre-bench", 1)):
        usage = run([binary(prog), "--help"], env=daemon_env()).stdout
        assert usage.startswith("usage:"), f"{prog} --help: {usage!r}"
        assert_page_has(man / f"man{sect}" / f"{prog}.{sect}", usage)
    assert (man / "man8" / "mount.nacre.8").read_text() == ".so man8/nacre-mount.8\n"


def complete(script, line):
    """COMPREPLY after typing line and TAB in bash with the completion script sourced."""
    words = shlex.split(line) + ([""] if line.endswith(" ") else [])
    prog = f"""
source {shlex.quote(str(script))}
COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})
COMP_CWORD={len(words) - 1}
COMP_LINE={shlex.quote(line)}
COMP_POINT=${{#COMP_LINE}}
fn=$(complete -p {shlex.quote(words[0])} | sed -n 's/.*-F \\([^ ]*\\) .*/\\1/p')
"$fn" {shlex.quote(words[0])} {shlex.quote(words[-1])} {shlex.quote(words[-2] if len(words) > 1 else '')}
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    r = run(["bash", "--norc", "--noprofile", "-c", prog])
    assert r.returncode == 0, r.stderr
    return sorted(w for w in r.stdout.split("\n") if w)


def test_bash_completion_of_verbs_and_options(installed):
    script = installed / "usr/share/bash-completion/completions/nacre"
    assert os.readlink(installed / "usr/share/bash-completion/completions/lfs") == "nacre"
    names = verbs()
    assert complete(script, "nacre get") == sorted(v for v in names if v.startswith("get"))
    assert "getstripe" in complete(script, "nacre get")
    assert complete(script, "lfs setst") == ["setstripe"]
    assert complete(script, "nacre hsm_re") == sorted(
        v for v in names if v.startswith("hsm_re"))
    assert complete(script, "nacre getstripe --stripe-") == [
        "--stripe-count", "--stripe-index", "--stripe-size"]
    assert set(complete(script, "nacre getstripe -")) >= {"-c", "-S", "-i", "-v", "-y", "-d",
                                                          "-r", "--yaml", "--help"}
    assert complete(script, "nacre up --hsm-") == [
        "--hsm-backend", "--hsm-credentials", "--hsm-endpoint", "--hsm-import"]
    assert complete(script, "nacre nodemap --r") == ["--range"]
    # an option only mentioned in a verb's prose is not offered
    assert complete(script, "nacre stats -") == ["--help", "-c"]
    assert "--allow-fault-injection" not in complete(script, "nacre fault --")
    assert complete(script, "nacre cluster ") == ["down", "status", "up"]
    assert complete(script, "nacre hsm ") == [
        "action", "archive", "cancel", "clear", "import", "list", "release", "remove",
        "restore", "set", "state"]
    assert complete(script, "nacre help getst") == ["getstripe"]
    # past the verb and its sub-command: nothing from us, so bash completes file names
    assert complete(script, "nacre getstripe ") == []
    assert "-o default" in run(["bash", "-c", f"source {script}; complete -p nacre"]).stdout


# ---------------------------------------------------------------- install tree, units


def test_install_tree(installed):
    r = installed
    for p in ("usr/bin/nacre", "usr/bin/nacre-bench", "usr/sbin/nacre-mds",
              "usr/sbin/nacre-oss", "usr/sbin/nacre-mount", "usr/sbin/nacre-copytool"):
        assert os.access(r / p, os.X_OK), f"{p} not installed"
    assert os.readlink(r / "usr/bin/lfs") == "nacre"
    # mount(8) runs /sbin/mount.TYPE (mount.fuse.nacre for a remount of type fuse.nacre)
    assert os.readlink(r / "sbin/mount.nacre") == "/usr/sbin/nacre-mount"
    assert os.readlink(r / "sbin/mount.fuse.nacre") == "/usr/sbin/nacre-mount"
    for unit in UNITS:
        assert (r / "lib/systemd/system" / unit).exists(), f"{unit} not installed"
    # installed gzipped (Debian policy), the same text as the build tree's pages
    man = r / "usr/share/man"
    for v in verbs():
        page = man / "man1" / f"nacre-{v}.1.gz"
        assert gzip.decompress(page.read_bytes()) == \
            (BUILD / "doc/man/man1" / f"nacre-{v}.1").read_bytes()
    for p in ("man1/nacre.1", "man1/lfs.1", "man8/nacre-mds.8", "man8/mount.nacre.8",
              "man1/nacre-bench.1"):
        assert (man / (p + ".gz")).exists(), p
    # `man -w` finds the installed pages through the tree's own man path
    found = run(["man", "-M", man, "-w", "nacre-getstripe"])
    assert found.stdout.strip() == str(man / "man1/nacre-getstripe.1.gz"), found.stderr
    assert "--stripe-count" in rendered(man / "man1/nacre-getstripe.1.gz")


def test_units_follow_the_install_prefix(tmp_path):
    r = run(["cmake", "--install", BUILD, "--prefix", "/opt/nacre"],
            env=dict(os.environ, DESTDIR=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    for unit in UNITS:
        text = (tmp_path / "opt/nacre/lib/systemd/system" / unit).read_text()
        exe = re.search(r"^ExecStart=(\S+)", text, re.M).group(1)
        assert exe.startswith("/opt/nacre/sbin/"), exe
        assert os.access(tmp_path / exe.lstrip("/"), os.X_OK)
    # no /sbin under another prefix: the link stays in the prefix's sbin
    assert os.readlink(tmp_path / "opt/nacre/sbin/mount.nacre") == "nacre-mount"
    assert os.readlink(tmp_path / "opt/nacre/sbin/mount.fuse.nacre") == "nacre-mount"


@pytest.fixture(scope="module")
def unit_root(installed, tmp_path_factory):
    """The install tree plus the host's own units (systemd-analyze --root needs the targets
    the units are ordered after)."""
    root = tmp_path_factory.mktemp("unitroot")
    shutil.copytree(installed, root, symlinks=True, dirs_exist_ok=True)
    host_units = Path("/lib/systemd/system")
    assert host_units.is_dir(), "systemd is not installed (apt-get install systemd)"
    shutil.copytree(host_units, root / "lib/systemd/system", symlinks=True,
                    dirs_exist_ok=True)
    return root


def test_units_pass_systemd_analyze_verify(unit_root):
    for unit, instance in (("nacre-mds@.service", "demo"), ("nacre-oss@.service", "oss0"),
                           ("nacre-copytool@.service", "demo")):
        name = unit.replace("@.", f"@{instance}.")
        r = run(["systemd-analyze", "verify", f"--root={unit_root}", name])
        assert r.returncode == 0 and r.stderr == "", f"{name}: {r.stdout}{r.stderr}"
    # and the check does look at the binaries: a unit naming one that is not installed fails
    bad = (unit_root / "lib/systemd/system/nacre-mds@.service").read_text().replace(
        "/usr/sbin/nacre-mds ", "/usr/sbin/nacre-mdsx ")
    (unit_root / "lib/systemd/system/nacre-bad@.service").write_text(bad)
    r = run(["systemd-analyze", "verify", f"--root={unit_root}", "nacre-bad@demo.service"])
    assert r.returncode != 0 and "/usr/sbin/nacre-mdsx" in r.stderr, r.stderr


def example_env(unit_text):
    """The settings a unit's header shows for its EnvironmentFile (#   NAME=value)."""
    return dict(re.findall(r"^#\s+(NACRE_[A-Z_]+)=(.*)$", unit_text, re.M))


def exec_argv(unit_text, instance, env):
    """ExecStart's argv as systemd builds it: %i, ${VAR} one word, $VAR split on spaces."""
    line = re.search(r"^ExecStart=(.*)$", unit_text, re.M).group(1).replace("%i", instance)
    argv = []
    for word in line.split():
        m = re.fullmatch(r"\$\{(\w+)\}|\$(\w+)", word)
        if m and m.group(1):
            argv.append(env[m.group(1)])
        elif m:
            argv.extend(env[m.group(2)].split())
        else:
            argv.append(re.sub(r"\$\{(\w+)\}", lambda v: env[v.group(1)], word))
    return argv


def test_unit_exec_options_are_accepted(installed):
    """Each ExecStart, with the values its header documents, run with --help appended: the
    program parses every option before it (an unknown one fails) and then prints its usage
    and exits 0."""
    for unit, instance in (("nacre-mds@.service", "demo"), ("nacre-oss@.service", "oss0"),
                           ("nacre-copytool@.service", "demo")):
        text = (installed / "lib/systemd/system" / unit).read_text()
        env = example_env(text)
        argv = exec_argv(text, instance, env)
        exe = in_root(installed, argv[0])
        r = run([exe, *argv[1:], "--help"], env=daemon_env())
        assert r.returncode == 0 and r.stdout.startswith("usage:"), (
            f"{unit}: {shlex.join(argv)} is refused:\n{r.stderr}")
        # and --help alone would not hide a wrong option
        r = run([exe, *argv[1:], "--no-such-option", "--help"], env=daemon_env())
        assert r.returncode != 0, f"{exe} accepts --no-such-option"

    # the .mount example and the fstab lines: their options through mount.nacre
    mount_unit = (REPO / "deploy/systemd/mnt-demo.mount").read_text()
    what = re.search(r"^What=(.*)$", mount_unit, re.M).group(1)
    where = re.search(r"^Where=(.*)$", mount_unit, re.M).group(1)
    opts = re.search(r"^Options=(.*)$", mount_unit, re.M).group(1)
    helper = installed / "helper" / "mount.nacre"
    helper.parent.mkdir(exist_ok=True)
    if not helper.exists():
        helper.symlink_to(in_root(installed, "/sbin/mount.nacre"))
    fstab = [line.split() for line in (REPO / "deploy/systemd/fstab.example").read_text()
             .splitlines() if line.strip() and not line.startswith("#")]
    for spec, mnt_dir, fstype, options in [(what, where, "nacre", opts)] + \
            [(f[0], f[1], f[2], f[3]) for f in fstab]:
        assert fstype == "nacre"
        r = run([helper, spec, mnt_dir, "-o", options, "--help"], env=daemon_env())
        assert r.returncode == 0 and r.stdout.startswith("usage: mount.nacre"), (
            f"mount.nacre refuses -o {options}:\n{r.stderr}")


# ---------------------------------------------------------------- the Debian package


@pytest.fixture(scope="module")
def debs(tmp_path_factory):
    out = tmp_path_factory.mktemp("debs")
    r = run([REPO / "scripts/package", "--build", BUILD, "--out", out], timeout=600)
    assert r.returncode == 0, f"scripts/package failed:\n{r.stdout}{r.stderr}"
    deb = Path(r.stdout.strip().splitlines()[-1])
    assert deb.name == "nacre_0.1.0_amd64.deb" and deb.exists(), r.stdout
    return out


def deb_field(deb, field):
    return run(["dpkg-deb", "-f", deb, field], check=True).stdout.strip()


def test_deb_contents(debs):
    deb = debs / "nacre_0.1.0_amd64.deb"
    listing = run(["dpkg-deb", "--contents", deb], check=True).stdout
    entries = {}
    for line in listing.splitlines():
        path = line.split(None, 5)[5]
        name, _, target = path.partition(" -> ")
        entries[name.lstrip(".")] = target
    want = ["/usr/bin/nacre", "/usr/sbin/nacre-mds", "/usr/sbin/nacre-oss",
            "/usr/sbin/nacre-mount", "/usr/sbin/nacre-copytool",
            "/usr/share/bash-completion/completions/nacre", "/usr/share/man/man1/nacre.1.gz",
            "/usr/share/man/man1/lfs.1.gz", "/usr/share/man/man8/nacre-mds.8.gz",
            "/usr/share/man/man8/mount.nacre.8.gz"]
    want += [f"/lib/systemd/system/{u}" for u in UNITS]
    want += [f"/usr/share/man/man1/nacre-{v}.1.gz" for v in verbs()]
    want += [f"/usr/share/man/man1/lfs-{v}.1.gz" for v in verbs()]
    missing = [p for p in want if p not in entries]
    assert not missing, f"the package lacks {missing}:\n{listing}"
    assert entries["/usr/bin/lfs"] == "nacre"
    assert entries["/sbin/mount.nacre"] == "/usr/sbin/nacre-mount"
    assert entries["/sbin/mount.fuse.nacre"] == "/usr/sbin/nacre-mount"
    assert entries["/usr/share/bash-completion/completions/lfs"] == "nacre"
    assert not any(p.startswith("/usr/local") for p in entries), listing
    assert "nacre-bench" not in listing, "nacre-bench belongs to its own package"
    depends = deb_field(deb, "Depends")
    for lib in ("fuse3", "libfuse3-3", "liblmdb0", "libssl3", "libcurl4", "libc6"):
        assert re.search(rf"(^|, ){lib}( |,|$)", depends), f"Depends lacks {lib}: {depends}"
    assert "openmpi" not in depends
    assert deb_field(deb, "Package") == "nacre"
    assert deb_field(deb, "Conflicts") == "lustre-client-utils"  # /usr/bin/lfs is theirs too
    assert not any(p.startswith("/usr/include") for p in entries), "headers go to nacre-dev"
    assert any(re.fullmatch(r"/usr/lib/\S*libnacre\.so\.0", p) for p in entries), listing
    assert not any(p.endswith("/libnacre.so") for p in entries), "the .so link is nacre-dev's"
    dev = debs / "nacre-dev_0.1.0_amd64.deb"
    listing = run(["dpkg-deb", "-c", dev], check=True).stdout
    assert "./usr/include/nacre/nacre.h" in listing and "libnacre.so -> " in listing, listing
    assert deb_field(dev, "Depends") == "nacre (= 0.1.0)"
    bench = debs / "nacre-bench_0.1.0_amd64.deb"
    listing = run(["dpkg-deb", "-c", bench], check=True).stdout
    assert "./usr/bin/nacre-bench" in listing
    assert "./usr/share/man/man1/nacre-bench.1.gz" in listing


def podman(*args, timeout=300, check=True, env=None):
    r = run(["podman", *args], timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"podman {shlex.join(map(str, args))} failed ({r.returncode}):\n"
                             f"{r.stdout}{r.stderr}")
    return r


def debian12_image(env):
    """A minimal Debian 12 image from debootstrap, made once and cached."""
    if podman("image", "exists", DEBIAN_IMAGE, check=False, env=env).returncode == 0:
        return DEBIAN_IMAGE
    DEBIAN_ROOT.parent.mkdir(parents=True, exist_ok=True)
    with open(DEBIAN_ROOT.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (DEBIAN_ROOT / "etc/debian_version").exists():
            if not shutil.which("debootstrap"):
                pytest.fail("debootstrap is missing: apt-get install debootstrap")
            tmp = DEBIAN_ROOT.with_name("root.new")
            shutil.rmtree(tmp, ignore_errors=True)
            r = run(["debootstrap", "--variant=minbase", "bookworm", tmp,
                     "http://deb.debian.org/debian"], timeout=900)
            assert r.returncode == 0, f"debootstrap failed:\n{r.stdout[-3000:]}{r.stderr}"
            tmp.rename(DEBIAN_ROOT)
        tar = subprocess.Popen(["tar", "-C", str(DEBIAN_ROOT), "-c", "."],
                               stdout=subprocess.PIPE)
        imp = subprocess.run(["podman", "import", "-", DEBIAN_IMAGE], stdin=tar.stdout,
                             capture_output=True, text=True, timeout=600, env=env)
        tar.stdout.close()
        assert tar.wait() == 0 and imp.returncode == 0, f"podman import failed: {imp.stderr}"
    return DEBIAN_IMAGE


INSIDE = r"""
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# the package's dependencies come from Debian's repository
apt-get install -y -q --no-install-recommends /pkg/nacre_0.1.0_amd64.deb man-db \
	bash-completion >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
echo "== installed $(dpkg-query -W -f='${Package} ${Version} ${Status}' nacre)"
# a user's PATH has no sbin: nacre finds its daemons in ../sbin
PATH=/usr/bin:/bin nacre up --dir /tmp/x --osts 2 --mount /tmp/x/mnt
head -c 3000000 /dev/urandom > /tmp/data
cp /tmp/data /tmp/x/mnt/data
nacre setstripe -c 2 /tmp/x/mnt/striped
cat /tmp/data > /tmp/x/mnt/striped
sync
cmp /tmp/data /tmp/x/mnt/data && cmp /tmp/data /tmp/x/mnt/striped && echo "== data ok"
echo "== lfs getstripe -c: $(lfs getstripe -c /tmp/x/mnt/striped)"
echo "== man: $(man -w nacre-getstripe) $(man -w lfs) $(man -w 8 mount.nacre) $(man -w lfs-getstripe)"
man nacre-getstripe 2>/dev/null | grep -q -- '--stripe-count' && echo "== man page shows"
echo "== completion: $(bash -c 'source /usr/share/bash-completion/bash_completion
	_completion_loader lfs; complete -p lfs')"
nacre down --dir /tmp/x
echo "== down"
"""


def test_deb_installs_on_clean_debian12(debs, tmp_path):
    if sanitizer_build():
        pytest.skip("the package of a sanitizer build needs its runtime: run on a normal "
                    "build")
    for tool in ("podman", "runc"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: apt-get install podman runc")
    conf = tmp_path / "containers.conf"
    conf.write_text('[containers]\ndefault_ulimits = ["nofile=20000:20000", '
                    '"nproc=1000:1000"]\n[engine]\nruntime = "runc"\n')
    env = dict(os.environ, CONTAINERS_CONF=str(conf))
    image = debian12_image(env)
    (tmp_path / "inside.sh").write_text(INSIDE)
    r = podman("run", "--rm", "--device", "/dev/fuse", "--cap-add", "SYS_ADMIN",
               "-v", f"{debs}:/pkg:ro", "-v", f"{tmp_path / 'inside.sh'}:/inside.sh:ro",
               image, "bash", "/inside.sh", check=False, env=env, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"in the container:\n{out}"
    assert "== installed nacre 0.1.0 install ok installed" in out
    assert "nacre is up: 2 OSTs, mounted on /tmp/x/mnt" in out
    assert "== data ok" in out
    assert "== lfs getstripe -c: 2" in out
    # lfs(1) and mount.nacre(8) are .so links: man -w names the page they show
    assert ("== man: /usr/share/man/man1/nacre-getstripe.1.gz /usr/share/man/man1/nacre.1.gz "
            "/usr/share/man/man8/nacre-mount.8.gz /usr/share/man/man1/nacre-getstripe.1.gz"
            ) in out
    assert "== man page shows" in out
    assert "== completion: complete -o default -F _nacre lfs" in out
    assert "== down" in out
