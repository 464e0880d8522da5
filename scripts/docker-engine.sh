#!/usr/bin/env bash
# Make a Docker engine reachable for rlm-sandbox-docker (its tests, CI, or a bare Debian machine). Idempotent.
#
#   eval "$(scripts/docker-engine.sh)"     # start (or find) an engine; prints `export DOCKER_HOST=…` on stdout
#   scripts/docker-engine.sh stop          # stop the daemon THIS script started (by the PID in its pidfile)
#   scripts/docker-engine.sh status        # exit 0 when our daemon answers
#
# If an engine already answers (at $DOCKER_HOST, at our own socket, or at the default socket), nothing is
# started. Otherwise, as root: installs `docker.io` and `debootstrap` with apt-get when missing, then starts
# `dockerd` with its data root, exec root, pidfile, log and unix socket under $RLM_DOCKER_ROOT (default
# /tmp/rlm-docker), and waits (bounded: $RLM_DOCKER_WAIT seconds, default 60) until it answers.
#
# The host's network is left alone: --iptables=false --ip-forward=false --bridge=none (no bridge, no iptables
# rules, no sysctl change). rlm's containers run with network_mode=none, which needs no bridge.
# Everything but the final `export` line goes to stderr.
set -euo pipefail

root=${RLM_DOCKER_ROOT:-/tmp/rlm-docker}
wait_s=${RLM_DOCKER_WAIT:-60}
sock="unix://$root/docker.sock"
pidfile="$root/dockerd.pid"
log="$root/dockerd.log"

say() { echo "docker-engine: $*" >&2; }

answers() {  # answers HOST: does an engine answer there?
  command -v docker >/dev/null 2>&1 || return 1
  DOCKER_HOST="$1" timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

our_pid() {  # the PID of the daemon we started, if it is still running
  [ -s "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  [ -d "/proc/$pid" ] && grep -q dockerd "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

case "${1:-start}" in
  stop)
    if pid=$(our_pid); then
      say "stopping dockerd (pid $pid)"
      kill "$pid"
      for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.2; done
      [ -d "/proc/$pid" ] && { say "dockerd did not stop in 20 s: killing it"; kill -9 "$pid" || true; }
      rm -f "$pidfile"
    else
      say "no dockerd started by this script is running"
    fi
    exit 0 ;;
  status)
    answers "$sock" ;;
  start) ;;
  *) say "usage: $0 [start|stop|status]"; exit 2 ;;
esac

for candidate in "${DOCKER_HOST:-}" "$sock" "unix:///var/run/docker.sock"; do
  if [ -n "$candidate" ] && answers "$candidate"; then
    say "an engine already answers at $candidate"
    echo "export DOCKER_HOST=$candidate"
    exit 0
  fi
done

if [ "$(id -u)" != 0 ]; then
  say "no Docker engine answers and this is not root: start an engine (e.g. 'sudo systemctl start docker'), or run this script as root"
  exit 1
fi

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  wait=(-o DPkg::Lock::Timeout=600)  # another install (a test's browser) may hold the lock: wait for it
  if ! apt-get "${wait[@]}" install -y -q --no-install-recommends "${missing[@]}" >&2; then
    apt-get "${wait[@]}" update -q >&2
    apt-get "${wait[@]}" install -y -q --no-install-recommends "${missing[@]}" >&2
  fi
fi

mkdir -p "$root/data" "$root/exec"
chmod 711 "$root"
if ! our_pid >/dev/null; then
  say "starting dockerd (socket $sock, log $log)"
  # setsid: the daemon outlives this script and is not in its process group; stdin closed, output to the log
  setsid dockerd \
    --host "$sock" --data-root "$root/data" --exec-root "$root/exec" --pidfile "$pidfile" \
    --iptables=false --ip-forward=false --ip-masq=false --bridge=none --userland-proxy=false \
    </dev/null >"$log" 2>&1 &
fi

deadline=$((SECONDS + wait_s))
until answers "$sock"; do
  if [ $SECONDS -ge $deadline ]; then
    say "dockerd did not answer within ${wait_s} s; the end of $log:"
    tail -n 20 "$log" >&2 || true
    exit 1
  fi
  sleep 0.5
done
say "dockerd answers at $sock"
echo "export DOCKER_HOST=$sock"
