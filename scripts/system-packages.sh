#!/usr/bin/env bash
# Installs the Debian packages the project needs, if missing:
#   dataset-fashion-mnist  real Fashion-MNIST (IDX files under /usr/share/datasets/fashion-mnist)
#   chromium               the headless browser that the book test drives
set -euo pipefail
need=()
[ -f /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz ] || need+=(dataset-fashion-mnist)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
  echo "apt-get is unavailable: install ${need[*]} by other means." >&2
  echo "Without dataset-fashion-mnist, Fashion-MNIST falls back to the Hugging Face Hub (needs network)." >&2
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing Debian packages: ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
