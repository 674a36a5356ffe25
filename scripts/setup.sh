#!/usr/bin/env bash
# Idempotent set-up for npukit: the Debian packages the kit needs and the
# project's Python virtual environment. Usage: scripts/setup.sh demo|test
#
#   demo  the package and its runtime dependencies
#   test  the same plus the test tools, TensorFlow (to generate the test
#         zoo's models) and the sample-training dependencies
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NPUKIT_VENV:-$ROOT/.venv}"
PURPOSE="${1:-demo}"

case "$PURPOSE" in
  demo) EXTRAS="" ;;
  test) EXTRAS="[test,train]" ;;
  *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac

DEBIAN_PACKAGES=(
  gcc binutils
  gcc-arm-none-eabi libnewlib-arm-none-eabi
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
  qemu-system-arm qemu-system-misc
  cmake ninja-build
)

say() { printf 'setup: %s\n' "$*" >&2; }

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if ! command -v python3 >/dev/null 2>&1; then
    missing+=(python3 python3-venv)
  elif ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    missing+=(python3-venv)
  fi
else
  for tool in gcc ld arm-none-eabi-gcc riscv64-unknown-elf-gcc qemu-system-arm qemu-system-riscv32 cmake ninja python3; do
    command -v "$tool" >/dev/null 2>&1 || { say "missing $tool; npukit's set-up installs Debian packages and needs Debian 12 or a machine with these tools"; exit 1; }
  done
fi

if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    say "these Debian packages are missing: ${missing[*]}"
    say "install them as root with:"
    say "  sudo apt-get install -y --no-install-recommends ${missing[*]}"
    exit 1
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating the virtual environment in $VENV"
  python3 -m venv "$VENV"
fi

# Reinstall only when what the environment is made from has changed.
stamp="$VENV/.npukit-$PURPOSE.stamp"
want="$(cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing npukit$EXTRAS and its pinned dependencies into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -q -c "$ROOT/constraints.txt" -e "$ROOT$EXTRAS"
  echo "$want" > "$stamp"
fi
