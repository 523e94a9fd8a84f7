#!/usr/bin/env bash
# providers.sh: a service provider's fleet at scale. A mock WeCom served
# over loopback HTTP (examples/mockserver -suite-corps, a fresh one for each
# run) holds a suite and CORPS corps, with WeCom's per-IP window of an API (IP_PER_MINUTE, across
# every corp, all from 127.0.0.1). For each run, with a fresh Redis key
# prefix: one examples/provider -install receives the suite_ticket and the
# CORPS create_auth callbacks on its command URL and keeps the permanent
# codes in Redis; then PROCS copies of examples/provider, sharing that Redis
# (limiter, token store, permanent codes), each build the clients of their
# share of the idle corps (heap per idle corp) and tag their share (-shard
# k/PROCS) of the BUSY corps, all at once, CUSTOMERS customers each.
#
# Per run it prints: each corp's marks a second over its bound 5/LATENCY
# (5 mark_tag in flight per corp, WeCom's 45033 beyond), least and median
# over the BUSY corps, their marking time over their bound and how long after
# a corp's marking began its first mark_tag was sent (median, p90, max: the
# first round's cost); the total marks a second over the tagging phase
# (first copy's start to last copy's end, get_corp_token and add_corp_tag
# included); the mock's 45033 and 45009 answers (the mock refuses past its
# per-IP window, so 45009 0 means the window was never exceeded), its most
# mark_tag in flight per corp and its get_corp_token calls (one per busy
# corp: the idle ones fetch none); the copies' heap per idle corp's client;
# the limiter scripts Redis ran per mark (INFO commandstats: other clients
# of the same Redis add theirs).
#
#	bash bench/providers.sh      # REDIS (default 127.0.0.1:6379), PORT (default 18199)
#	RUNS=3 LATENCY=500ms bash bench/providers.sh
#	LOCAL=1 bash bench/providers.sh   # each run followed by one with -local-limits
#
# Defaults: CORPS=1000 BUSY=200 PROCS=3 CUSTOMERS=50 LATENCY=1s RUNS=2
# IP_PER_MINUTE=40000 (the third-party window); JITTER (default 0) spreads
# the mock's service time over LATENCY±JITTER, so that the calls of a round
# stop ending together (the bound keeps the mean, LATENCY). Every provider run is
# bounded by `timeout 300`; the mock is stopped by its PID on exit, and the
# Redis keys written under this script's prefix are deleted.
set -euo pipefail

REDIS=${REDIS:-127.0.0.1:6379}
CORPS=${CORPS:-1000}
BUSY=${BUSY:-200}
PROCS=${PROCS:-3}
CUSTOMERS=${CUSTOMERS:-50}
LATENCY=${LATENCY:-1s}
JITTER=${JITTER:-0s}
RUNS=${RUNS:-2}
IP_PER_MINUTE=${IP_PER_MINUTE:-40000}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
prefix="wecombench:prov:$(head -c6 /dev/urandom | od -An -tx1 | tr -d ' \n'):"
mockpid=""

redis_host=${REDIS%:*}
redis_port=${REDIS##*:}

# scripts: EVALSHA + EVAL calls Redis has run (0 without redis-cli).
scripts() {
	if ! command -v redis-cli >/dev/null; then
		echo 0
		return
	fi
	redis-cli -h "$redis_host" -p "$redis_port" info commandstats |
		awk -F'[=,:]' '/^cmdstat_eval(sha)?:/ { n += $3 } END { print n + 0 }'
}

# redis_cpu: seconds of CPU Redis has used (0 without redis-cli).
redis_cpu() {
	if ! command -v redis-cli >/dev/null; then
		echo 0
		return
	fi
	redis-cli -h "$redis_host" -p "$redis_port" info cpu | tr -d '\r' |
		awk -F: '/^used_cpu_(sys|user):/ { n += $2 } END { printf "%.3f", n }'
}

# proc_cpu PID: seconds of CPU process PID has used.
proc_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$1/stat"
}

# shellcheck source=lib.sh
source "$here/lib.sh"
trap cleanup_run EXIT

