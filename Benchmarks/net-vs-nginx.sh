#!/usr/bin/env bash
# SpinNet's fixed-response server vs nginx `return 204`, under the same wrk settings in
# the same run, on loopback. Prints requests/s of each and the ratio.
#
#   Benchmarks/net-vs-nginx.sh [duration=10s] [connections=64] [threads=2]
#
# Environment: MODE=tls serves both over TLS (a throw-away self-signed P-256
# certificate made with the openssl CLI); SPIN_QUEUES=N sets SpinNet's event queue
# count (default: one per core); SPIN_PORT / NGINX_PORT pick the loopback ports.
#
# ROUNDS=N alternating rounds (default 3; each wrk run lasts `duration`).
# Needs: wrk, nginx (apt-get install -y wrk nginx), a release build of
# spin-net-benchmark (built here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=${1:-10s}
connections=${2:-64}
threads=${3:-2}
spin_port=${SPIN_PORT:-18080}
nginx_port=${NGINX_PORT:-18081}

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$nginx_bin" ] || { echo "nginx is missing: apt-get install -y nginx" >&2; exit 1; }

swift build -c release --product spin-net-benchmark >/dev/null
bin=$(swift build -c release --show-bin-path)/spin-net-benchmark

work=$(mktemp -d)
spin_pid=""
nginx_started=""
cleanup() {
    [ -n "$spin_pid" ] && kill "$spin_pid" 2>/dev/null || true
    [ -n "$nginx_started" ] && "$nginx_bin" -p "$work" -c "$work/nginx.conf" -s stop 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/logs"
mode=${MODE:-plain}
scheme=http
listen_extra=""
tls_block=""
spin_args=(--host 127.0.0.1 --port "$spin_port")
[ -n "${SPIN_QUEUES:-}" ] && spin_args+=(--queues "$SPIN_QUEUES")
if [ "$mode" = tls ]; then
    scheme=https
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=localhost -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
    listen_extra=" ssl"
    tls_block="ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem; ssl_protocols TLSv1.2 TLSv1.3;"
    spin_args+=(--certificate "$work/cert.pem" --key "$work/key.pem")
fi
cat >"$work/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    server {
        listen 127.0.0.1:$nginx_port$listen_extra reuseport;
        $tls_block
        location / { return 204; }
    }
}
CONF
"$nginx_bin" -p "$work" -c "$work/nginx.conf"
nginx_started=1

"$bin" "${spin_args[@]}" >"$work/spin.out" 2>&1 &
spin_pid=$!
for _ in $(seq 50); do grep -q listening "$work/spin.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$work/spin.out" || { cat "$work/spin.out"; exit 1; }

rps() { awk '/Requests\/sec/ { print $2 }'; }
settings=(-t "$threads" -c "$connections" -d "$duration" --latency)
echo "wrk ${settings[*]} ($mode) on $(nproc) cores; $(head -1 "$work/spin.out")"

# Warm both up, then alternate rounds (spin, nginx, spin, nginx, ...): on a shared
# machine the load drifts, and alternating exposes both servers to the same drift.
# Each round's ratio is printed; the summary is the median of the per-round ratios.
wrk -t1 -c8 -d2s "$scheme://127.0.0.1:$spin_port/" >/dev/null
wrk -t1 -c8 -d2s "$scheme://127.0.0.1:$nginx_port/" >/dev/null
rounds=${ROUNDS:-3}
ratios=()
errors=""
for round in $(seq "$rounds"); do
    spin_out=$(wrk "${settings[@]}" "$scheme://127.0.0.1:$spin_port/")
    nginx_out=$(wrk "${settings[@]}" "$scheme://127.0.0.1:$nginx_port/")
    spin=$(rps <<<"$spin_out")
    nginx=$(rps <<<"$nginx_out")
    spin_p99=$(awk '$1=="99%" { print $2 }' <<<"$spin_out")
    nginx_p99=$(awk '$1=="99%" { print $2 }' <<<"$nginx_out")
    ratio=$(awk -v a="$spin" -v b="$nginx" 'BEGIN { printf "%.2f", a / b }')
    ratios+=("$ratio")
    printf 'round %d: spin-net %10s req/s (p99 %s)   nginx %10s req/s (p99 %s)   ratio %s\n' \
        "$round" "$spin" "$spin_p99" "$nginx" "$nginx_p99" "$ratio"
    errors+=$(grep -E "Socket errors|Non-2xx" <<<"$spin_out" | sed 's/^/spin-net: /' || true)
    errors+=$(grep -E "Socket errors|Non-2xx" <<<"$nginx_out" | sed 's/^/nginx: /' || true)
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
echo "median ratio spin-net/nginx over $rounds rounds: $median"
[ -z "$errors" ] || echo "$errors"
