#!/usr/bin/env bash
# The fault drill across hosts (issue 33): N random faults on a 2-host `vigil train`
# run (scripts/multihost.sh, 10gbit profile) with checkpoints every 10 steps. Each
# fault is one of: kill-host I (SIGKILL of every process of host I, mpirun's host 0
# included), cut I (host I's cable out), slow I (host I's tbf rate to 8kbit), injected
# 0-1.5 s after the run's first new checkpoint. Each time the job must end (every process of every host
# gone, none killed by the clean-up) within BOUND s of the fault; the checkpointed
# global step must never go back; the next run must resume from the last checkpoint
# (its log names that step: the restore succeeded, no torn checkpoint). A last run
# without faults must finish and evaluate. Prints one line per fault and the worst
# time from fault to end of job. Root only.
#   scripts/multihost-faults.sh [N=10] [BUILD_DIR=build]
# Environment: MULTIHOST_SKIP_OK=1: exit 0 with a message where network namespaces
# cannot be made (CI); EPOCHS (default 30), TIMEOUT_S (the collective timeout, default 5),
# HEARTBEAT_S (the heartbeat timeout, default 20: off when TIMEOUT_S is shorter, which it
# is by default; set HEARTBEAT_S=3 TIMEOUT_S=60 to see the heartbeats end the job),
# BOUND (default the shorter of the two + 40), FAULTS (the kinds to draw from, default
# "kill0 kill1 cut0 cut1 slow0 slow1").
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-10}"
build="${2:-build}"
epochs="${EPOCHS:-30}"
tmo="${TIMEOUT_S:-5}"
hb="${HEARTBEAT_S:-20}"
first=$(( hb > 0 && hb < tmo ? hb : tmo ))
bound="${BOUND:-$((first + 40))}"
kinds=(${FAULTS:-kill0 kill1 cut0 cut1 slow0 slow1})
# MULTIHOST_SKIP_OK=1 (CI): where hosts cannot be made, say why and exit 0
skip() { echo "multihost-faults: SKIPPED: $*"; [ "${MULTIHOST_SKIP_OK:-0}" = 1 ] && exit 0; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
for c in ip tc unshare sysctl mpirun; do command -v "$c" >/dev/null || skip "no $c"; done
ip netns add vg_probe_$$ 2>/dev/null || skip "ip netns add was refused"
ip netns del vg_probe_$$
[ -x "$build/vigil" ] || { echo "multihost-faults: no $build/vigil (build vigil_cli first)" >&2; exit 1; }
mh=scripts/multihost.sh
work="$(mktemp -d /tmp/vg_mhfaults_XXXXXX)"
ck="$work/ck"
trap '$mh down 2>/dev/null || true' EXIT
train=("$build/vigil" train --epochs "$epochs" --train-limit 6000 --batch-size 64 --threads 1
       --save-checkpoint-steps 10 --save-summaries-steps 50 --collective-timeout "$tmo" --heartbeat-timeout "$hb" --checkpoint-dir "$ck")

ckpt_step() { # the step of the checkpoint the state file names (-1: none)
  local f="$ck/checkpoint" s
  [ -f "$f" ] || { echo -1; return; }
  s=$(sed -n 's/^model_checkpoint_path: ".*model\.ckpt-\([0-9]*\)"$/\1/p' "$f")
  echo "${s:--1}"
}
now() { date +%s.%N; }

fail=0 worst=0 prev=-1
for ((i = 1; i <= n; i++)); do
  kind="${kinds[RANDOM % ${#kinds[@]}]}"
  host="${kind: -1}"
  delay="$(awk -v r=$RANDOM 'BEGIN { printf "%.1f", 1.5 * r / 32768 }')"
  log="$work/run$i.log"
  before="$(ckpt_step)"
  $mh run 2 -- "${train[@]}" >"$log" 2>&1 &
  pid=$!
  # the fault comes at a random moment once the run has written a checkpoint past the
  # last one (training is under way, however fast or loaded the machine is)
  for ((w = 0; w < 600; w++)); do
    [ "$(ckpt_step)" -gt "$before" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep "$delay"
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "fault $i: the run ended before the fault (raise EPOCHS)"; fail=1; break
  fi
  case "$kind" in
    kill*) $mh kill-host "$host" ;;
    cut*) $mh cut "$host" ;;
    slow*) $mh shape-host "$host" 8kbit ;;
  esac
  t0="$(now)"
  # the job must end on its own; past BOUND it hung
  ended=0
  while [ "$(awk -v a="$(now)" -v b="$t0" 'BEGIN { print (a - b > '"$bound"') }')" = 0 ]; do
    kill -0 "$pid" 2>/dev/null || { ended=1; break; }
    sleep 0.1
  done
  [ "$ended" = 1 ] || kill -TERM "$pid" 2>/dev/null || true
  rc=0; wait "$pid" || rc=$?
  dt="$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')"
  after="$(ckpt_step)"
  resumed="$(sed -n 's/.*resuming from checkpoint .* at global step \([0-9]*\).*/\1/p' "$log" | head -1)"
  why="$(grep -o -e 'DEADLINE_EXCEEDED[^(]*([^)]*)' -e 'UNAVAILABLE: [^:]*: no heartbeat from rank [0-9]* ([^)]*) for [0-9.]* s' "$log" | head -1 || true)"
  ok=ok
  [ "$ended" = 1 ] || { ok="HUNG (still running $bound s after the fault)"; fail=1; }
  grep -q "every process gone" "$log" || { ok="HUNG: $(grep -m1 HUNG "$log" || echo 'processes left')"; fail=1; }
  [ "$after" -ge "$prev" ] || { ok="STEP WENT BACK ($prev -> $after)"; fail=1; }
  if [ "$before" -ge 0 ] && [ "${resumed:-x}" != "$before" ]; then
    ok="DID NOT RESUME from step $before (log: ${resumed:-no resume line})"; fail=1
  fi
  [ "$rc" != 0 ] || [ "$ended" != 1 ] || { ok="exit 0 after a fault"; fail=1; }
  awk -v d="$dt" -v w="$worst" 'BEGIN { exit !(d > w) }' && worst="$dt"
  echo "fault $i: $kind ${delay} s after a checkpoint: job ended ${dt} s later (exit $rc), resumed at ${resumed:-0}, checkpoint step $before -> $after${why:+; $why}: $ok"
  [ "$ok" = ok ] || { echo "--- log:"; grep -v '^\[' "$log" | tail -20; }
  prev="$after"
done
# a last run without faults resumes and finishes
before="$(ckpt_step)"
log="$work/final.log"
rc=0; $mh run 2 -- "${train[@]}" >"$log" 2>&1 || rc=$?
resumed="$(sed -n 's/.*resuming from checkpoint .* at global step \([0-9]*\).*/\1/p' "$log" | head -1)"
acc="$(sed -n 's/^test_accuracy=//p' "$log")"
if [ "$rc" = 0 ] && [ -n "$acc" ] && { [ "$before" -lt 0 ] || [ "${resumed:-x}" = "$before" ]; }; then
  echo "final run: resumed at step ${resumed:-0}, finished at step $(ckpt_step), test_accuracy=$acc"
else
  echo "final run FAILED (exit $rc, resumed ${resumed:-none} vs checkpoint $before)"; grep -v '^\[' "$log" | tail -20; fail=1
fi
echo "worst time from fault to end of job: ${worst} s (bound ${bound} s; collective timeout ${tmo} s, heartbeat timeout ${hb} s)"
[ "$fail" = 0 ] && rm -rf "$work" && echo "multihost-faults: $n faults, all ended, no hang, step never went back, every rerun resumed"
exit "$fail"
