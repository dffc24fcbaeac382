#!/usr/bin/env bash
# Install headless Chromium from Debian's packages, for the browser tests (pytest -m browser).
# Idempotent and quiet: does nothing when a chromium binary is already on PATH.
# Needs root (or sudo) on Debian/Ubuntu; prints one line either way.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    echo "chromium: already installed ($(command -v chromium || command -v chromium-browser))"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium: apt-get not found; install Chromium by hand to run the browser tests" >&2
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "chromium: must run as root (or with sudo) to install it" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
log="$(mktemp -t install-chromium.XXXXXX.log)"
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium; } >"$log" 2>&1; then
    echo "chromium: installation failed; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
fi
rm -f "$log"
echo "chromium: installed ($(command -v chromium))"
