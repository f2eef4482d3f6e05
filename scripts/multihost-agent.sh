#!/usr/bin/env bash
# Open MPI's launcher agent for scripts/multihost.sh (--mca plm_rsh_agent): called like
# ssh, `multihost-agent.sh [ssh options] HOST COMMAND...`, it runs the command in the
# network namespace of host HOST (10.77.0.(i+1) -> vghi) and in a UTS namespace whose
# hostname is vghi, so that MPI_Get_processor_name names the host.
set -eu
while [ "$#" -gt 0 ]; do
  case "$1" in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;; # ssh options that take a value
    -*) shift ;;
    *) break ;;
  esac
done
host="${1:?multihost-agent: no host}"
shift
case "$host" in
  10.77.0.*) i=$(( ${host##*.} - 1 )) ;;
  vgh[0-9]*) i="${host#vgh}" ;;
  *) echo "multihost-agent: unknown host $host" >&2; exit 255 ;;
esac
exec ip netns exec "vgh$i" unshare --uts sh -c 'hostname "$0"; exec sh -c "$1"' "vgh$i" "$*"
