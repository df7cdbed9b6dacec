#!/usr/bin/env bash
# Everything the test suite needs, on a fresh machine with Python 3.11 and the clone: the package
# with its deep and test extras (torch 2.13 CPU), Neovim for the real-editor tests, node/npm and the
# extension's node_modules, code-server and Chromium for the VS Code end-to-end tests.
# Idempotent: a second run only checks (a few seconds). The README's test command runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
python=${PYTHON:-python}
start=$(date +%s)

say() { echo "setup: $*"; }

apt_install() {
  # Debian packages by name; apt-get update once per run.
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "cannot install $* (needs root and apt-get): the tests that need it will fail and say why"
    return 0
  fi
  if [ -z "${_apt_updated:-}" ]; then apt-get update -qq; _apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

say "python package: pip install -e \".[deep,test]\" (torch==2.13.0, CPU)"
"$python" -m pip install -q -e ".[deep,test]"

command -v nvim >/dev/null 2>&1 || { say "installing neovim"; apt_install neovim; }
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  say "installing nodejs and npm"; apt_install nodejs npm
fi

# node_modules, code-server (into .e2e/, about 10 minutes the first time) and Chromium.
bash .ci/extension.sh --setup

say "done in $(( $(date +%s) - start ))s"
