#!/usr/bin/env bash
# Installs the Debian packages gcsh needs, only those missing, and says which.
# Idempotent: a second run installs nothing and prints nothing.
set -euo pipefail

# lua-dkjson: bench's json= (a pure-Lua module, carried to GPU machines as a
# .deb like Lua itself: scripts/gpu-check.sh)
packages=(lua5.4 liblua5.4-dev libopenmpi-dev openmpi-bin libreadline-dev libjansson-dev tmux
          lua-dkjson)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: missing ${missing[*]} and no apt-get here; install them by hand" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=sudo; else
        echo "install-deps: missing ${missing[*]}; run as root or install them" >&2
        exit 1
    fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
