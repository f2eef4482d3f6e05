#!/usr/bin/env bash
# Hosts on one machine (issue 33): K network namespaces vgh0..vghK-1, each with one
# veth "eth0" (10.77.0.(i+1)/24) whose peer "vI" is a port of bridge br0 in a namespace
# of its own (vgbr). No address and no interface in the root namespace. Each host's
# egress is shaped with tc tbf, so every flow is shaped at its sender. Root only.
#
#   scripts/multihost.sh up K [--profile 10gbit|1gbit|RATE]   create (removes old ones first)
#   scripts/multihost.sh run K [--profile P] [--slots S] -- CMD...
#        up K, mpirun -np K*S CMD inside vgh0 across the K hosts, down (also when
#        killed); exits with mpirun's status
#   scripts/multihost.sh shape K PROFILE|RATE     change the rate of every host, live
#   scripts/multihost.sh shape-host I RATE        one host's rate (e.g. 8kbit: a crawl)
#   scripts/multihost.sh cut I | heal I           host I's cable out / back in (the bridge
#                                                 port vI down / up: no error on the host,
#                                                 its packets just vanish)
#   scripts/multihost.sh kill-host I              SIGKILL every process in namespace vghI
#   scripts/multihost.sh exec I CMD...            run CMD in host I
#   scripts/multihost.sh alpha [--profile P]      MPI ping-pong across 2 hosts (alpha, beta)
#   scripts/multihost.sh down                     remove everything
#
# mpirun runs in vgh0 with --host 10.77.0.1:S,10.77.0.2:S,..., --mca btl tcp,self (no
# shared memory between hosts), the TCP and OOB transports on eth0 only, and
# scripts/multihost-agent.sh as the launcher (Open MPI calls it like ssh: it enters
# the host's namespace and a UTS namespace whose hostname is vghI, so
# MPI_Get_processor_name and MPI_Comm_split_type(SHARED) see K hosts).
# Open MPI as root: OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 (set here).
# MULTIHOST_MPIRUN_ARGS adds arguments to mpirun.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PREFIX=vgh
BR=vgbr
MAXK=32

die() { echo "multihost: $*" >&2; exit 1; }
rate_of() {
  case "$1" in
    10gbit) echo 10gbit ;;
    1gbit) echo 1gbit ;;
    *[0-9]*bit|*[0-9]*bps) echo "$1" ;;
    *) die "unknown profile or rate '$1' (10gbit, 1gbit or a tc rate like 100mbit, 8kbit)" ;;
  esac
}
hosts_now() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+$" || true; }

# tbf: the bucket (burst) holds 128 KB, two of veth's 64 KB GSO packets (the qdisc's
# hrtimer watchdog needs no more; a bucket of rate / HZ let a 4 MB message through at
# 16 Gbit/s on the 10gbit profile); latency: 50 ms of queue before drops.
shape_host() { # I RATE
  local i="$1" rate="$2"
  ip netns exec "$PREFIX$i" tc qdisc replace dev eth0 root tbf rate "$rate" burst 131072 latency 50ms
}

