#!/usr/bin/env bash
# hotpath.sh: what the Redis limiter costs on the main job, two builds side
# by side. Each build's examples/bulktag marks made-up customers against its
# own examples/mockserver (-latency 20ms, over loopback HTTP, started afresh
# for every run) with a private Redis (no persistence, on a free loopback
# port from 6390 up) shared by every run. The workloads, -workers 32 each:
#   w1    -customers 2000 -repeat 1, 1 process, Redis limiter
#   w2    -customers 1000 -repeat 2, 1 process, Redis limiter
#   w2x3  -customers 1000 -repeat 2, 3 processes at once, Redis limiter
#   ref   -customers 2000 -repeat 1, 1 process, in-process limiter (no Redis)
#   ref2  -customers 1000 -repeat 2, 1 process, in-process limiter (no Redis)
# Per run: the marking phase's marks/s (first copy's start of marking to the
# last copy's end, from the copies' unix: lines; marks are the mock's
# MarkCalls) and its fraction of 5/latency (250/s at 20ms); its ratio to the same
# build's reference of the same workload in the same round (w1/ref, w2/ref2,
# w2x3/ref2); from INFO commandstats before and after the run, the EVAL and
# EVALSHA calls per mark, the Redis CPU (usec) per mark of those and of SET
# (the plain SET NX PX that takes an uncontended lock; a SET inside a
# script, as a contended lock's, counts twice: an upper bound), the Redis
# process's whole CPU per mark (utime + stime from /proc: scripts, commands
# and the network, at 10 ms a tick), and all commands per mark (INFO
# excluded; Redis also counts the commands a script runs); and
# the mock's 45033 and 45009 answers and max in flight for mark_tag.
#
#	OLD=/tmp/old NEW=/tmp/new ROUNDS=3 bash bench/hotpath.sh
#	NEW=/tmp/new bash bench/hotpath.sh   # one build
#	bash bench/hotpath.sh                # one build, built from this tree
#
# OLD and NEW hold prebuilt bulktag and mockserver binaries (go build -o
# DIR/bulktag ./examples/bulktag; go build -o DIR/mockserver
# ./examples/mockserver). Within a round each workload runs on old, then on
# new. ROUNDS defaults to 3, LATENCY to 20ms, WORKLOADS to all five. Every
# bulktag is bounded by `timeout 180`. Exits non-zero if a run failed, marked
# fewer than it should, or the mock answered a 45033 or 45009. Everything it
# started is stopped by PID on exit; KEEP=1 keeps the temp dir.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
LATENCY=${LATENCY:-20ms}
WORKLOADS=${WORKLOADS:-w1 w2 w2x3 ref ref2}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
pids=() redispid="" mockpid=""
tag=$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')

alive() { # alive PID...: whether one of them runs (a zombie does not)
	local p
	for p; do [[ $(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null) =~ ^[^Z]$ ]] && return 0; done
	return 1
}
cleanup() { # TERM (timeout passes it on), 3 s, then KILL: bulktag (timeout's child), timeout, mock, Redis
	local p
	for p in "${pids[@]}" $mockpid; do kill -TERM "$p" 2>/dev/null || true; done
	for _ in $(seq 30); do alive "${pids[@]}" $mockpid || break; sleep 0.1; done
	for p in "${pids[@]}"; do pkill -KILL -P "$p" 2>/dev/null || true; done
	for p in "${pids[@]}" $mockpid $redispid; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${pids[@]}" $mockpid $redispid; do wait "$p" 2>/dev/null || true; done
	[[ -n ${KEEP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

names=() dirs=()
[[ -n ${OLD:-} ]] && { names+=(old); dirs+=("$OLD"); }
if [[ -z ${NEW:-} ]]; then
	echo "building examples/bulktag and examples/mockserver from $root into $tmp/new"
	(cd "$root" && go build -o "$tmp/new/bulktag" ./examples/bulktag && go build -o "$tmp/new/mockserver" ./examples/mockserver)
	NEW=$tmp/new
fi
names+=(new) dirs+=("$NEW")
for d in "${dirs[@]}"; do
	[[ -x $d/bulktag && -x $d/mockserver ]] || { echo "no bulktag and mockserver in $d" >&2; exit 2; }
done

rport=$(free_port 6390)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
redispid=$!
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -p "$rport" ping >/dev/null
lat_ms=$(awk -v d="$LATENCY" 'BEGIN { if (d ~ /ms$/) { sub(/ms$/, "", d); print d } else { sub(/s$/, "", d); print d * 1000 } }')
echo "Redis $(redis-server --version | awk '{print $3}') at 127.0.0.1:$rport (pid $redispid); mock latency $LATENCY; builds: ${names[*]}; rounds: $ROUNDS"

# cmdstats: "EVAL+EVALSHA calls, their usec and SET's, calls of every
# command but INFO, and the Redis process's CPU (utime + stime, in clock
# ticks)".
cmdstats() {
	local ticks
	ticks=$(awk '{ print $14 + $15 }' "/proc/$redispid/stat")
	redis-cli -p "$rport" info commandstats | tr -d '\r' | awk -F'[=,:]' -v ticks="$ticks" '
		/^cmdstat_/ { if ($1 != "cmdstat_info") all += $3 }
		/^cmdstat_eval(sha)?:/ { n += $3; us += $5 }
		/^cmdstat_set:/ { us += $5 }
		END { printf "%d %d %d %d\n", n, us, all, ticks }'
}

start_mock() { # start_mock DIR: a fresh mock from DIR on a free port; sets base
	local port
	port=$(free_port 18300)
	base="http://127.0.0.1:$port"
	"$1/mockserver" -addr "127.0.0.1:$port" -latency "$LATENCY" >"$tmp/mock.log" 2>&1 &
	mockpid=$!
	wait_mock "$base"
}
stop_mock() {
	kill "$mockpid" 2>/dev/null || true
	wait "$mockpid" 2>/dev/null || true
	mockpid=""
}

# run BUILD DIR ROUND WORKLOAD: one run; appends a JSON line to $tmp/results.
run() {
	local build=$1 dir=$2 round=$3 wl=$4 procs=1 customers=2000 repeat=1 redis=yes
	case $wl in
	w1) ;;
	w2) customers=1000 repeat=2 ;;
	w2x3) customers=1000 repeat=2 procs=3 ;;
	ref) redis="" ;;
	ref2) customers=1000 repeat=2 redis="" ;;
	*) echo "unknown workload $wl" >&2; return 1 ;;
	esac
	local name="$build.$round.$wl"
	start_mock "$dir"
	local args=(-base-url "$base" -workers 32 -customers "$customers" -repeat "$repeat")
	[[ -n $redis ]] && args+=(-redis "127.0.0.1:$rport" -redis-prefix "hotpath:$tag:$name:")
	local before after i rc=0
	before=$(cmdstats)
	pids=()
	for i in $(seq "$procs"); do
		timeout 180 "$dir/bulktag" "${args[@]}" >"$tmp/$name.$i.out" 2>"$tmp/$name.$i.err" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			rc=1
			echo "$name: copy $((i + 1)) failed:" >&2
			cat "$tmp/$name.$((i + 1)).out" "$tmp/$name.$((i + 1)).err" >&2
		fi
	done
	pids=()
	after=$(cmdstats)
	local stats phase
	stats=$(curl -fsS "$base/mock/stats")
	stop_mock
	phase=$(marking_phase "$tmp/$name".*.out)
	python3 - "$tmp/results" "$build" "$round" "$wl" "$procs" "$((procs * customers * repeat))" "$rc" \
		"$phase" "$lat_ms" "$before" "$after" "$stats" <<'EOF' || rc=1
