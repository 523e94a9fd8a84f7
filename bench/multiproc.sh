#!/usr/bin/env bash
# multiproc.sh: examples/bulktag with 1 and with 3 processes sharing one Redis
# limiter and token store, against one mock WeCom served over loopback HTTP
# (examples/mockserver, -latency 20ms). For each run it prints the wall time
# from start to the last exit, the successful marks (the mock's MarkCalls), the
# aggregate marks/s as a fraction of 5/latency = 250/s, both over that wall
# time (process start, gettoken and the tag lookup included) and over the
# marking phase (from the first copy's start of marking to the last copy's
# end, as the copies report), the mean round trip the copies report and the
# fraction of 5/(mean round trip), the limiter scripts Redis ran per mark
# (EVALSHA and EVAL calls in INFO commandstats, before and after the run: other
# clients of the same Redis would add theirs) and SETs per mark (a free lock's
# plain SET NX PX; also the token store's), and the mock's 45033 and 45009
# counts, max in flight and gettoken calls.
#
#	bash bench/multiproc.sh        # REDIS (default 127.0.0.1:6379), PORT (default 18099)
#	JITTER=5ms bash bench/multiproc.sh
#
# LATENCY (default 20ms) is the mock's service time; JITTER (default 0)
# spreads it uniformly over LATENCY±JITTER, keeping its mean, so that calls
# stop finishing in step. The bound 5/latency uses the mean, LATENCY.
#
# Every bulktag run is bounded by `timeout 120`; the mock server is stopped on
# exit, and the Redis keys written under this run's prefix are deleted.
set -euo pipefail

REDIS=${REDIS:-127.0.0.1:6379}
LATENCY=${LATENCY:-20ms}
JITTER=${JITTER:-0s}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
prefix="wecombench:mp:$(head -c6 /dev/urandom | od -An -tx1 | tr -d ' \n'):"
mockpid=""