do_down() {
  local ns
  for ns in $(hosts_now); do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  done
  for ns in $(hosts_now) $(ip netns list 2>/dev/null | awk '{print $1}' | grep -x "$BR" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
}

do_up() { # K RATE
  local k="$1" rate="$2" i
  [[ "$k" =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] && [ "$k" -le "$MAXK" ] || die "K must be 1..$MAXK"
  do_down # a previous crashed run's namespaces
  ip netns add "$BR"
  ip -n "$BR" link add br0 type bridge
  ip -n "$BR" link set br0 up
  ip -n "$BR" link set lo up
  for ((i = 0; i < k; i++)); do
    ip netns add "$PREFIX$i"
    ip -n "$PREFIX$i" link set lo up
    ip -n "$BR" link add "v$i" type veth peer name eth0 netns "$PREFIX$i"
    ip -n "$BR" link set "v$i" master br0
    ip -n "$BR" link set "v$i" up
    ip -n "$PREFIX$i" addr add "10.77.0.$((i + 1))/24" dev eth0
    ip -n "$PREFIX$i" link set eth0 up
    # TCP gives up on a silent peer after 5 retransmissions (~13 s at the 200 ms
    # minimum RTO) instead of 15 (~15 min): mpirun's and orted's control connections
    # then see a cut link in seconds and end the job (see docs/distributed.md)
    ip netns exec "$PREFIX$i" sysctl -qw net.ipv4.tcp_retries2="${MULTIHOST_TCP_RETRIES2:-5}"
    shape_host "$i" "$rate"
  done
}

do_alpha() { # K RATE: an MPI ping-pong between hosts 0 and 1 (scripts/multihost-pingpong.c)
  local d
  d="$(mktemp -d)"
  mpicc -O2 -o "$d/pingpong" "$here/multihost-pingpong.c"
  ( do_run "$1" "$2" 1 "$d/pingpong" ) || true
  rm -rf "$d"
}

do_run() { # K RATE SLOTS CMD...
  local k="$1" rate="$2" slots="$3" i hosts="" rc=0
  shift 3
  [ "$#" -gt 0 ] || die "run: no command after --"
  # mpirun runs in the background: bash runs a trap only once the foreground command
  # ends, but interrupts `wait` at once (a job hung on a cut link is killed by down)
  trap 'do_down' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  do_up "$k" "$rate"
  for ((i = 0; i < k; i++)); do hosts+="${hosts:+,}10.77.0.$((i + 1)):$slots"; done
  # shellcheck disable=SC2086
  ip netns exec "${PREFIX}0" unshare --uts sh -c 'hostname "$0"; exec "$@"' "${PREFIX}0" \
    env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun -np $((k * slots)) --host "$hosts" --oversubscribe --bind-to none \
      --mca plm_rsh_agent "$here/multihost-agent.sh" \
      --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
      ${MULTIHOST_MPIRUN_ARGS:-} "$@" <&0 &
  wait $! || rc=$?
  drain "${MULTIHOST_DRAIN_S:-30}"
  return "$rc"
}

# After mpirun: waits up to $1 s for every process of the hosts to end on its own (an
# orted whose mpirun died must notice), then says so, or names what hung (down kills it).
drain() {
  local t0 left=1 ns
  t0=$(date +%s%N)
  while :; do
    left=0
    for ns in $(hosts_now); do left=$((left + $(ip netns pids "$ns" 2>/dev/null | wc -l))); done
    [ "$left" = 0 ] && break
    [ $(( ($(date +%s%N) - t0) / 1000000000 )) -ge "$1" ] && break
    sleep 0.1
  done
  if [ "$left" = 0 ]; then
    echo "multihost: every process gone $(( ($(date +%s%N) - t0) / 1000000 )) ms after mpirun ended" >&2
  else
    for ns in $(hosts_now); do
      for p in $(ip netns pids "$ns" 2>/dev/null); do
        echo "multihost: HUNG: $ns pid $p ($(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-80)) still running $1 s after mpirun ended" >&2
      done
    done
  fi
}

[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
cmd="${1:-}"
shift || true
case "$cmd" in
  up)
    k="${1:-}"; shift || true
    prof=10gbit
    [ "${1:-}" = --profile ] && { prof="${2:?--profile needs a value}"; shift 2; }
    do_up "$k" "$(rate_of "$prof")"
    echo "multihost: $k hosts up (${PREFIX}0..${PREFIX}$((k - 1)), 10.77.0.1..$k, $prof)" ;;
  run)
    k="${1:-}"; shift || true
    prof=10gbit; slots=1
    while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
      case "$1" in
        --profile) prof="${2:?}"; shift 2 ;;
        --slots) slots="${2:?}"; shift 2 ;;
        *) die "run: unknown option $1" ;;
      esac
    done
    [ "${1:-}" = -- ] && shift
    do_run "$k" "$(rate_of "$prof")" "$slots" "$@" ;;
  shape)
    k="$(hosts_now | wc -l)"
    [ "$k" -gt 0 ] || die "no hosts up"
    r="$(rate_of "${2:-${1:?shape K PROFILE}}")"
    for ((i = 0; i < k; i++)); do shape_host "$i" "$r"; done ;;
  shape-host) shape_host "${1:?}" "$(rate_of "${2:?}")" ;;
  cut) ip -n "$BR" link set "v${1:?cut I}" down ;;
  heal) ip -n "$BR" link set "v${1:?heal I}" up ;;
  kill-host)
    for p in $(ip netns pids "$PREFIX${1:?kill-host I}"); do kill -9 "$p" 2>/dev/null || true; done ;;
  exec) i="${1:?}"; shift; exec ip netns exec "$PREFIX$i" "$@" ;;
  alpha)
    prof=10gbit
    [ "${1:-}" = --profile ] && prof="${2:?}"
    do_alpha 2 "$(rate_of "$prof")" ;;
  down) do_down ;;
  *) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