echo "building examples/mockserver and examples/provider into $tmp"
(cd "$root" && go build -o "$tmp/mockserver" ./examples/mockserver && go build -o "$tmp/provider" ./examples/provider)

port=$(free_port "${PORT:-18199}")
base="http://127.0.0.1:$port"

# start_mock: a fresh mock WeCom on $port, its pid in $mockpid. Each run
# gets its own: the mock's per-IP window outlives a run, and a run's fresh
# key prefix knows nothing of what the runs before it spent (six runs of
# 10,000 marks within a minute would exceed the window of 40,000).
start_mock() {
	if [[ -n $mockpid ]]; then
		kill "$mockpid" 2>/dev/null || true
		wait "$mockpid" 2>/dev/null || true
	fi
	"$tmp/mockserver" -addr "127.0.0.1:$port" -latency "$LATENCY" -jitter "$JITTER" -suite-corps "$CORPS" -suite-customers "$CUSTOMERS" \
		-ip-per-minute "$IP_PER_MINUTE" >>"$tmp/mock.log" 2>&1 &
	mockpid=$!
	wait_mock "$base" 200
}

echo "mock WeCom at $base (a fresh one for each run), latency $LATENCY ± $JITTER, $CORPS corps of $CUSTOMERS customers, per-IP window $IP_PER_MINUTE a minute; Redis $REDIS, key prefix $prefix"

