#!/usr/bin/env bash
# Install Debian's chromium for the status page's browser test (headless), once. Run by
# test.sh; needs apt (root, or sudo without a password). Prints where the browser is.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: the tests need Debian's chromium (headless) for the status page; install chromium" >&2
    exit 1
fi
as_root=""
if [ "$(id -u)" != "0" ]; then
    as_root="sudo -n"
fi
echo "install_browser: installing chromium (apt)"
$as_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium
