#!/bin/bash
# bench/datapath.sh - the client data path against the local disk, in one run.
#
#   bench/datapath.sh BEFORE_BIN_DIR AFTER_BIN_DIR [REPS]
#
# For each configuration (local disk; nacre 1 and 4 OSTs with the binaries of
# BEFORE_BIN_DIR and of AFTER_BIN_DIR, each brought up with `nacre up`, 4-OST runs striped
# over all OSTs) it runs REPS times (default 3) and prints the median in MB/s of:
#   dd write   dd if=/dev/zero of=F bs=1M count=1024 conv=fsync
#   dd read    drop_caches; dd if=F of=/dev/null bs=1M
#   fio read   drop_caches; fio --rw=read --bs=4M --direct=1 --ioengine=libaio --iodepth=32
#   fio write  fio --rw=write --bs=1M --end_fsync=1 (buffered)
# Needs root (drop_caches, FUSE). Work files go to $DP_DIR (default /var/tmp/nacre-dp),
# on the same disk as the OSTs.
set -u
BEFORE=${1:?before bin dir}
AFTER=${2:?after bin dir}
REPS=${3:-3}
W=${DP_DIR:-/var/tmp/nacre-dp}
PORT=${DP_PORT:-9760}
SIZE_MB=1024

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

dd_mbs() { # prints MB/s from dd's last line
	awk '/copied/ { v = $(NF-1); u = $NF; if (u ~ /^GB/) v *= 1000; if (u ~ /^kB/) v /= 1000; print v }'
}

fio_mbs() { # prints MB/s from fio json on stdin
	/usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(round((j["read"]["bw_bytes"]+j["write"]["bw_bytes"])/1e6,1))'
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A R

measure() { # config-name directory
	local name=$1 dir=$2 f=$2/dp.dat
	for _ in $(seq "$REPS"); do
		rm -f "$f"; drop
		R[$name,ddw]+="$(dd if=/dev/zero of="$f" bs=1M count=$SIZE_MB conv=fsync 2>&1 | dd_mbs) "
		drop
		R[$name,ddr]+="$(dd if="$f" of=/dev/null bs=1M 2>&1 | dd_mbs) "
		drop
		R[$name,fior]+="$(fio --name=r --filename="$f" --rw=read --bs=4M --direct=1 \
			--ioengine=libaio --iodepth=32 --size=${SIZE_MB}M --output-format=json | fio_mbs) "
		rm -f "$f"; drop
		R[$name,fiow]+="$(fio --name=w --filename="$f" --rw=write --bs=1M --end_fsync=1 \
			--size=${SIZE_MB}M --output-format=json | fio_mbs) "
	done
	rm -f "$f"
}

nacre_run() { # config-name bindir osts
	local name=$1 bin=$2 osts=$3 c=$W/cluster-$1
	rm -rf "$c"
	"$bin/nacre" up --dir "$c" --osts "$osts" --port "$PORT" --mount "$c/mnt" > "$c.up.log" 2>&1 ||
		{ echo "nacre up failed: $(cat "$c.up.log")" >&2; return 1; }
	[ "$osts" -gt 1 ] && "$bin/nacre" setstripe -c -1 "$c/mnt" > /dev/null
	measure "$name" "$c/mnt"
	"$bin/nacre" down --dir "$c" > /dev/null 2>&1
	rm -rf "$c"
}

mkdir -p "$W/local"
measure local "$W/local"
nacre_run before-1 "$BEFORE" 1
nacre_run after-1 "$AFTER" 1
nacre_run before-4 "$BEFORE" 4
nacre_run after-4 "$AFTER" 4

printf '| config | dd write | dd read | fio read 4M direct qd32 | fio write 1M |\n'
printf '|---|---|---|---|---|\n'
for n in local before-1 after-1 before-4 after-4; do
	printf '| %s |' "$n"
	for t in ddw ddr fior fiow; do
		printf ' %s |' "$(echo "${R[$n,$t]:-}" | tr ' ' '\n' | grep . | median)"
	done
	printf '   <!-- runs: %s / %s / %s / %s -->\n' "${R[$n,ddw]:-}" "${R[$n,ddr]:-}" "${R[$n,fior]:-}" "${R[$n,fiow]:-}"
done
