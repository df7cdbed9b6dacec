#!/usr/bin/env bash
# The VS Code extension in CI. Idempotent; every step says what it does or why it is skipped.
#
#   .ci/extension.sh --setup   install what its tests need: node_modules (npm ci), code-server, Chromium
#   .ci/extension.sh           the above, then tests/extension: compile, lint, tsc, unit tests, package,
#                              the .vsix contents, package.json defaults vs the server, and the e2e in
#                              code-server (about 2 minutes once installed)
#
# code-server (the open-source VS Code) takes about 10 minutes to install the first time; it goes to
# $ONNXLINT_E2E_DIR (default .e2e/, gitignored) and is reused afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
e2e_dir=${ONNXLINT_E2E_DIR:-$repo/.e2e}
installer=${ONNXLINT_CODE_SERVER_INSTALLER:-$repo/.ci/install-code-server.sh}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "extension: SKIP: node and npm are not installed, so the extension cannot be built or tested"
  exit 0
fi
echo "extension: node $(node --version), npm $(npm --version 2>/dev/null)"

# npm ci only when node_modules does not match package-lock.json (tests/extension/conftest.py
# reads the same stamp).
stamp=node_modules/.onnxlint-lock-sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "extension: npm ci"
  npm ci --no-audit --no-fund
  echo "$want" >"$stamp"
else
  echo "extension: node_modules matches package-lock.json"
fi

if [ -x "$e2e_dir/cs/node_modules/.bin/code-server" ] && [ -x /usr/bin/chromium ]; then
  echo "extension: code-server already installed in $e2e_dir"
elif [ -x "$installer" ] || [ -f "$installer" ]; then
  echo "extension: installing code-server into $e2e_dir (about 10 minutes the first time)"
  for sub in nodepkg cs pw; do
    # npm installs into the nearest package.json: give each folder its own, or npm walks up
    # to the repository's package.json and installs code-server into the extension's tree.
    mkdir -p "$e2e_dir/$sub"
    [ -f "$e2e_dir/$sub/package.json" ] || echo '{"private": true}' >"$e2e_dir/$sub/package.json"
  done
  start=$(date +%s)
  bash "$installer" "$e2e_dir"
  echo "extension: code-server installed in $(( $(date +%s) - start ))s"
else
  echo "extension: code-server is missing and $installer is not there: the e2e tests will fail and say so"
fi

if [ "${1:-}" = "--setup" ]; then
  exit 0
fi

# One process (no -n): the npm steps share dist/ and the e2e wants the two cores to itself.
python=${PYTHON:-python3}
exec "$python" -m pytest tests/extension -v -rs