import json, os, sys
tick = os.sysconf("SC_CLK_TCK")
out, build, rnd, wl, procs, want, rc, phase, lat = sys.argv[1:10]
b, a = [list(map(int, s.split())) for s in sys.argv[10:12]]
st = json.loads(sys.argv[12])
marks, phase = st["MarkCalls"], float(phase)
ref = st.get("Refusals") or {}
rate = marks / phase if phase > 0 else float("nan")
r = dict(build=build, round=int(rnd), wl=wl, procs=int(procs), want=int(want), rc=int(rc),
         marks=marks, phase=phase, rate=rate, pct=100 * rate / (5000 / float(lat)),
         scripts=a[0] - b[0], usec=a[1] - b[1], cmds=a[2] - b[2],
         rcpu=(a[3] - b[3]) * 1e6 / tick,
         r45033=ref.get("45033", 0), r45009=ref.get("45009", 0),
         mif=(st.get("MaxInFlight") or {}).get("/cgi-bin/externalcontact/mark_tag", 0))
open(out, "a").write(json.dumps(r) + "\n")
m = marks or float("nan")
print(f"{build:>4} round {rnd} {wl:<5} exit {rc}: {marks}/{want} marks in {phase:.3f} s, {rate:.1f} marks/s"
      f" = {r['pct']:.1f}% of 5/latency; scripts/mark {r['scripts'] / m:.2f}, script+SET µs/mark {r['usec'] / m:.1f},"
      f" Redis process µs/mark {r['rcpu'] / m:.0f},"
      f" cmds/mark {r['cmds'] / m:.2f}; 45033 {r['r45033']}, 45009 {r['r45009']}, max in flight {r['mif']}")
EOF
	return $rc
}

status=0
for round in $(seq "$ROUNDS"); do
	for wl in $WORKLOADS; do
		for i in "${!names[@]}"; do
			run "${names[$i]}" "${dirs[$i]}" "$round" "$wl" || status=1
		done
	done
done

echo
python3 - "$tmp/results" <<'EOF' || status=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["build"], r["round"], r["wl"]): r for r in rows}
refof = {"w1": "ref", "w2": "ref2", "w2x3": "ref2"}
print("| build | round | workload | procs | marks | phase s | marks/s | % of 5/lat | vs in-process | scripts/mark | script+SET µs/mark | Redis process µs/mark | cmds/mark | 45033 | 45009 | max in flight | exit |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
bad = False
for r in rows:
    m = r["marks"] or float("nan")
    ref = by.get((r["build"], r["round"], refof.get(r["wl"], "")))
    vs = f"{r['rate'] / ref['rate']:.3f}" if ref else "-"
    print(f"| {r['build']} | {r['round']} | {r['wl']} | {r['procs']} | {r['marks']}/{r['want']} | {r['phase']:.3f} | {r['rate']:.1f} | {r['pct']:.1f}% | {vs} | "
          + f"{r['scripts'] / m:.2f} | {r['usec'] / m:.1f} | {r.get('rcpu', float('nan')) / m:.0f} | {r['cmds'] / m:.2f}"
          + f" | {r['r45033']} | {r['r45009']} | {r['mif']} | {r['rc']} |")
    bad |= r["rc"] != 0 or r["marks"] != r["want"] or r["r45033"] > 0 or r["r45009"] > 0
sys.exit(1 if bad else 0)
EOF
exit $status
