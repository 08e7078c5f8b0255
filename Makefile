# ampplan: plain Makefile (STYLE.md 15). Variables are overridable.
CC ?= cc
CFLAGS ?= -O2 -g
# Flags the build needs, kept apart so that `make CFLAGS=...` keeps them.
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -MMD -MP \
	-pthread -Icostmodel -Iinput -Isearch -Ioutput -Icalibrate $(CONFIG_DEFS) $(EXTRA_CFLAGS) $(CFLAGS)
LDLIBS += -lglpk -lcsv -lcjson -lm -pthread
CHECK_LIBS = $$(pkg-config --libs check)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/ampplan
# What `ampplan --version` prints: bump it here, and only here.
VERSION = 0.1.0
# The data directories `make install` copies into DATADIR, where --model
# NAME and --cluster NAME look after beside the binary and before the
# current directory (datafile.h).
DATA_DIRS = profiles clusters gpus
# Compiled into main.o and datafile.o, which config.stamp rebuilds when
# either changes (e.g. `make install` with another PREFIX).
CONFIG_DEFS = -DAMPPLAN_VERSION='"$(VERSION)"' -DAMPPLAN_DATADIR='"$(DATADIR)"'
BUILD ?= build
SAN = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

LIB_SRC := $(wildcard costmodel/*.c input/*.c search/*.c output/*.c calibrate/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
# The longest suites first, so that -j keeps every core busy to the end.
TEST_FIRST := check_search check_cli_plans check_limits check_cluster check_cli
TEST_SRC := $(wildcard tests/check_*.c)
FUZZ_TARGETS := model hf cluster report search diff
TESTS := $(TEST_FIRST:%=$(BUILD)/tests/%) \
	$(filter-out $(TEST_FIRST:%=$(BUILD)/tests/%),$(TEST_SRC:tests/%.c=$(BUILD)/tests/%))

all: $(BUILD)/ampplan ampplan

ampplan: $(BUILD)/ampplan
	@[ "$(BUILD)" = build ] && cp $< $@ || true

$(BUILD)/ampplan: $(BUILD)/planner/main.o $(BUILD)/libampplan.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libampplan.a: $(LIB_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/planner/main.o $(BUILD)/input/datafile.o: $(BUILD)/config.stamp

# Rewritten only when VERSION or DATADIR changed (git's GIT-CFLAGS).
$(BUILD)/config.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(VERSION) $(DATADIR)' | cmp -s - $@ || echo '$(VERSION) $(DATADIR)' >$@

# Phony, or .SECONDARY below would let a missing FORCE leave the stamp as is.
.PHONY: FORCE

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/tests/testutil.o $(BUILD)/libampplan.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(CHECK_LIBS)

# The fuzz targets (tests/fuzz) without libFuzzer: tests/fuzz/replay.c runs
# one over its seeds and a fixed set of mutants (`make check`'s sanitizer
# pass; `make fuzz` below is the fuzzing).
$(BUILD)/tests/fuzz/replay_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/tests/fuzz/replay.o \
		$(BUILD)/libampplan.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: EXTRA_CFLAGS = -Itests -DAMPPLAN_BIN='"$(BUILD)/ampplan"' -DTEST_DIR='"$(BUILD)"'
$(BUILD)/tests/fuzz/%.o: EXTRA_CFLAGS = -Itests/fuzz

# Installs the Debian packages if missing (no-op when present).
deps:
	@scripts/install-deps.sh

# And what only the tests need (Check, pkg-config, the renderers of the
# timeline SVG and the man page, PyTorch for the profiling script's test),
# in one apt run; clang's libFuzzer for `make fuzz` (fuzz-deps).
test-deps:
	@scripts/install-deps.sh --test

fuzz-deps:
	@scripts/install-deps.sh --fuzz

# The main job on the shipped defaults.
demo: deps
	@$(MAKE) --no-print-directory all
	./ampplan --model profiles/llama70b.json --cluster clusters/mixed.json

# Every test suite, plain and under AddressSanitizer + UBSan (with the fuzz
# targets replayed over their seeds and mutants, FUZZ_REPLAY), the install
# check and the validation against published measurements as a regression
# (no file may do worse than tests/data/validation/limits.txt). In two
# steps, each with JOBS jobs side by side (default: one per core) shared by
# both builds: the tests' packages installed while the plain and the
# sanitizer libraries compile (check-build), then both passes' suites
# (check-run), each suite's output printed whole when it ends (-O). The
# sanitizer pass (SAN_ENV, SAN_PASS) runs the search's property tests on a
# quarter of their seeds (tests/testutil.h test_seeds), and ASan keeps 16
# MB of freed memory in quarantine to catch a use after free (its default
# 256 MB costs the CLI suites a fifth of their time in page faults;
# ASAN_OPTIONS overrides). It runs each suite's tests in one process
# (CK_FORK=no): LeakSanitizer checks a process at its exit, about 60 ms
# each on a 2-core machine, and Check forks one for every test (the
# suites' CPU: 220 -> 161 s). A leak still fails the suite, reported at
# its end; the plain pass keeps a process a test (isolation, timeouts).
# $(MAKE) stands in each recipe itself, so that the sub-makes share the
# jobs.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
SAN_ENV = AMPPLAN_TEST_SEEDS_DIV=4 CK_FORK=no ASAN_OPTIONS=$${ASAN_OPTIONS:-quarantine_size_mb=16}
SAN_PASS = --no-print-directory BUILD=build/san CFLAGS="$(SAN)" LDFLAGS="$(SAN)" \
	ONCE_CHECKS=no FUZZ_REPLAY=yes
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) -O check-build
	@$(MAKE) --no-print-directory -j$(JOBS) -O check-run

check-build: test-deps check-build-plain check-build-san
check-build-plain:
	@$(MAKE) --no-print-directory all
check-build-san:
	@$(MAKE) $(SAN_PASS) build/san/ampplan

check-run: check-run-plain check-run-san
check-run-plain:
	@$(MAKE) --no-print-directory test
check-run-san:
	@$(SAN_ENV) $(MAKE) $(SAN_PASS) test

# Every suite, one target each (so that -j runs them side by side, and -k
# all of them past a failure), and with ONCE_CHECKS=yes (the plain pass)
# tests/check_install.sh (`make install` into a temporary PREFIX) and
# scripts/validate.sh --regression. FUZZ_REPLAY=yes adds each fuzz target
# run by tests/fuzz/replay.c over its seeds and FUZZ_REPLAY_RUNS mutants
# (fewer for the targets that search: about 0.03 s a run under the
# sanitizers).
ONCE_CHECKS ?= yes
FUZZ_REPLAY ?= no
FUZZ_REPLAY_RUNS ?= 300
FUZZ_REPLAY_RUNS_report ?= 100
FUZZ_REPLAY_RUNS_search ?= 100
FUZZ_REPLAY_RUNS_diff ?= 10
REPLAYS := $(if $(filter yes,$(FUZZ_REPLAY)),$(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/replay_%))
TEST_RUNS := $(TESTS:%=%.run) $(REPLAYS:%=%.run) \
	$(if $(filter yes,$(ONCE_CHECKS)),$(BUILD)/install-check.run $(BUILD)/validate.run)
test: test-deps $(BUILD)/ampplan $(TESTS) $(REPLAYS)
	@$(MAKE) --no-print-directory -k $(TEST_RUNS)

$(TESTS:%=%.run): %.run: %
	@echo "== $<"; $<

$(REPLAYS:%=%.run): $(BUILD)/tests/fuzz/replay_%.run: $(BUILD)/tests/fuzz/replay_%
	@echo "== $< (fuzz_$* replayed)"; \
		$< -runs=$(or $(FUZZ_REPLAY_RUNS_$*),$(FUZZ_REPLAY_RUNS)) tests/fuzz/corpus/$*

$(BUILD)/install-check.run: $(BUILD)/ampplan
	@echo "== tests/check_install.sh"; sh tests/check_install.sh $(BUILD)

$(BUILD)/validate.run: $(BUILD)/ampplan
	@echo "== scripts/validate.sh --regression"; \
		AMPPLAN=$(BUILD)/ampplan scripts/validate.sh --regression

# Predicted vs published iteration times against the targets of README
# "Validation"; with VALIDATE_STRICT=0 it reports missed targets but exits 0.
validate: deps
	@$(MAKE) --no-print-directory all
	scripts/validate.sh

# `ampplan calibrate` on each validation file: calibrated on 5 of its rows,
# the others predicted; prints README "Calibration"'s tables.
calibrate-validation: deps
	@$(MAKE) --no-print-directory all
	scripts/calibrate_validation.sh

# Search time and memory on generated clusters of 64 to 16,384 GPUs.
bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench
	$(BUILD)/bench

$(BUILD)/bench: $(BUILD)/tests/bench.o $(BUILD)/libampplan.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# libFuzzer targets (tests/fuzz): the library built again with clang's
# fuzzer, ASan and UBSan into build/fuzz. `make fuzz` (installing clang-14
# and libFuzzer if missing) runs each target for FUZZ_SECONDS on its seeds
# (tests/fuzz/corpus/T; new inputs go to build/fuzz/corpus/T, crashes to
# build/fuzz/crashes/). `make check` replays them without libFuzzer
# (FUZZ_REPLAY above).
FUZZ_CC ?= clang-14
FUZZ_SECONDS ?= 60
FUZZ_DIR = build/fuzz
FUZZ_SAN = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wpedantic -MMD -MP \
	-pthread -Icostmodel -Iinput -Isearch -Ioutput -Itests/fuzz $(CONFIG_DEFS) $(FUZZ_SAN)
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_DIR)/%.o)
FUZZ_RUN = -timeout=30 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=0

$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_DIR)/libampplan.a: $(FUZZ_LIB_OBJ)
	$(AR) rcs $@ $^

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/tests/fuzz/fuzz_%.o $(FUZZ_DIR)/libampplan.a
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-deps
	@$(MAKE) --no-print-directory fuzz-build
	@mkdir -p $(FUZZ_DIR)/crashes; fail=0; for t in $(FUZZ_TARGETS); do \
		echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; mkdir -p $(FUZZ_DIR)/corpus/$$t; \
		$(FUZZ_DIR)/fuzz_$$t $(FUZZ_RUN) -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$t- \
			$(FUZZ_DIR)/corpus/$$t tests/fuzz/corpus/$$t || fail=1; \
	done; exit $$fail

# The binary, the man page and the data files (DATA_DIRS into DATADIR, which
# the binary looks in); DESTDIR stages the tree for a package.
install: $(BUILD)/ampplan
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1"
	install -m 755 $(BUILD)/ampplan "$(DESTDIR)$(BINDIR)/ampplan"
	install -m 644 ampplan.1 "$(DESTDIR)$(MANDIR)/man1/ampplan.1"
	for d in $(DATA_DIRS); do \
		install -d "$(DESTDIR)$(DATADIR)/$$d" && \
		install -m 644 $$d/*.json "$(DESTDIR)$(DATADIR)/$$d/" || exit 1; \
	done

format:
	clang-format -i costmodel/*.[ch] input/*.[ch] search/*.[ch] output/*.[ch] calibrate/*.[ch] planner/*.[ch] tests/*.[ch]

clean:
	rm -rf build ampplan

.PHONY: all deps test-deps fuzz-deps demo check check-build check-build-plain check-build-san \
	check-run check-run-plain check-run-san test validate calibrate-validation bench \
	install format clean fuzz fuzz-build $(TEST_RUNS)

.SECONDARY:
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
