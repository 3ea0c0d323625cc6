#!/usr/bin/env bash
# Issue 35's lazy-connection question on GPUs: a collective one rank enters
# alone (.check off) on a communicator NCCL may not have connected for it,
# then Ctrl-C (SIGINT to rank 0): does the session come back?  From the
# project root, with NCCL_RUNTIME_CONNECT as the case wants (0 or 1):
#   bash scripts/bench/lone_collective.sh build-gpu/gcsh 2
# Prints each case's last lines and "RESULT <case>: session back" or "NOT back".
GCSH=$1; NP=${2:-2}
. tests/sh/lib.sh
rank_pid() { local p; for p in $(tagged_pids "$1"); do
  grep -qxzF "OMPI_COMM_WORLD_RANK=$2" "/proc/$p/environ" 2>/dev/null && echo "$p"; done; }
case_lone() { # NAME 'lone command'
  local tag; tag=$(new_tag)
  local t0=$SECONDS
  out=$( ( printf '%s\n' ".check off" "c = comm.world() s = c:split(0, rank) s:barrier()" "$2"
      for i in $(seq 100); do [ -n "$(rank_pid "$tag" 0)" ] && break; sleep 0.1; done
      sleep 6; kill -INT $(rank_pid "$tag" 0); sleep 4
      printf '%s\n' ".check on" "c = comm.world()" "=c:allreduce(tensor.new(1):fill(1))[0]" ) |
      GCSH_TEST_TAG=$tag timeout 90 "$GCSH" -n "$NP" --backend cuda 2>&1 )
  rc=$?
  echo "---- $1 (NCCL_RUNTIME_CONNECT=$NCCL_RUNTIME_CONNECT): rc $rc, $((SECONDS - t0)) s"
  echo "$out" | tail -12
  if echo "$out" | grep -qF "[0-$((NP-1))] $NP.0"; then echo "RESULT $1: session back"; else echo "RESULT $1: session NOT back"; fi
  for p in $(tagged_pids "$tag"); do kill -9 "$p" 2>/dev/null; done
}
case_lone "allreduce 64 MiB (ring, Simple)" 'if rank == 0 then s:allreduce(tensor.new(1 << 24)) else gcsh.sleep(40) end'
case_lone "allreduce 8 B" 'if rank == 0 then s:allreduce(tensor.new(2)) else gcsh.sleep(40) end'
case_lone "alltoall (p2p)" 'if rank == 0 then s:alltoall(tensor.new(1024 * s.size), tensor.new(1024 * s.size)) else gcsh.sleep(40) end'
case_lone "send (p2p)" 'if rank == 0 then s:send(tensor.new(1024), 1) else gcsh.sleep(40) end'
case_lone "twin made, then a lone 64 MiB allreduce" 'c:allreduce(tensor.new(1)) s:allreduce(tensor.new(1)) if rank == 0 then s:allreduce(tensor.new(1 << 24)) else gcsh.sleep(40) end'
