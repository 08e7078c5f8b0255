#!/bin/sh
# check_install.sh: the man page (renders without warnings, documents every
# option of --help and no other), --version, and `make install` into a
# temporary PREFIX, whose ampplan, run from another directory, finds the
# profiles and clusters by name and ranks as the in-repo binary does.
# Usage: tests/check_install.sh [BUILD]: BUILD holds the binary under test
# (default build); the install builds in BUILD/install-check.
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
here=$(pwd)
bin=$build/ampplan
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
prefix=$tmp/prefix
checks=0
fails=0

pass() { checks=$((checks + 1)); }
fail() {
	checks=$((checks + 1))
	fails=$((fails + 1))
	echo "tests/check_install.sh: FAIL: $*"
}

# The options of --help, one a line, sorted.
"$bin" --help | sed -n 's/^  --\([a-z0-9-]*\).*/\1/p' | sort >"$tmp/help.opts"
# The options the man page has an entry for (the line after each .TP of
# OPTIONS: .B \-\-NAME, .BI \-\-NAME " ARG" or .BR "\-\-NAME on" | off).
awk '/^\.SH/ { in_opts = $0 == ".SH OPTIONS" } in_opts && tp { print } { tp = /^\.TP/ }' ampplan.1 |
	sed -n 's/^\.B[IR]\{0,1\} "\{0,1\}\\-\\-\([a-z0-9\\-]*\).*/\1/p' | sed 's/\\-/-/g' | sort >"$tmp/man.opts"
if [ "$(wc -l <"$tmp/help.opts")" -lt 30 ]; then
	fail "--help lists $(wc -l <"$tmp/help.opts") options, expected 30 or more"
elif ! cmp -s "$tmp/help.opts" "$tmp/man.opts"; then
	fail "options of --help (<) and of ampplan.1 (>) differ:"
	diff "$tmp/help.opts" "$tmp/man.opts"
else
	pass
fi

# groff with every warning enabled: not one.
if ! groff -man -Tutf8 -ww -z ampplan.1 >"$tmp/groff.err" 2>&1 || [ -s "$tmp/groff.err" ]; then
	fail "groff -man -ww warns on ampplan.1:"
	cat "$tmp/groff.err"
else
	pass
fi

# --version: "ampplan X.Y.Z", X.Y.Z the Makefile's VERSION.
version=$(sed -n 's/^VERSION = \([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p' Makefile)
got=$("$bin" --version 2>&1)
if [ -z "$version" ] || [ "$got" != "ampplan $version" ]; then
	fail "--version printed '$got', want 'ampplan $version' (Makefile: VERSION = X.Y.Z)"
else
	pass
fi

# make install, in a build directory of its own (its PREFIX is compiled in).
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -j2 BUILD="$build/install-check" \
	PREFIX="$prefix" install >"$tmp/install.log" 2>&1; then
	fail "make install PREFIX=$prefix failed:"
	cat "$tmp/install.log"
	echo "tests/check_install.sh: $checks checks, $fails failed"
	exit 1
