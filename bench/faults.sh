#!/usr/bin/env bash
# faults.sh: what a Redis fault does to a fleet of bulktag copies sharing it.
# Three copies (COPIES) of examples/bulktag share a private Redis (no
# persistence, on a free loopback port from 6390 up) and one mock WeCom
# served over loopback HTTP (examples/mockserver, -latency 20ms). After
# BEFORE seconds (default 15) the Redis is either
#   MODE=restart (default): killed with SIGKILL and, DOWN seconds later
#                 (default 3), started again, empty, on the same port;
#   MODE=pause:   stopped with SIGSTOP for DOWN seconds (default 5), then
#                 SIGCONT;
# and the copies run AFTER seconds more (default 20) before they get SIGINT.
# A sampler reads the mock's successful marks every 0.25 s. Printed: the rate
# before the fault (its last 5 s), the time from Redis answering again to
# the first new mark, the rate from 2 s after that to the end and over the
# last 5 s, each as a fraction of the rate before, the mock's 45033 and 45009
# answers (they must be 0), and the exit status and last progress line of
# each copy (3 when the SIGINT stopped it with marks not started; a copy
# given fewer customers, BULKTAG_EXTRA="-customers 2000", ends on its own:
# 0 when every mark was done).
#
#	bash bench/faults.sh
#	MODE=pause bash bench/faults.sh
#	BIN=/tmp/old bash bench/faults.sh   # prebuilt bulktag and mockserver in BIN
#	BULKTAG_EXTRA=-fixed-limits bash bench/faults.sh
#
# The copies mark made-up customers (-customers 200000, more than they can
# reach), so they mark for the whole run; every process it started is
# stopped on exit, the Redis by its PID.
set -euo pipefail

MODE=${MODE:-restart}
COPIES=${COPIES:-3}
BEFORE=${BEFORE:-15}
AFTER=${AFTER:-20}
LATENCY=${LATENCY:-20ms}
if [[ $MODE == pause ]]; then DOWN=${DOWN:-5}; else DOWN=${DOWN:-3}; fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
pids=() redispid="" mockpid=""

cleanup() {
	for p in "${pids[@]}" $mockpid; do kill -INT "$p" 2>/dev/null || true; done
	sleep 1
	for p in "${pids[@]}" $mockpid; do kill -KILL "$p" 2>/dev/null || true; done
	if [[ -n $redispid ]]; then
		kill -CONT "$redispid" 2>/dev/null || true
		kill -KILL "$redispid" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	[[ -n ${KEEP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

bin=${BIN:-$tmp}
if [[ -z ${BIN:-} ]]; then
	(cd "$root" && go build -o "$tmp/mockserver" ./examples/mockserver && go build -o "$tmp/bulktag" ./examples/bulktag)
fi

rport=$(free_port 6390)
start_redis() {
	redis-server --bind 127.0.0.1 --port "$rport" --save "" --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
	redispid=$!
	for _ in $(seq 100); do
		redis-cli -p "$rport" ping >/dev/null 2>&1 && return
		sleep 0.05
	done
	echo "redis did not start" >&2
	exit 1
}
start_redis

mport=$(free_port 18200)
base="http://127.0.0.1:$mport"
"$bin/mockserver" -addr "127.0.0.1:$mport" -latency "$LATENCY" >"$tmp/mock.log" 2>&1 &
mockpid=$!
wait_mock "$base"

marks() { curl -fsS "$base/mock/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["MarkCalls"])'; }
t0=$(date +%s.%N)
now() { echo "$(date +%s.%N) - $t0" | bc; }

copies=()
for i in $(seq "$COPIES"); do
	# shellcheck disable=SC2086
	timeout --foreground $((BEFORE + DOWN + AFTER + 60)) "$bin/bulktag" -base-url "$base" -redis "127.0.0.1:$rport" \
		-redis-prefix "faults:" -customers 200000 -workers 32 -progress 1s ${BULKTAG_EXTRA:-} \
		>"$tmp/copy$i.out" 2>"$tmp/copy$i.err" &
	pids+=($!)
	copies+=($!)
done

(while :; do echo "$(now) $(marks)"; sleep 0.25; done) >"$tmp/samples" 2>/dev/null &
sampler=$!
pids+=("$sampler")

sleep "$BEFORE"
fault=$(now)
if [[ $MODE == pause ]]; then
	kill -STOP "$redispid"
	sleep "$DOWN"
	kill -CONT "$redispid"
else
	kill -KILL "$redispid"
	wait "$redispid" 2>/dev/null || true
	sleep "$DOWN"
	start_redis
fi
until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.01; done
back=$(now)
sleep "$AFTER"
kill "$sampler" 2>/dev/null || true
for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
status=()
for p in "${copies[@]}"; do
	st=0
	wait "$p" 2>/dev/null || st=$?
	status+=("$st")
done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()

stats=$(curl -fsS "$base/mock/stats")
echo "== MODE=$MODE: $COPIES copies, Redis ${MODE%e}ed ${DOWN}s at ${fault}s, answering again at ${back}s; ${BULKTAG_EXTRA:-}"
python3 - "$tmp/samples" "$fault" "$back" "$stats" <<'EOF'
import json, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 2]
fault, back = float(sys.argv[2]), float(sys.argv[3])
st = json.loads(sys.argv[4])
def at(t):  # marks at time t (the last sample before it)
    return max((m for s, m in rows if s <= t), default=0)
def rate(a, b):
    return (at(b) - at(a)) / (b - a) if b > a else float("nan")
before = rate(fault - 5, fault)
end = rows[-1][0]
base = at(back)
first = next((s for s, m in rows if s >= back and m > base), None)
print(f"rate before the fault (last 5 s): {before:.1f} marks/s")
print(f"first new mark after Redis answered again: " + (f"{first - back:.2f} s" if first else "none"))
a = rate(back + 2, end)
print(f"rate from 2 s after Redis answered to the end ({end - back - 2:.0f} s): {a:.1f} marks/s = {100 * a / before:.0f}% of before")
l = rate(end - 5, end)
print(f"rate over the last 5 s: {l:.1f} marks/s = {100 * l / before:.0f}% of before")
ref = st.get("Refusals") or {}
print(f"mock: 45033 answered {ref.get('45033', 0)}, 45009 answered {ref.get('45009', 0)}, successful marks {st['MarkCalls']}")
EOF
for i in $(seq "$COPIES"); do
	echo "copy $i: exit status ${status[$((i - 1))]}: $(tr '\r' '\n' <"$tmp/copy$i.err" | grep marked | tail -1)"
	grep -E '^(marks|failures):' "$tmp/copy$i.out" | sed 's/^/        /' || true
done
