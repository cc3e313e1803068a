# mambalaya — build, test, fuzz and benchmark.
#
#   make              build build/mambalaya, build/libmambalaya.a and
#                     build/libmambalaya.so (the tool in process, for
#                     the Python package python/mambalaya: docs/python.md)
#   make test         unit + end-to-end tests, then again under ASan+UBSan
#                     (with MAMBALAYA_SANITIZED=1: slow cases are skipped,
#                     and the scripts of OPTIMIZED_ONLY and the unit tests
#                     of UNIT_OPTIMIZED_ONLY are not run); the
#                     last line is "N passed, M failed, K skipped"
#   make fuzz         libFuzzer on every parser: specs, safetensors,
#                     architectures (through eval), config.json (through
#                     model construction), the command line, studies,
#                     plan files (read and priced as search writes them),
#                     tokenizer.json, AccelForge workloads, Timeloop
#                     problems and export timeloop (FUZZ_SECONDS each,
#                     default 60)
#   make bench        the benchmarks under bench/, printing their figures

CC       ?= cc
CFLAGS   ?= -O2 -g
BUILD    ?= build
WARN     := -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -Wshadow \
            -Wmissing-prototypes -Wstrict-prototypes -Wpointer-arith \
            -Wformat=2 -Wvla
PTHREAD  := -pthread
# cairo draws the figures as PDF and PNG (src/report/cairo.c).
CAIRO_CFLAGS := $(shell pkg-config --cflags cairo 2>/dev/null)
CAIRO_LIBS   := $(shell pkg-config --libs cairo 2>/dev/null)
ifeq ($(CAIRO_LIBS),)
ifneq ($(MAKECMDGOALS),clean)
$(error pkg-config finds no cairo: install libcairo2-dev (README, first line))
endif
endif
LDLIBS   := -lyaml -ljansson $(CAIRO_LIBS) -lm $(PTHREAD)
# OpenMPI, when installed (libopenmpi-dev): `mpirun -n K mambalaya sweep`
# splits a study's points over K ranks (src/cli/cmd_sweep.c). Without it,
# or with `make MPI=0`, sweep runs in one process.
MPI      ?= 1
ifeq ($(MPI),1)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)
endif
# Position-independent code, so that one set of objects makes both the
# program and libmambalaya.so; without semantic interposition the
# compiler still inlines and calls directly as it would for a program.
PIC      := -fPIC -fno-semantic-interposition
ALL_CFLAGS = $(WARN) $(CFLAGS) $(PIC) $(PTHREAD) -MMD -MP

LIB_SRC  := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)))
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))