fi
missing=
data_dirs=$(sed -n 's/^DATA_DIRS = //p' Makefile)
for f in ampplan.1 $(for d in $data_dirs; do echo "$d"/*.json; done); do
	case $f in
	ampplan.1) to=$prefix/share/man/man1/ampplan.1 ;;
	*) to=$prefix/share/ampplan/$f ;;
	esac
	cmp -s "$f" "$to" || missing="$missing $to"
done
if [ ! -x "$prefix/bin/ampplan" ] || [ -n "$missing" ]; then
	fail "make install: missing or different:$missing $( [ -x "$prefix/bin/ampplan" ] || echo "$prefix/bin/ampplan")"
else
	pass
fi

# man finds the installed page by the man path.
if ! LC_ALL=C MANWIDTH=80 man -M "$prefix/share/man" ampplan >"$tmp/man.txt" 2>"$tmp/man.err" ||
	[ -s "$tmp/man.err" ] || ! grep -q "^SYNOPSIS" "$tmp/man.txt" ||
	! grep -q -- "--model FILE" "$tmp/man.txt"; then
	fail "man -M $prefix/share/man ampplan does not render the page:"
	cat "$tmp/man.err"
else
	pass
fi
if ! LC_ALL=C MANWIDTH=80 man -l "$prefix/share/man/man1/ampplan.1" >"$tmp/manl.txt" 2>&1 ||
	! cmp -s "$tmp/man.txt" "$tmp/manl.txt"; then
	fail "man -l of the installed page differs from man ampplan"
else
	pass
fi

# Names resolved from a directory without profiles/ or clusters/: the same
# CSV as the in-repo binary on the paths, which the in-repo binary also
# gets from the names (profiles/ and clusters/ of the current directory).
mkdir "$tmp/elsewhere" "$tmp/local" "$tmp/local/profiles"
"$bin" --model profiles/llama70b.json --cluster clusters/mixed.json --csv - >"$tmp/repo.csv" 2>/dev/null
(cd "$tmp/elsewhere" && "$prefix/bin/ampplan" --model llama70b --cluster mixed --csv - \
	>"$tmp/installed.csv" 2>"$tmp/installed.err")
rc=$?
if [ $rc -ne 0 ] || [ "$(wc -l <"$tmp/repo.csv")" -lt 2 ] || ! cmp -s "$tmp/repo.csv" "$tmp/installed.csv"; then
	fail "installed ampplan --model llama70b --cluster mixed: exit $rc, CSV differs from the in-repo run:"
	cat "$tmp/installed.err"
else
	pass
fi
"$bin" --model llama70b --cluster mixed.json --csv - >"$tmp/names.csv" 2>/dev/null
if ! cmp -s "$tmp/repo.csv" "$tmp/names.csv"; then
	fail "in-repo ampplan --model llama70b --cluster mixed.json: CSV differs from the run on the paths"
else
	pass
fi

# Order (datafile.h): beside the binary, then the installed data, then the
# current directory: an installed binary reads the profile installed with
# it, not profiles/llama70b.json of the current directory (tiny-2-layers);
# a copy of it with profiles/ beside it reads that one; a file NAME itself
# is read before all (models told apart by name).
cp tests/data/tiny-2-layers.json "$tmp/local/profiles/llama70b.json"
got=$(cd "$tmp/local" && "$prefix/bin/ampplan" profile --model llama70b | sed -n 's/^[[:space:]]*"name":[[:space:]]*"\([^"]*\)".*/\1/p')
if [ "$got" != Llama-3-70B ]; then
	fail "installed profile --model llama70b beside profiles/llama70b.json (tiny-2-layers) read '$got', want the installed Llama-3-70B"
else
	pass
fi
mkdir "$tmp/copy" "$tmp/copy/bin"
cp "$prefix/bin/ampplan" "$tmp/copy/bin/ampplan"
mkdir "$tmp/copy/bin/profiles"
cp tests/data/tiny-2-layers.json "$tmp/copy/bin/profiles/llama70b.json"
got=$(cd "$tmp/elsewhere" && "$tmp/copy/bin/ampplan" profile --model llama70b | sed -n 's/^[[:space:]]*"name":[[:space:]]*"\([^"]*\)".*/\1/p')
if [ "$got" != tiny-2-layers ]; then
	fail "a binary with profiles/llama70b.json (tiny-2-layers) beside it read '$got'"
else
	pass
fi
# the catalogue too: a cluster file outside the tree naming a catalogue GPU
cp clusters/aws-g4dn.json "$tmp/elsewhere/cat.json"
if ! (cd "$tmp/elsewhere" && "$tmp/copy/bin/ampplan" --model "$here/tests/data/hf/gpt2.json" --cluster cat.json >"$tmp/cat.out" 2>"$tmp/cat.err"); then
	fail "a cluster file naming a catalogue GPU, run from elsewhere: $(cat "$tmp/cat.err")"
else
	pass
fi
cp profiles/llama2-7b.json "$tmp/local/llama70b"
got=$(cd "$tmp/local" && "$prefix/bin/ampplan" profile --model llama70b | sed -n 's/^[[:space:]]*"name":[[:space:]]*"\([^"]*\)".*/\1/p')
if [ "$got" != Llama-2-7B ]; then
	fail "profile --model llama70b beside a file llama70b (Llama-2-7B) read '$got'"
else
	pass
fi

# A name found nowhere: exit 1, one line naming the places in their order.
(cd "$tmp/elsewhere" && "$prefix/bin/ampplan" --model llama70b --cluster nosuch >"$tmp/out" 2>"$tmp/err")
rc=$?
want="ampplan: error: --cluster: cannot find 'nosuch': no file 'nosuch', '$prefix/bin/clusters/nosuch.json', '$prefix/clusters/nosuch.json', '$prefix/share/ampplan/clusters/nosuch.json' or 'clusters/nosuch.json'"
if [ $rc -ne 1 ] || [ -s "$tmp/out" ] || [ "$(cat "$tmp/err")" != "$want" ]; then
	fail "--cluster nosuch: exit $rc, stderr '$(cat "$tmp/err")', want exit 1 and '$want'"
else
	pass
fi

echo "tests/check_install.sh: $checks checks, $fails failed"
[ $fails -eq 0 ]
