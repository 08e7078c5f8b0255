#!/bin/sh
# Installs the Debian 12 packages ampplan needs to build and run, if any is
# missing; with --test also those the test suites need (Check and pkg-config
# to link them, librsvg2-bin's rsvg-convert, which renders the --timeline SVG
# for its test, groff-base and man-db, which render the man page for
# tests/check_install.sh, and PyTorch for the profiling script's test), in
# one apt run; with --fuzz clang-14 and its runtime libclang-rt-14-dev, which
# holds libFuzzer, for `make fuzz`. A no-op when all are present; exits 1
# with a clear message when it cannot.
set -eu
pkgs="gcc make libglpk-dev libcjson-dev libcsv-dev"
case "${1-}" in
--test) pkgs="$pkgs check pkg-config librsvg2-bin groff-base man-db python3-torch" ;;
--fuzz) pkgs="clang-14 libclang-rt-14-dev" ;;
"") ;;
*)
	echo "install-deps.sh: error: unknown option '$1' (--test or --fuzz)" >&2
	exit 2
	;;
esac
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
