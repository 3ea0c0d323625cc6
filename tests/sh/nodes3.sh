#!/usr/bin/env bash
# tests/sh/nodes.sh on 3 simulated nodes of 2 ranks.
# tests/run.sh: slow (not in make check)
NODES=3 exec bash "$(dirname "$0")/nodes.sh"
