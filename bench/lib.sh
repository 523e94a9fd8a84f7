# lib.sh: shell helpers the bench scripts share (source it).

# free_port FROM: the first loopback port from FROM up that nothing listens on.
free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

# wait_mock BASE [TRIES]: waits, a try each 0.05 s (100 tries unless
# TRIES), until the mock WeCom at BASE answers /mock/stats; fails if it
# does not by then.
wait_mock() {
	local i
	for ((i = 0; i < ${2:-100}; i++)); do
		curl -fsS "$1/mock/stats" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	curl -fsS "$1/mock/stats" >/dev/null
}

# marking_phase FILE...: seconds from the first copy's start of marking to
# the last copy's end, from bulktag's "unix: start end" lines ("nan" if none).
marking_phase() {
	cat "$@" | awk '
		/^unix:/ { if (first == "" || $2 < first) first = $2; if ($3 > last) last = $3 }
		END { if (first != "") printf "%.6f", last - first; else print "nan" }'
}

# cleanup_run: stops the mock ($mockpid), deletes the Redis keys under
# $prefix on $redis_host:$redis_port and removes $tmp: the EXIT trap of a
# script that runs copies against one mock and one Redis.
cleanup_run() {
	if [[ -n $mockpid ]]; then
		kill "$mockpid" 2>/dev/null || true
		wait "$mockpid" 2>/dev/null || true
	fi
	if command -v redis-cli >/dev/null; then
		redis-cli -h "$redis_host" -p "$redis_port" --scan --pattern "${prefix}*" |
			xargs -r redis-cli -h "$redis_host" -p "$redis_port" del >/dev/null || true
	fi
	rm -rf "$tmp"
}
