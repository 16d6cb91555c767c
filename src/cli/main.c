/* main.c - `nacre`: the command table and dispatch (lfs's command table is the model). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"


static int cmd_help(int argc, char **argv);

static const struct cli_cmd commands[] = {
	{"setstripe", cli_setstripe, "set the layout of a new or empty file, or a directory's default",
	 "usage: nacre setstripe [-c COUNT] [-S SIZE] [-i INDEX] FILE|DIRECTORY\n"
	 "       nacre setstripe -d DIRECTORY\n"
	 "  -c, --stripe-count N  stripes per file (0 = file system default, -1 = every OST)\n"
	 "  -S, --stripe-size S   bytes per stripe: a multiple of 64K, suffix K/M/G (base 2);\n"
	 "                        a bare number below 4096 means KiB\n"
	 "  -i, --stripe-index I  first OST (-1 = let the MDS choose)\n"
	 "  -p, --pool NAME       an OST pool: refused, nacre has no pools yet\n"
	 "  -d, --delete          remove a directory's default layout\n"
	 "A path that does not exist is created as an empty file with that layout.\n"},
	{"getstripe", cli_getstripe, "show layouts of files and directory defaults",
	 "usage: nacre getstripe [OPTIONS] PATH...\n"
	 "  -c, --stripe-count   the stripe count        -S, --stripe-size    the stripe size\n"
	 "  -i, --stripe-index   the first OST index     -L, --layout         the pattern\n"
	 "  -g, --generation     the layout generation   -F, --fid            the FID\n"
	 "  -p, --pool           the pool (none: nacre has no pools)\n"
	 "  -m, --mdt-index      the MDT index (0)\n"
	 "  -N, --mirror-count   the mirror count (nothing for a plain layout, as lfs)\n"
	 "  -z, --extension-size the extension size (nothing for a plain layout)\n"
	 "  --component-count    the component count (0 for a plain layout)\n"
	 "  -I, --component-id[=ID]  the component id (0 for a plain layout); with ID only\n"
	 "                       that component (a plain layout has none numbered 1 and up)\n"
	 "  -q, --quiet          the objects only\n"
	 "  -v, --verbose        add lmm_magic, lmm_seq, lmm_object_id and lmm_fid\n"
	 "  -y, --yaml           YAML output\n"
	 "  -R, --raw            a directory's unset fields as 0, not the file system default\n"
	 "  -D, --default        the directories' default directory striping (nacre stripes\n"
	 "                       no directory: lfs's values for none set)\n"
	 "  --hex-idx            OST indices in hex\n"
	 "  -d, --directory      show a directory itself, not its entries\n"
	 "  -r, --recursive      descend into subdirectories\n"
	 "  -h, --help           this text\n"
	 "Several fields print labelled, in lfs's order; a field option shows the paths given\n"
	 "and nothing below them, as lfs does. Each layout ends with a blank line, as in lfs.\n"
	 "objid is the file's FID oid: nacre names objects by (FID, stripe, generation) and has\n"
	 "no per-object ids.\n"},
	{"quota", cli_quota, "show a user's, group's or project's disk usage and limits, as lfs quota",
	 "usage: nacre quota [-h] [-v] [-u|-g|-p ID|NAME] PATH\n"
	 "       nacre quota -t -u|-g|-p PATH       the grace periods\n"
	 "       nacre quota -U|-G|-P PATH          the default limits\n"
	 "       nacre quota --check [--fix] PATH   recount usage from the inodes (root)\n"
	 "kbytes: the files' sizes as the MDS knows them, rounded up to 4 KiB each; '*' marks\n"
	 "a value at or over its limit; grace: what is left of it, 'none' when it ended.\n"
	 "-v adds a line per target: the MDT's files and each OST's share of the id's objects\n"
	 "(root, or your own uid or gid).\n"
	 "--check prints each id whose stored usage differs from the count and exits 1 if any\n"
	 "did; --fix also writes the count. Details: docs/quota.md.\n"},
	{"setquota", cli_setquota, "set user, group or project limits, defaults or grace, as lfs setquota",
	 "usage: nacre setquota -u|-g|-p ID|NAME [-b SOFT] [-B HARD] [-i SOFT] [-I HARD] PATH\n"
	 "       nacre setquota -U|-G|-P [-b SOFT] [-B HARD] [-i SOFT] [-I HARD] PATH  (defaults)\n"
	 "       nacre setquota -t -u|-g|-p [-b GRACE] [-i GRACE] PATH\n"
	 "Block limits in KiB, or with a k, M, G, T or P suffix; inode limits a count (k, M..\n"
	 "multiply by 1024); 0 removes a limit. GRACE: seconds or 1w2d3h4m5s (default 1w).\n"
	 "An id without limits of its own takes the defaults. Root only. Over a hard limit,\n"
	 "or a soft one past its grace, creates and file growth fail with EDQUOT; root and\n"
	 "root's files are not held to limits.\n"},
	{"project", cli_project, "list, set, check or clear project ids, as lfs project",
	 "usage: nacre project [-d|-r] PATH...              list: ID, P (inherit) or -, path\n"
	 "       nacre project -p ID [-s] [-r] PATH...      set (root); -s: new entries of a\n"
	 "                                                  directory inherit ID\n"
	 "       nacre project -c [-d|-r] [-p ID] PATH...   check ids and inherit flags\n"
	 "       nacre project -C [-d|-r] [-k] PATH...      clear (-k keeps the id)\n"
	 "A directory's entries are listed and checked unless -d; -r descends. Project\n"
	 "quotas (nacre setquota -p) count what carries the id; df in a directory with\n"
	 "the inherit flag shows its project's limit as the size.\n"},
	{"find", cli_find, "find files by name, type, size, times, owner, striping, HSM state",
	 "usage: nacre find PATH... [EXPRESSION] [ACTION]\n"
	 "Runs on the MDS as one scan of the tree (pages through the mount), not a walk.\n"
	 "EXPRESSION: tests, all of which must hold, or combined as find does: ! T (or -not),\n"
	 "T1 -o T2 (or -or), T1 -a T2 (or -and, or nothing), \\( ... \\); -a binds tighter\n"
	 "than -o; with -o, up to 16 tests and the action after the parentheses. Tests:\n"
	 "  --name|-n|-name GLOB, --iname GLOB   base name matches (fnmatch)\n"
	 "  --type|-t|-type f,d,l,p,s,b,c        file type (one letter or a comma list)\n"
	 "  --size|-s|-size [+-]N[cbkMGTPE]      size, rounded up to the unit (bytes without)\n"
	 "  --mtime|-M, --atime|-A, --ctime|-C, --btime|-B [+-]N[smhdwy]   age in days (or\n"
	 "                                       the unit); B: since the file was made\n"
	 "  --mmin, --amin, --cmin, --Bmin [+-]N   age in minutes\n"
	 "  --newer FILE                         modified after FILE\n"
	 "  -newerXY REF                         time X (a m c B) after REF's time Y (a m c B), or\n"
	 "                                       after the date REF when Y is t (YYYY-MM-DD\n"
	 "                                       [HH:MM[:SS]], local; @SECONDS); up to 4\n"
	 "  --empty                              an empty file or a directory without entries\n"
	 "  --links [+-]N                        hard links\n"
	 "  --blocks|-b [+-]N[bkMGTPE]           space used (KiB without a unit, b: 512 bytes)\n"
	 "  --projid N                           project id (nacre project)\n"
	 "  -path GLOB, -ipath GLOB              the path as printed matches ('/' not special;\n"
	 "                                       tested here: not inside ( ) or with -o)\n"
	 "  --mdt-index|-m LIST                  on one of these MDTs (nacre has one: 0)\n"
	 "  --lazy|-l                            accepted: sizes are the MDS's either way\n"
	 "  --uid|-u N, --user|-U NAME, --gid|-g N, --group|-G NAME   owner and group\n"
	 "  --perm MODE|-MODE|/MODE              octal: exactly, all of, any of these bits\n"
	 "  --maxdepth|-D N, --mindepth N        levels below the start (not negatable)\n"
	 "  --stripe-count|-c [+-]N, --stripe-size|-S [+-]N[kMG]   layout\n"
	 "  --stripe-index|-i, --ost|-O LIST     has an object on one of these OSTs (indices,\n"
	 "                                       ranges or FSNAME-OSTxxxx, comma-separated)\n"
	 "  --pool NAME                          OST pool (nacre has none: nothing matches)\n"
	 "  --layout|-L raid0,released,mdt       layout kind\n"
	 "  --hsm-state|--hsm exists,archived,released,dirty,lost,noarchive,norelease\n"
	 "                                       regular files with all these HSM flags\n"
	 "  --fid FID                            this FID\n"
	 "Actions (one): --print|-P (default), --print0|-0, -ls, --printf FORMAT\n"
	 "  FORMAT: %p %f %s %u %U %g %G %m %M %t %a %c %n %i %l %y %d %%, Lustre's %LF (FID)\n"
	 "  %Lc %LS %Li %Lp (stripe count, size, first OST, pool), escapes \\n \\t \\0 \\\\\n"
	 "Paths are printed joined to PATH as given; a PATH that is a file or a symlink is\n"
	 "tested itself (not followed). A directory the caller may not read and search is\n"
	 "reported on stderr and skipped; the exit code is then 1.\n"},
	{"romio-hints", cli_romio_hints, "print ROMIO (MPI-IO) hints matching a path's layout",
	 "usage: nacre romio-hints [-N NODES] PATH\n"
	 "  -N, --nodes N   nodes the job runs on: aggregators per node = stripes / N\n"
	 "PATH is a file, a directory (its default layout) or a file to be created there.\n"
	 "Save the output and run with ROMIO_HINTS=FILE (OpenMPI: OMPI_MCA_io=romio321).\n"},
	{"df", cli_df, "space and inodes of each target",
	 "usage: nacre df [-h] [-i] [PATH]\n"
	 "  -h, --human-readable  sizes in K/M/G/T (base 2)\n"
	 "  -i, --inodes          inodes instead of blocks\n"
	 "Without PATH every mounted nacre file system is shown.\n"},
	{"osts", cli_osts, "list the OSTs, as lfs osts",
	 "usage: nacre osts [PATH]\n"
	 "Prints OBDS: and a line INDEX: UUID ACTIVE|INACTIVE per OST of the file system PATH\n"
	 "is on, or of every mounted nacre file system.\n"},
	{"mdts", cli_mdts, "list the MDTs, as lfs mdts",
	 "usage: nacre mdts [PATH]\n"
	 "Prints MDTS: and a line INDEX: UUID ACTIVE|INACTIVE per MDT.\n"},
	{"path2fid", cli_path2fid, "print the FID of paths",
	 "usage: nacre path2fid [-p|--parents] PATH...\n"
	 "  -p, --parents   print [PARENT_FID]/NAME for every hard link, tab-separated\n"
	 "With several paths each line starts with PATH: .\n"},
	{"fid2path", cli_fid2path, "print the paths of FIDs",
	 "usage: nacre fid2path [-f|--print-fid] [-c|--print-link] [-l|--link N]\n"
	 "                      MOUNT|FSNAME FID...\n"
	 "  -f, --print-fid   start each line with the FID as given\n"
	 "  -c, --print-link  then the link number lfs reports (the next link's, or the\n"
	 "                    same for the last)\n"
	 "  -l, --link N      only link N (0 is the first; past the last: the first)\n"
	 "Every hard link is printed, in the order the links were made (a renamed link\n"
	 "last). With a MOUNT (an argument starting with '/') paths start with the mount\n"
	 "point; with an FSNAME they are relative to the file system root, and the root\n"
	 "itself is /. FID is [0xSEQ:0xOID:0xVER]; the brackets are optional. The exit code\n"
	 "is the errno of the first failure (2: no such FID).\n"},
	{"up", cli_up, "start a whole cluster on this machine and mount it",
	 "usage: nacre up --dir DIR [--osts N] [--oss N] [--mount MNT] [--fsname NAME] [--port P]\n"
	 "                [--hsm-backend URL [--hsm-endpoint URL] [--hsm-credentials FILE]\n"
	 "                 [--hsm-import DESTDIR]] [--sec-min null|integrity|privacy]\n"
	 "                [--quota on|off] [--metrics-addr HOST:PORT] [--metrics-log DIR] [--metrics-interval S]\n"
	 "                [--metrics-azure-dce URL --metrics-azure-dcr ID\n"
	 "                 --metrics-azure-tenant ID --metrics-azure-client-id ID\n"
	 "                 --metrics-azure-secret-file FILE [--metrics-azure-stream NAME]\n"
	 "                 [--metrics-azure-authority URL]]\n"
	 "                [--metrics-azure WORKSPACE --metrics-azure-key-file FILE\n"
	 "                 [--metrics-azure-log-type NAME] [--metrics-azure-url URL]]\n"
	 "  --dir DIR      data, logs, key and pid file of the cluster (created if missing)\n"
	 "  --osts N       number of OSTs (default 4)\n"
	 "  --oss N        number of nacre-oss processes sharing them (default: one per OST)\n"
	 "  --mount MNT    mount point (default DIR/mnt)\n"
	 "  --fsname NAME  file system name (default nacre)\n"
	 "  --port P       MDS port on 127.0.0.1 (default 9400); OSS ports follow it\n"
	 "  --hsm-backend URL  start a copytool for archive 1 (posix:/dir, azure://..., s3://...)\n"
	 "  --hsm-import DESTDIR  import the backend's objects as released stubs into DESTDIR\n"
	 "                 (a directory of the new file system, / its root) once it is up\n"
	 "  --sec-min FLAVOUR  the servers' least wire security: integrity authenticates every\n"
	 "                 frame, privacy also encrypts it; the mount gets it too\n"
	 "  --quota off    the MDS counts no quota usage and enforces no limit (default on)\n"
	 "  --metrics-addr HOST:PORT  Prometheus /metrics of the MDS there, of OSS j on PORT+1+j,\n"
	 "                 the mount and the copytool on the next ports (printed at the end)\n"
	 "  --metrics-log DIR  every daemon, the mount and the copytool append JSON lines to\n"
	 "                 DIR/FSNAME-ROLE.jsonl every --metrics-interval S (default 60)\n"
	 "  --metrics-azure-dce URL and the options after it  post those records to Azure Log\n"
	 "               Analytics' Logs Ingestion API (given to all; docs/metrics.md)\n"
	 "  --metrics-azure WORKSPACE, --metrics-azure-key-file FILE, --metrics-azure-log-type,\n"
	 "  --metrics-azure-url  or to its retired HTTP Data Collector API\n"
	 "DIR keeps the options (DIR/up.options): later, `nacre up --dir DIR` alone brings the\n"
	 "same cluster up. If some of its daemons died (or the mount), it starts exactly those\n"
	 "and says which; if everything runs it says so and exits 1.\n"},
	{"down", cli_down, "stop a cluster started by `nacre up`",
	 "usage: nacre down --dir DIR\n"},
	{"nodemap", cli_nodemap, "nodemap rules of the MDS: root squash, id maps, read-only, fileset",
	 "usage: nacre nodemap [--mds SPEC] [--key-file FILE] COMMAND\n"
	 "  add NAME --range CIDR[,CIDR] [--client NAME[,NAME]]   a rule (--client alone too)\n"
	 "  del NAME                                              remove a rule\n"
	 "  modify NAME --PROPERTY VALUE                          change one property\n"
	 "  list                                                  every rule, as lctl get_param\n"
	 "  test CLIENT...                                        the rule an address and/or\n"
	 "                                                        client name gets, its mapping\n"
	 "Properties: admin, trusted (root not squashed), squash_uid, squash_gid, squash_all,\n"
	 "readonly, deny (0/1 or the id); fileset /DIR; map_uid and map_gid CLIENT:FS[:COUNT]\n"
	 "(unmap_uid/unmap_gid remove one); sec_min null|integrity|privacy; ranges; clients.\n"
	 "The rule \"default\" applies to clients no other rule matches. --mds is HOST:PORT:/FSNAME\n"
	 "(default: the mount the working directory is in); the key is $NACRE_KEY_FILE by\n"
	 "default. Only clients of an admin rule may run it (docs/security.md, \"Nodemaps\").\n"},
	{"changelog_register", cli_changelog_register, "register a changelog user (lctl changelog_register)",
	 "usage: nacre changelog_register [--key-file FILE] MOUNT|FSNAME|SPEC\n"
	 "Prints FSNAME-MDT0000: Registered changelog userid 'clN'. From now on the MDS keeps a\n"
	 "record of every namespace change until every registered user cleared it.\n"
	 "MOUNT is a nacre mount (or a directory in one), FSNAME a mounted file system's name,\n"
	 "SPEC an MDS HOST:PORT:/FSNAME. The key (--key-file, default $NACRE_KEY_FILE) is the\n"
	 "cluster key or an admin key, for every changelog verb.\n"},
	{"changelog_deregister", cli_changelog_deregister, "deregister a changelog user",
	 "usage: nacre changelog_deregister [--key-file FILE] MOUNT|FSNAME|SPEC clN|N\n"
	 "Records no other user still needs are freed.\n"},
	{"changelog", cli_changelog, "print changelog records, as lfs changelog",
	 "usage: nacre changelog [--follow] [--key-file FILE] MOUNT|FSNAME|SPEC [STARTREC [ENDREC]]\n"
	 "  -f, --follow   keep printing new records as they come (until interrupted)\n"
	 "Lines as lfs changelog: INDEX NNTYPE HH:MM:SS.NS YYYY.MM.DD 0xFLAGS t=[FID]\n"
	 "[ef=0xX u=UID:GID x=XATTR] [p=[PARENT] NAME] [s=[FID] sp=[PARENT] OLDNAME] (UTC).\n"},
	{"changelog_clear", cli_changelog_clear, "free changelog records a user is done with",
	 "usage: nacre changelog_clear [--key-file FILE] MOUNT|FSNAME|SPEC clN ENDREC\n"
	 "ENDREC 0 means every current record.\n"},
	{"changelog_mask", cli_changelog_mask, "show or set the changelog mask (mdd.*.changelog_mask)",
	 "usage: nacre changelog_mask [--key-file FILE] [--extra uidgid,xattr|none]\n"
	 "                            MOUNT|FSNAME|SPEC [[+|-]TYPE...]\n"
	 "TYPE is a record name (CREAT, OPEN, ...) or ALL. Names alone set exactly those;\n"
	 "+TYPE and -TYPE change the current mask. The default is every type but OPEN and\n"
	 "ATIME. --extra adds the caller's u=UID:GID and the XATTR record's x=NAME to records.\n"},
	{"cluster", cli_cluster, "bring a multi-host cluster up or down from one config file",
	 "usage: nacre cluster up|down|status CONFIG\n"
	 "  up      check every host, start the MDS and OSSes (formatting new targets), wait\n"
	 "          for the OSTs to register, mount the clients; stops at the first failure\n"
	 "  down    unmount the clients, stop the OSSes, then the MDS\n"
	 "  status  every daemon, target and mount, up or down (exit 3 if any is down)\n"
	 "CONFIG is an INI file: see docs/cluster.md and deploy/examples/cluster.conf.\n"},
	{"stats", cli_stats, "Lustre-style per-target counters from the metrics endpoints",
	 "usage: nacre stats [-c CONFIG] [HOST:PORT...]\n"
	 "  Reads each daemon's Prometheus endpoint (--metrics-addr) and prints each OST's\n"
	 "  obdfilter.FS-OSTxxxx.stats as lctl get_param does (snapshot_time, then\n"
	 "  NAME COUNT samples [UNIT] [MIN MAX SUM]) and requests per operation.\n"
	 "  -c CONFIG   take the endpoints from a cluster config (metrics_addr keys)\n"},
	{"get_param", cli_get_param, "read parameters by their lctl names, as lctl get_param",
	 "usage: nacre get_param [-n] [-N [-F]] [-R] [--mount PATH] [--metrics HOST:PORT]...\n"
	 "                       [-c CONFIG] PATTERN...\n"
	 "  PATTERN is a dotted lctl name with shell wildcards ('*' stays within one part):\n"
	 "  osc.*.max_rpcs_in_flight, llite.*.max_read_ahead_mb, osc.*.active,\n"
	 "  osc.*.kbytesfree, mdt.*.hsm.actions, obdfilter.*.kbytesavail, obdfilter.*.stats,\n"
	 "  mdt.*.md_stats, mdt.*.job_stats, obdfilter.*.job_stats\n"
	 "  -n  print values only     -N  print names only     -R  also every name below\n"
	 "  -F  with -N: a writable name ends in '='\n"
	 "  --metrics HOST:PORT  an OSS's or the MDS's metrics endpoint, for\n"
	 "                       obdfilter.*.stats and .job_stats, mdt.*.md_stats and\n"
	 "                       .job_stats (repeatable)\n"
	 "  -c CONFIG            the server endpoints of a cluster config (metrics_addr keys)\n"
	 "  --mount PATH         only the mount PATH is on (default: every nacre mount)\n"
	 "Prints NAME=VALUE, or NAME= and then the value when it has several lines or is long\n"
	 "(as lctl). Exit status: 0, or\n"
	 "the errno of the first failure (2: no such parameter). See docs/params.md.\n"},
	{"set_param", cli_set_param, "change a mount's tunables, as lctl set_param",
	 "usage: nacre set_param [-n] [--mount PATH] [--metrics HOST:PORT]... NAME=VALUE...\n"
	 "  NAME may hold wildcards; every match is set and printed as NAME=VALUE (-n: not).\n"
	 "  osc.FS-OSTxxxx-osc-INSTANCE.max_rpcs_in_flight   1..256 (per OST)\n"
	 "  llite.FS-INSTANCE.max_read_ahead_mb               0..65536 (0: no readahead)\n"
	 "  mdt.FS-MDT0000.job_stats, obdfilter.FS-OSTxxxx.job_stats   clear (with --metrics,\n"
	 "                                                    on the server's own machine)\n"
	 "Needs root. Exit status: 0, or the errno of the first failure: 2 no such parameter,\n"
	 "13 read-only parameter or not root, 22 not a number, 34 out of range.\n"},
	{"list_param", cli_list_param, "list parameter names, as lctl list_param",
	 "usage: nacre list_param [-R] [-F] [--mount PATH] [--metrics HOST:PORT]... PATTERN...\n"},
	{"check", cli_check, "show whether each server is active, as lfs check",
	 "usage: nacre check servers|all|osts|mdts [PATH]\n"
	 "Prints DEVICE active. or DEVICE inactive. per MDC and OSC of each mount (as the MDS\n"
	 "sees its servers); exits 1 when any is inactive.\n"},
	{"getname", cli_getname, "print the instance name and mount point of each mount",
	 "usage: nacre getname [-n|--fsname] [-i|--instance] [PATH...]\n"
	 "Prints FSNAME-INSTANCE MOUNTPOINT, as lfs getname (-n: FSNAME, -i: INSTANCE).\n"},
	{"top", cli_top, "live per-server view: load, free space, bytes/s, requests/s",
	 "usage: nacre top [-c CONFIG] [-n COUNT] [HOST:PORT...]\n"
	 "  Refreshes every second from the daemons' metrics endpoints; q or Ctrl-C quits.\n"
	 "  -c CONFIG   take the endpoints from a cluster config (metrics_addr keys)\n"
	 "  -n COUNT    stop after COUNT refreshes (for scripts)\n"},
	{"hsm_archive", cli_hsm_archive, "archive files to the HSM backend",
	 "usage: nacre hsm_archive [--archive N] [--filelist FILE] FILE...\n"},
	{"hsm_release", cli_hsm_release, "free the OST space of archived files",
	 "usage: nacre hsm_release [--filelist FILE] FILE...\n"
	 "Only archived files that are not dirty can be released.\n"},
	{"hsm_restore", cli_hsm_restore, "bring released files back from the archive",
	 "usage: nacre hsm_restore [--filelist FILE] [-r [--timeout S]] FILE|DIR...\n"
	 "  -r           every file under the directories; waits and shows progress, and\n"
	 "               names the files not restored (restore failed, or time out)\n"
	 "  --timeout S  with -r: stop waiting after S seconds (default 3600, 0 = no limit)\n"},
	{"hsm_remove", cli_hsm_remove, "delete the archive copy of files",
	 "usage: nacre hsm_remove [--archive N] [--filelist FILE] FILE...\n"},
	{"hsm_cancel", cli_hsm_cancel, "cancel the HSM action queued or running on files",
	 "usage: nacre hsm_cancel [--filelist FILE] FILE...\n"},
	{"hsm_state", cli_hsm_state, "print the HSM state of files",
	 "usage: nacre hsm_state [--filelist FILE] FILE...\n"},
	{"hsm_action", cli_hsm_action, "print the HSM action running on files",
	 "usage: nacre hsm_action [--filelist FILE] FILE...\n"},
	{"hsm_set", cli_hsm_set, "set HSM flags of files",
	 "usage: nacre hsm_set [--norelease] [--noarchive] [--dirty] [--exists] [--archived]\n"
	 "                     [--lost] [--archive-id N] FILE...\n"
	 "Users may set only norelease, noarchive and dirty, on their own files.\n"},
	{"hsm_clear", cli_hsm_clear, "clear HSM flags of files",
	 "usage: nacre hsm_clear [--norelease] [--noarchive] [--dirty] [--exists] [--archived]\n"
	 "                       [--lost] FILE...\n"},
	{"hsm", cli_hsm, "HSM queue and import (and `nacre hsm VERB` for the hsm_VERB commands)",
	 "usage: nacre hsm list [PATH]\n"
	 "       nacre hsm import --archive-id N --backend URL [--endpoint URL]\n"
	 "                        [--credentials FILE] [--update] DESTDIR\n"
	 "       nacre hsm archive|release|restore|remove|cancel|state|action|set|clear ...\n"
	 "  list    the coordinator queue with progress\n"
	 "  import  released stubs for every object of the backend, under DESTDIR (root only);\n"
	 "          existing entries are skipped; --update refreshes size, mtime, owner and\n"
	 "          mode of released stubs whose object changed (files restored or changed in\n"
	 "          nacre are kept and named)\n"},
	{"recovery-status", cli_recovery_status,
	 "the MDS's recovery window, as Lustre's recovery_status",
	 "usage: nacre recovery-status [PATH|FSNAME]...\n"
	 "  Per MDT: status (COMPLETE or RECOVERING), when recovery started, how long it took or\n"
	 "  how long is left, clients connected/expected, replaying, completed and evicted,\n"
	 "  requests replayed and queued, last_transno. Without an argument, every mounted\n"
	 "  nacre file system. Answers at once even while the mount waits for its MDS.\n"
	 "OSTs are not listed: they keep no client state, so they have no recovery window.\n"},
	{"wb-recover", cli_wb_recover,
	 "send what a dead mount's write-back journal holds to the MDS",
	 "usage: nacre wb-recover [--key-file FILE] DIR\n"
	 "  DIR is a write-back journal directory (nacre-mount -o wb_journal_dir, default\n"
	 "  /var/lib/nacre/wb/<mount point, escaped>) that no running mount uses. Its changes\n"
	 "  the MDS did not answer are sent again, in order; those that no longer fit the\n"
	 "  namespace are logged by path and kept under DIR/conflicts/. The next nacre-mount\n"
	 "  on the same mount point does this by itself. Exit status: 0 all made, 3 some\n"
	 "  refused or unreadable, 1 not done (the journal is kept).\n"},
	{"fault", cli_fault, "arm or disarm fault points of a server (tests; Lustre's fail_loc)",
	 "usage: nacre fault set [OPTIONS] [SERVER] POINT=MODE[,SETTING...]|POINT MODE...\n"
	 "       nacre fault list [OPTIONS] [SERVER]\n"
	 "       nacre fault clear [OPTIONS] [SERVER]\n"
	 "  set    arm (or, with MODE off, disarm) points; several items may follow\n"
	 "  list   print the armed points, one per line\n"
	 "  clear  disarm every point\n"
	 "  SERVER          host:port of a nacre-mds or nacre-oss started with\n"
	 "                  --allow-fault-injection, or host:port:/FSNAME; default: the MDS of\n"
	 "                  --mds, or of the nacre mount the working directory is in (or the\n"
	 "                  only one below it)\n"
	 "  --key-file FILE the cluster key (default $NACRE_KEY_FILE)\n"
	 "  --fsname NAME   the file system the server serves (default: from SERVER or the MDS)\n"
	 "  --mds SPEC      a mount spec (host:port:/fsname) naming the default server\n"
	 "POINT: mds.commit_before mds.commit_after mds.db_full oss.write_before\n"
	 "       oss.write_after rpc.drop_request rpc.drop_reply rpc.delay_reply rpc.close_conn\n"
	 "MODE:  once, every:N, skip:N (every pass after the first N), prob:P (percent), off\n"
	 "SETTING: op=OPCODE (only that request type), ms=N (rpc.delay_reply), err=ERRNO,\n"
	 "       action=crash|error\n"
	 "e.g. nacre fault set mds.commit_after once\n"
	 "     nacre fault set 10.0.0.5:9410:/fs oss.write_before=every:10,err=5\n"
	 "The armed points are printed afterwards, one per line.\n"},
	{"key", cli_key, "issue, revoke and list client keys (the MDS's key table)",
	 "usage: nacre key issue NAME [--admin] -o FILE --mds SPEC [--key-file FILE]\n"
	 "       nacre key revoke NAME --mds SPEC [--key-file FILE]\n"
	 "       nacre key list --mds SPEC [--key-file FILE]\n"
	 "  issue   a new generation of NAME's key, written to FILE (mode 0600, never over an\n"
	 "          existing file); the previous generation stops working. Needs the cluster\n"
	 "          key: keys are derived from it, and none crosses the network\n"
	 "  revoke  NAME's key stops at once: every server closes its connections and refuses\n"
	 "          it (issue it again for a new key)\n"
	 "  list    every key: name, role, generation, active or revoked\n"
	 "  --admin          an admin key: it may also run admin requests (revoke, list, fault)\n"
	 "  -o, --output F   the key file to write (issue)\n"
	 "  --mds SPEC       the MDS: HOST:PORT:/FSNAME (default $NACRE_MDS)\n"
	 "  --key-file FILE  the cluster key, or an admin key for revoke and list (default\n"
	 "                   $NACRE_KEY_FILE)\n"
	 "A client mounts with its key file: nacre-mount SPEC DIR -o key_file=FILE.\n"},
	{"help", cmd_help, "list commands, or show the usage of one", "usage: nacre help [COMMAND]\n"},
};

static const struct cli_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

void cli_usage(FILE *f, const char *verb)
{
	const struct cli_cmd *c = find_cmd(verb);

	if (c)
		fputs(c->usage, f);
}

/* A mistyped verb: says so, with the closest verbs (git's "did you mean"); exit code 1. */
static int unknown_cmd(const char *verb)
{
	const char *names[ARRAY_SIZE(commands)];
	size_t near[3], n;

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		names[i] = commands[i].name;
	n = cli_suggest(verb, names, ARRAY_SIZE(commands), near, ARRAY_SIZE(near));
	if (n == 0) {
		cli_err("'%s' is not %s %s command: run `%s help` for the list", verb,
			cli_prog[0] == 'l' ? "an" : "a", cli_prog, cli_prog);
		return 1;
	}
	fprintf(stderr, "%s: '%s' is not %s %s command. Did you mean ", cli_prog, verb,
		cli_prog[0] == 'l' ? "an" : "a", cli_prog);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s'%s'", i == 0 ? "" : i + 1 == n ? " or " : ", ",
			commands[near[i]].name);
	fputs("?\n", stderr);
	return 1;
}

static void list_commands(FILE *f)
{
	fputs("usage: nacre COMMAND [OPTIONS] [ARGS]\n\ncommands:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\nRun `nacre COMMAND --help` for the options of one command.\n", f);
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		list_commands(stdout);
		return 0;
	}
	const struct cli_cmd *c = find_cmd(argv[1]);

	if (!c)
		return unknown_cmd(argv[1]);
	fputs(c->usage, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	cli_set_prog(argv[0]);
	if (argc < 2) {
		list_commands(stderr);
		return 1;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("nacre %s\n", NACRE_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		list_commands(stdout);
		return 0;
	}
	const struct cli_cmd *c = find_cmd(argv[1]);

	if (!c)
		return unknown_cmd(argv[1]);
	/* "--help" is handled here for every verb; verbs with their own -h (df) see it too. */
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			fputs(c->usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--") == 0)
			break;
	}
	return c->run(argc - 1, argv + 1);
}