# The AccelForge renderer (src/workload/render.c runs it) is compiled in too.
EMBEDDED := $(sort $(wildcard specs/*.yaml specs/layers/*.yaml archs/*.yaml \
                              studies/*.yaml)) src/workload/render.py
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/embedded.o
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/src/main.o
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/%.o)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=all
FUZZ_SECONDS ?= 60

.SECONDARY:
.PHONY: all test test-build check-tests asan fuzz bench clean
all: $(BUILD)/mambalaya $(BUILD)/libmambalaya.so

# The executor's inner loops are written for the vectorizer.
VECTORIZE := -O3 -fno-math-errno -fno-trapping-math
$(BUILD)/src/exec/vmath.o $(BUILD)/src/exec/vm.o $(BUILD)/src/exec/scan.o: \
    ALL_CFLAGS += $(VECTORIZE)
$(BUILD)/src/report/cairo.o $(BUILD)/tests/unit/test_render.o: \
    ALL_CFLAGS += $(CAIRO_CFLAGS)
# The interpreter that renders AccelForge templates: a fixed path, never
# the one PATH finds (make PYTHON=/opt/python3 to name another).
PYTHON   ?= /usr/bin/python3
$(BUILD)/src/workload/render.o: ALL_CFLAGS += -DMAMBALAYA_PYTHON='"$(PYTHON)"'
ifneq ($(MPI_LIBS),)
$(BUILD)/src/cli/cmd_sweep.o: ALL_CFLAGS += -DMAMBALAYA_MPI $(MPI_CFLAGS)
endif

# Objects remember the flags they were compiled with: a build folder made
# with other flags (an older Makefile, another CFLAGS) is recompiled, not
# linked stale (without -fPIC, libmambalaya.so would not link).
FLAGS_STAMP := $(BUILD)/flags.stamp
$(FLAGS_STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(ALL_CFLAGS)' | cmp -s - $@ || echo '$(CC) $(ALL_CFLAGS)' >$@
.PHONY: FORCE
FORCE:

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# The shipped specs and architectures, compiled in (src/embed/embed.h).
# The list itself is a prerequisite: a file added (or removed) since the
# table was made remakes it, whatever the files' times.
EMBED_LIST := $(BUILD)/gen/embedded.list
$(EMBED_LIST): FORCE
	@mkdir -p $(dir $@)
	@echo '$(EMBEDDED)' | cmp -s - $@ || echo '$(EMBEDDED)' >$@
$(BUILD)/gen/embedded.c: tools/embed.sh $(EMBEDDED) $(EMBED_LIST)
	@mkdir -p $(dir $@)
	tools/embed.sh $(EMBEDDED) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/embedded.o: $(BUILD)/gen/embedded.c $(FLAGS_STAMP)
	$(CC) $(ALL_CFLAGS) -iquote . -c $< -o $@

$(BUILD)/libmambalaya.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/mambalaya: $(MAIN_OBJ) $(CLI_OBJ) $(BUILD)/libmambalaya.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(MPI_LIBS)

# Every command in process: mambalaya_call (src/cli/api.h), the same
# objects as the program but its main().
$(BUILD)/libmambalaya.so: $(CLI_OBJ) $(BUILD)/libmambalaya.a
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,--no-undefined -o $@ $^ \
	    $(LDLIBS) $(MPI_LIBS)

$(BUILD)/unit_tests: $(UNIT_OBJ) $(BUILD)/libmambalaya.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BUILD)/libmambalaya.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

test-build: $(BUILD)/mambalaya $(BUILD)/libmambalaya.so $(BUILD)/unit_tests

# The tests proper, against the binaries in $(BUILD), TEST_JOBS at a time.
TEST_JOBS ?= 2
export TEST_JOBS
check-tests: test-build
	tests/run.sh $(BUILD)

# The scripts not run under ASan+UBSan (tests/README.md). There the
# sanitizers run the unit tests and every script that reads an input
# (parsers, loaders, plan files, studies, configs, tensors, tokenizers),
# runs the executor or the search, writes outputs or takes the command
# line; not again those that only read the sources, nor those that check
# figures whose code others run under the sanitizers:
#  - include_graph, function_length, enum_tables read src/, not the build:
#    the same answer twice.
#  - python_install installs the package the docs' way (pip, a venv) and
#    prices one eval through it: no C code that python.sh (the library in
#    process, under the sanitizers) does not run.
#  - figures checks the layout of the figures (no text over text, a legend
#    entry per series) of reproduce and of every study: drawing runs under
#    the sanitizers in svg.sh (every kind of chart, as SVG, PDF and PNG),
#    reproduce.sh (the paper's figures, the same run) and sweep.sh (the
#    studies).
#  - reproduce_setups checks the labels of the paper's figures for other
#    setups (an architecture of another name, other settings, Mamba-2):
#    the paper's whole evaluation again, three times; reproduce.sh runs
#    it under the sanitizers (the paper's setup, a cascade without a
#    model, --layers, --model), models.sh (a config on the H100) and the
#    unit tests (repro_*).
OPTIMIZED_ONLY := include_graph function_length enum_tables python_install \
                  figures reproduce_setups

# The unit tests not run under ASan+UBSan (tests/unit/main.c leaves them
# out there, and fails on a name no test has): each walks a whole space
# that the optimized build covers in seconds and the sanitizers in
# minutes, and beside each a reduced variant, run in both builds, walks
# the same code on a few cascades for the sanitizers (a few seconds).
# The times are CPU seconds under ASan (2026-11-29, 2 cores):
#  - search_best_between_ideal_and_every_design (every cascade, prefill
#    and decode, on every architecture: about 120 s):
#    search_best_tiny_cascades, the cascades of at most 4 Einsums.
#  - search_equals_enumeration_small_cascades (every partition of the
#    space of every cascade of at most 10 Einsums, priced whole: about
#    75 s): search_equals_enumeration_tiny_cascades, at most 4.
#  - invariants_model_every_spec_arch_design (every design of every
#    cascade on every architecture: about 26 s):
#    invariants_model_tiny_cascades, at most 4.
#  - recurrence_every_cross_group_read_charged (every plan of 42
#    cascades: about 11 s): recurrence_cross_group_reads_charged_mamba1,
#    Mamba-1 and a recurrence over merged reads.
UNIT_OPTIMIZED_ONLY := search_best_between_ideal_and_every_design \
                       search_equals_enumeration_small_cascades \
                       invariants_model_every_spec_arch_design \
                       recurrence_every_cross_group_read_charged

# Everything: the optimized build, then the tests again under ASan+UBSan.
# Both runs go to the end; then the slowest jobs of both, and the last
# line sums them: "N passed, M failed, K skipped" (a skip fails under
# CI=true: tests/run.sh). The builds take TEST_JOBS jobs too (unless make
# was given its own -j).
# ASan's allocator returns NULL past its limits (as malloc would) rather
# than reporting them, so that a refused size is tested as users see it.
TEST_J = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(TEST_JOBS))
test:
	@rm -f $(BUILD)/test-counts build/asan/test-counts
	-$(MAKE) $(TEST_J) check-tests
	-MAMBALAYA_SANITIZED=1 ASAN_OPTIONS=allocator_may_return_null=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	TESTS_OPTIMIZED_ONLY="$(OPTIMIZED_ONLY)" \
	TESTS_UNIT_OPTIMIZED_ONLY="$(UNIT_OPTIMIZED_ONLY)" \
	    $(MAKE) $(TEST_J) check-tests BUILD=build/asan \
	    CFLAGS="$(SAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined"
	@tests/run.sh --summary $(BUILD) build/asan

asan:
	$(MAKE) test-build BUILD=build/asan CFLAGS="$(SAN_FLAGS)" \
	    LDFLAGS="-fsanitize=address,undefined"

# libFuzzer needs clang. Each harness tests/fuzz/fuzz_NAME.c runs for
# FUZZ_SECONDS from its own seed corpus FUZZ_SEEDS_NAME (the shipped
# files among them).
FUZZERS := spec safetensors arch config cli study plan tokenizer \
           accelforge timeloop export
FUZZ_SEEDS_spec := specs/*.yaml tests/specs/good/*.yaml tests/specs/bad/*.yaml
FUZZ_SEEDS_safetensors := tests/fuzz/seeds/safetensors/*
FUZZ_FLAGS_safetensors := -dict=tests/fuzz/safetensors.dict
FUZZ_SEEDS_arch := archs/*.yaml tests/archs/accelforge/*.yaml
FUZZ_SEEDS_config := tests/fuzz/seeds/config/* tests/configs/*.json
FUZZ_SEEDS_cli := tests/fuzz/seeds/cli/*
FUZZ_FLAGS_cli := -dict=tests/fuzz/cli.dict -close_fd_mask=2
FUZZ_SEEDS_study := studies/*.yaml tests/fuzz/seeds/study/*
FUZZ_SEEDS_plan := tests/fuzz/seeds/plan/*
FUZZ_SEEDS_tokenizer := tests/fuzz/seeds/tokenizer/*
FUZZ_SEEDS_accelforge := tests/fuzz/seeds/accelforge/* \
                         tests/specs/bad/*accelforge*.yaml
FUZZ_SEEDS_timeloop := tests/fuzz/seeds/timeloop/* \
                       tests/specs/peers/timeloop/conv.yaml \
                       tests/specs/bad/*timeloop*.yaml
FUZZ_SEEDS_export := specs/*.yaml tests/specs/good/*.yaml
FUZZ_FLAGS_export := -close_fd_mask=2

# The library is compiled once for all harnesses (instrumented for
# coverage and the sanitizers), each harness then linked against it. The
# objects track their headers (-MMD): a struct changed in a header must
# recompile them, or the harnesses read stale layouts.
FUZZ_CC := clang $(WARN) $(CAIRO_CFLAGS) -iquote . -O1 -g -fno-sanitize-recover=all \
           -MMD -MP
FUZZ_OBJ := $(LIB_SRC:%.c=$(BUILD)/fuzz/obj/%.o) $(BUILD)/fuzz/obj/embedded.o

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(BUILD)/fuzz/obj/embedded.o: $(BUILD)/gen/embedded.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

# The command-line harness also needs the CLI's option code; the export
# harness runs the command itself.
FUZZ_CLI_OBJ := $(BUILD)/fuzz/obj/src/cli/args.o \
    $(BUILD)/fuzz/obj/src/cli/opts.o $(BUILD)/fuzz/obj/src/cli/modelopts.o
FUZZ_EXPORT_OBJ := $(FUZZ_CLI_OBJ) $(BUILD)/fuzz/obj/src/cli/cmd_export.o
$(BUILD)/fuzz/fuzz_cli: $(FUZZ_CLI_OBJ)
$(BUILD)/fuzz/fuzz_export: $(FUZZ_EXPORT_OBJ)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined $^ -o $@ $(LDLIBS)

.PHONY: $(FUZZERS:%=fuzz-%)
fuzz: $(FUZZERS:%=fuzz-%)

$(FUZZERS:%=fuzz-%): fuzz-%: $(BUILD)/fuzz/fuzz_%
	@rm -rf $(BUILD)/fuzz/corpus-$* && mkdir -p $(BUILD)/fuzz/corpus-$*
	@# each seed named by its path: two folders may hold files of one name
	for f in $(FUZZ_SEEDS_$*); do \
	  cp "$$f" "$(BUILD)/fuzz/corpus-$*/$$(echo "$$f" | tr / _)" || exit 1; \
	done
	$< -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 $(FUZZ_FLAGS_$*) \
	    $(BUILD)/fuzz/corpus-$*

bench: $(BUILD)/mambalaya $(BENCH_BIN)
	bash bench/run.sh $(BUILD)

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(UNIT_OBJ:.o=.d) \
         $(BENCH_BIN:=.d) $(FUZZ_OBJ:.o=.d) $(FUZZ_EXPORT_OBJ:.o=.d)