# run N [local]: install the corps under a fresh prefix, then PROCS copies
# tag; with "local", each copy holds the limits in process (-local-limits),
# for reference.
run() {
	local name=run$1${2:+-$2}
	local extra=()
	[[ ${2:-} == local ]] && extra=(-local-limits)
	local p="${prefix}${name}:"
	local common=(-base-url "$base" -redis "$REDIS" -redis-prefix "$p" -corps "$CORPS" -latency "$LATENCY" -ip-per-minute "$IP_PER_MINUTE")
	start_mock
	timeout 300 "$tmp/provider" "${common[@]}" -install >"$tmp/$name.install" 2>&1 || {
		cat "$tmp/$name.install" >&2
		return 1
	}
	local load
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	curl -fsS -X POST "$base/mock/reset-stats"
	local k rc=0 pids=() scripts0 scripts1 rcpu0 rcpu1 mcpu0 mcpu1
	scripts0=$(scripts) rcpu0=$(redis_cpu) mcpu0=$(proc_cpu "$mockpid")
	for k in $(seq 0 $((PROCS - 1))); do
		/usr/bin/time -f "%U %S" -o "$tmp/$name.$k.cpu" timeout 300 "$tmp/provider" "${common[@]}" -busy "$BUSY" -customers "$CUSTOMERS" -shard "$k/$PROCS" "${extra[@]}" \
			>"$tmp/$name.$k.out" 2>"$tmp/$name.$k.err" &
		pids+=($!)
	done
	for k in "${!pids[@]}"; do
		if ! wait "${pids[$k]}"; then
			rc=1
			echo "copy $k failed:" >&2
			tail -n 5 "$tmp/$name.$k.out" "$tmp/$name.$k.err" >&2
		fi
	done
	scripts1=$(scripts) rcpu1=$(redis_cpu) mcpu1=$(proc_cpu "$mockpid")
	local cpu
	cpu=$(cat "$tmp/$name".*.cpu | awk '{ n += $1 + $2 } END { printf "%.2f", n }')
	local stats phase
	stats=$(curl -fsS "$base/mock/stats")
	phase=$(marking_phase "$tmp/$name".*.out)
	echo
	echo "== $name: $(cat "$tmp/$name.install"); limits ${2:-on Redis}; $PROCS copies x $BUSY busy corps of $CORPS (exit status $rc; load average before: $load)"
	cat "$tmp/$name".*.out >"$tmp/$name.all"
	python3 - "$stats" "$phase" "$((scripts1 - scripts0))" "$LATENCY" "$BUSY" "$CUSTOMERS" "$tmp/$name.all" \
		"$cpu" "$(awk -v a="$mcpu0" -v b="$mcpu1" 'BEGIN { print b - a }')" "$(awk -v a="$rcpu0" -v b="$rcpu1" 'BEGIN { print b - a }')" <<'EOF'
import json, re, statistics, sys
st = json.loads(sys.argv[1])
phase, nscripts, lat, busy, customers = float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
def seconds(d):
    for unit, f in (("ms", 1e-3), ("s", 1), ("m", 60)):
        if d.endswith(unit) and d[:-len(unit)].replace(".", "").isdigit():
            return float(d[:-len(unit)]) * f
    raise ValueError(d)
lat_s = seconds(lat)
pct, heap, tagged, excess, first = [], [], 0, [], []
for line in open(sys.argv[7]):
    m = re.match(r"corp (\S+): (\d+) tagged.* ([\d.]+)% of 5/latency", line)
    if m:
        n, p = int(m.group(2)), float(m.group(3))
        pct.append(p)
        tagged += n
        if p > 0:  # the corp's marking time over its bound, ceil(n/5) rounds of the latency
            excess.append(n / (p / 100 * 5 / lat_s) - (n + 4) // 5 * lat_s)
    m = re.match(r"corp .* first mark_tag sent (\S+) after marking began", line)
    if m:
        first.append(seconds(m.group(1)))
    m = re.match(r"idle:\s+(\d+) idle corps' clients built, (-?\d+) bytes", line)
    if m:
        heap.append((int(m.group(1)), int(m.group(2))))
ref = st.get("Refusals") or {}
marks = st["MarkCalls"]
mif = (st.get("MaxInFlight") or {}).get("/cgi-bin/externalcontact/mark_tag", 0)
calls = st.get("Calls") or {}
print(f"   corps tagging: {len(pct)} of {busy}, {tagged} of {busy * customers} customers tagged (mock MarkCalls {marks})")
if pct:
    below = sum(1 for p in pct if p < 95)
    print(f"   each corp's marks/s over 5/{lat}: least {min(pct):.1f}%, median {statistics.median(pct):.1f}%, {below} corps below 95%")
    ex = sorted(excess) or [0.0]
    print(f"   each corp's marking time over its bound ({(customers + 4) // 5} rounds of {lat}): median {1000 * statistics.median(ex):.0f} ms, p90 {1000 * ex[len(ex) * 9 // 10]:.0f} ms, max {1000 * ex[-1]:.0f} ms")
if first:
    fs = sorted(first)
    print(f"   each corp's first mark_tag sent after its marking began: median {1000 * statistics.median(fs):.0f} ms, p90 {1000 * fs[len(fs) * 9 // 10]:.0f} ms, max {1000 * fs[-1]:.0f} ms")
print(f"   tagging phase (first copy's start to last copy's end): {phase:.3f} s, {marks / phase:.0f} marks/s in total")
print(f"   mock: 45033 answered {ref.get('45033', 0)}, 45009 answered {ref.get('45009', 0)}, max mark_tag in flight per corp {mif}, get_corp_token calls {calls.get('/cgi-bin/service/get_corp_token', 0)}, get_suite_token calls {calls.get('/cgi-bin/service/get_suite_token', 0)}")
if heap:
    n = sum(h[0] for h in heap)
    print(f"   heap per idle corp's client: {sum(h[0] * h[1] for h in heap) / n:.0f} bytes (mean over {n} idle corps in {len(heap)} copies; per copy {', '.join(str(h[1]) for h in heap)})")
print(f"   CPU while tagging: copies {float(sys.argv[8]):.2f} s (their whole runs), mock {float(sys.argv[9]):.2f} s, Redis {float(sys.argv[10]):.2f} s; {phase:.1f} s of 2 cores' {2 * phase:.1f}")
if nscripts and marks:
    print(f"   Redis: {nscripts} limiter scripts = {nscripts / marks:.2f} per mark")
EOF
	return $rc
}

status=0
for r in $(seq "$RUNS"); do
	run "$r" || status=1
	if [[ -n ${LOCAL:-} ]]; then
		run "$r" local || status=1
	fi
done
exit $status
