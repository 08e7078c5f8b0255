#!/bin/sh
# Installs the Debian 12 packages ampplan needs to build and run, if any is
# missing; with --test also those only the tests need (Check and pkg-config
# to link it, PyTorch for the profiling script's test, clang-14 and its
# runtime libclang-rt-14-dev, which holds libFuzzer and the ASan/UBSan
# runtimes, for the fuzz targets of tests/fuzz; librsvg2-bin's rsvg-convert,
# which renders the --timeline SVG for its test; groff-base and man-db, which
# render the man page for tests/check_install.sh). A no-op when all are present; exits 1 with a
# clear message when it cannot.
set -eu
pkgs="gcc make libglpk-dev libcjson-dev libcsv-dev"
if [ "${1-}" = --test ]; then
	pkgs="$pkgs check pkg-config python3-torch clang-14 libclang-rt-14-dev librsvg2-bin groff-base man-db"
fi
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
	echo "ampplan: error: missing packages:$missing, and no apt-get to install them" >&2
	exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
	sudo=
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo=sudo
else
	echo "ampplan: error: missing packages:$missing; run as root or install them: apt-get install$missing" >&2
	exit 1
fi
echo "ampplan: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >&2