redis_host=${REDIS%:*}
redis_port=${REDIS##*:}

# scripts: EVALSHA + EVAL calls Redis has run, a space, SET calls (0 0
# without redis-cli).
scripts() {
	if ! command -v redis-cli >/dev/null; then
		echo 0 0
		return
	fi
	redis-cli -h "$redis_host" -p "$redis_port" info commandstats |
		awk -F'[=,:]' '/^cmdstat_eval(sha)?:/ { n += $3 } /^cmdstat_set:/ { s += $3 } END { print n + 0, s + 0 }'
}

# shellcheck source=lib.sh
source "$here/lib.sh"
trap cleanup_run EXIT

echo "building examples/mockserver and examples/bulktag into $tmp"
(cd "$root" && go build -o "$tmp/mockserver" ./examples/mockserver && go build -o "$tmp/bulktag" ./examples/bulktag)

# A free loopback port, from PORT (default 18099) up.
port=$(free_port "${PORT:-18099}")
base="http://127.0.0.1:$port"

"$tmp/mockserver" -addr "127.0.0.1:$port" -latency "$LATENCY" -jitter "$JITTER" >"$tmp/mock.log" 2>&1 &
mockpid=$!
wait_mock "$base"
echo "mock WeCom at $base, latency $LATENCY ± $JITTER, pid $mockpid; Redis $REDIS, key prefix $prefix"

lat_ms=$(awk -v d="$LATENCY" 'BEGIN { if (d ~ /ms$/) { sub(/ms$/, "", d); print d } else if (d ~ /s$/) { sub(/s$/, "", d); print d * 1000 } }')

# run NAME PROCS CUSTOMERS [local]: PROCS copies of bulktag at once, each
# marking the same CUSTOMERS customers, with a fresh Redis prefix (cold token);
# with "local", one copy with the in-process limiter and no Redis, for reference.
run() {
	local name=$1 procs=$2 customers=$3 mode=${4:-redis}
	local p="${prefix}${name}:"
	local shared=(-redis "$REDIS" -redis-prefix "$p")
	[[ $mode == local ]] && shared=()
	local load
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	curl -fsS -X POST "$base/mock/reset-stats"
	local start end i rc=0 pids=() scripts0
	scripts0=$(scripts)
	start=$(date +%s.%N)
	for i in $(seq "$procs"); do
		timeout 120 "$tmp/bulktag" -base-url "$base" "${shared[@]}" \
			-customers "$customers" >"$tmp/$name.$i.out" 2>"$tmp/$name.$i.err" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			rc=1
			echo "copy $((i + 1)) failed:" >&2
			cat "$tmp/$name.$((i + 1)).out" "$tmp/$name.$((i + 1)).err" >&2
		fi
	done
	end=$(date +%s.%N)
	local scripts1 nscripts nsets
	scripts1=$(scripts)
	nscripts=$((${scripts1% *} - ${scripts0% *})) nsets=$((${scripts1#* } - ${scripts0#* }))
	[[ $mode == local ]] && nscripts=0
	local stats
	stats=$(curl -fsS "$base/mock/stats")
	echo
	echo "== $name: $procs process(es) x -customers $customers, limiter: $mode (exit status $rc; load average before: $load)"
	for i in $(seq "$procs"); do
		sed "s/^/   copy $i: /" "$tmp/$name.$i.out" | grep -E 'marks:|calls:|elapsed:|throughput:|failures:'
	done
	# The marking phase: first start to last end over the copies.
	local phase
	phase=$(marking_phase "$tmp/$name".*.out)
	# The copies' mean round trips, weighted by their attempts.
	local rtt
	rtt=$(cat "$tmp/$name".*.out | awk '
		/^calls:/ {
			n = $2; d = $NF
			if (d ~ /µs$/) { sub(/µs$/, "", d); ms = d / 1000 } else if (d ~ /ms$/) { sub(/ms$/, "", d); ms = d } else { sub(/s$/, "", d); ms = d * 1000 }
			sum += n * ms; tot += n
		}
		END { if (tot) printf "%.3f", sum / tot; else print "nan" }')
	python3 - "$stats" "$start" "$end" "$procs" "$customers" "$rtt" "$lat_ms" "$phase" "$nscripts" "$nsets" <<'EOF'
import json, sys
st = json.loads(sys.argv[1])
start, end = float(sys.argv[2]), float(sys.argv[3])
procs, customers, rtt, lat = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
phase, nscripts, nsets = float(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])
wall = end - start
marks = st["MarkCalls"]
rate = marks / wall
bound = 5 / (lat / 1000)
ref = st.get("Refusals") or {}
mif = (st.get("MaxInFlight") or {}).get("/cgi-bin/externalcontact/mark_tag", 0)
print(f"   wall time (start to last exit): {wall:.3f} s")
print(f"   successful marks (mock MarkCalls): {marks} of {procs * customers}")
print(f"   aggregate: {rate:.1f} marks/s = {100 * rate / bound:.1f}% of 5/latency = {bound:.0f}/s")
prate = marks / phase
print(f"   marking phase (first copy's start to last copy's end): {phase:.3f} s, {prate:.1f} marks/s = {100 * prate / bound:.1f}% of 5/latency")
print(f"   mean round trip reported by the copies: {rtt:.3f} ms; 5/(mean round trip) = {5000 / rtt:.1f}/s, achieved {100 * rate / (5000 / rtt):.1f}% of it")
if nscripts:
    print(f"   Redis: {nscripts} limiter scripts = {nscripts / marks:.2f} per mark, {nsets} SETs = {nsets / marks:.2f} per mark (the token store's among them)")
print(f"   mock: 45033 answered {ref.get('45033', 0)}, 45009 answered {ref.get('45009', 0)}, max in flight (mark_tag) {mif}, gettoken calls {st['GetTokenCalls']}")
EOF
	return $rc
}

status=0
run one 1 2000 || status=1
run three 3 1000 || status=1
# Reference: the same HTTP mock, one process, in-process limiter (no Redis):
# what loopback HTTP alone costs against the 5/latency bound.
run one-local 1 2000 local || status=1
exit $status
