# cprof — build, test, install.  `make help` lists the targets; README.md explains them.
#
# Every src/*.c and src/*/*.c is compiled into one Lua C module, cprof.core:
#   build/lua5.4/cprof/core.so   make                (default LUA=lua5.4)
#   build/luajit/cprof/core.so   make LUA=luajit
#   build/asan/cprof/core.so     make asan           (lua5.4, AddressSanitizer + UBSan)
# Objects go to build/<variant>/obj/<folder>/.  Nothing outside build/ is ever written, except by
# `make install` (PREFIX, DESTDIR) and `make deps` (Debian packages).

.DEFAULT_GOAL := all

# ---------------------------------------------------------------------------------------------
# Which Lua

LUA ?= lua5.4

ifeq ($(LUA),lua5.4)
  LUA_CMD     ?= lua5.4
  LUA_VERSION := 5.4
else ifeq ($(LUA),luajit)
  LUA_CMD     ?= luajit
  LUA_VERSION := 5.1
else
  $(error LUA must be lua5.4 or luajit, not '$(LUA)')
endif

# pkg-config name of each build variant, and the include flag used when pkg-config is absent
# (it is only absent before `make deps` has run).
pc.lua5.4        := lua5.4
pc.luajit        := luajit
pc.asan          := lua5.4
pc.tsan          := lua5.4
pcfallback.lua5.4 := -I/usr/include/lua5.4
pcfallback.luajit := -I/usr/include/luajit-2.1
pcfallback.asan   := -I/usr/include/lua5.4
pcfallback.tsan   := -I/usr/include/lua5.4

# Deferred (=) so that pkg-config is asked only when a recipe runs, i.e. after `make deps`.
lua_cflags = $(shell pkg-config --cflags $(pc.$(1)) 2>/dev/null || echo $(pcfallback.$(1)))

# ---------------------------------------------------------------------------------------------
# Compiler flags

CC        ?= cc
ASAN_CC   ?= gcc
CFLAGS    ?= -O2
CPPFLAGS  ?=
LDFLAGS   ?=
LIBS      := -lm -lpthread -ldl
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
TSAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer -g -O1

# Every function starts a cache line: where the hook's and the engine's code fall against each
# other moved a coroutine switch's cost by up to 8 ns from one build to the next (the branch
# predictors and the op cache index by address), and each edit drew another placement; aligned,
# an edit moves no other function within its line (bench/README.md, "What moves the numbers").
BASE_CFLAGS = -std=c11 -Wall -Wextra -Werror -falign-functions=64 -Isrc

cc.lua5.4 = $(CC)
cc.luajit = $(CC)
cc.asan   = $(ASAN_CC)
cc.tsan   = $(ASAN_CC)

cflags.lua5.4 = $(BASE_CFLAGS) $(CFLAGS) -fPIC -D_GNU_SOURCE $(CPPFLAGS) $(call lua_cflags,lua5.4)
cflags.luajit = $(BASE_CFLAGS) $(CFLAGS) -fPIC -D_GNU_SOURCE $(CPPFLAGS) $(call lua_cflags,luajit)
cflags.asan   = $(BASE_CFLAGS) $(SAN_FLAGS) -fPIC -D_GNU_SOURCE $(CPPFLAGS) $(call lua_cflags,asan)
cflags.tsan   = $(BASE_CFLAGS) $(TSAN_FLAGS) -fPIC -D_GNU_SOURCE $(CPPFLAGS) $(call lua_cflags,tsan)

# The module is never linked against liblua: the interpreter that loads it provides the API.
ldflags.lua5.4 = -shared $(LDFLAGS)
ldflags.luajit = -shared $(LDFLAGS)
# -z nodelete keeps the sanitized module mapped after lua_close() dlclose()s it, so that the
# leak reports printed at exit can still name cprof's functions.
ldflags.asan   = -shared $(SAN_FLAGS) -Wl,-z,nodelete $(LDFLAGS)
ldflags.tsan   = -shared $(TSAN_FLAGS) $(LDFLAGS)

SRCS := $(sort $(wildcard src/*.c src/*/*.c))
HDRS := $(sort $(wildcard src/*.h src/*/*.h))

# ---------------------------------------------------------------------------------------------
# Paths

RESULTS_DIR := build/test-results
SPEC_DIR    ?= spec
BUSTED      ?= /usr/bin/busted
BUSTED_FLAGS ?=
DEMO        ?= examples/json_demo.lua
VALGRIND_RUN ?= examples/fib.lua 20
# bench/alloc.lua holds the workloads of bench-alloc, not a script of its own.
BENCH_SCRIPTS ?= $(filter-out bench/alloc.lua,$(sort $(wildcard bench/*.lua)))

PREFIX  ?= /usr/local
DESTDIR ?=
INSTALL ?= install
inst_lua = $(DESTDIR)$(PREFIX)/share/lua/$(LUA_VERSION)
inst_lib = $(DESTDIR)$(PREFIX)/lib/lua/$(LUA_VERSION)
inst_bin = $(DESTDIR)$(PREFIX)/bin
inst_inc = $(DESTDIR)$(PREFIX)/include
inst_man = $(DESTDIR)$(PREFIX)/share/man
inst_doc = $(DESTDIR)$(PREFIX)/share/doc/cprof

# What `make install` puts in share/doc/cprof/ (paths kept, so that README.md's links work),
# and the manual pages: cprof-stats.1 is made from cprof-stats' own option table.
DOCS := README.md LICENSE CHANGELOG.md $(sort $(wildcard docs/*.md))
MANS := build/man/man1/cprof-stats.1 build/man/man3/cprof.3

# The environment that makes an interpreter use this checkout: lua/ for Lua modules,
# build/<variant>/ for C modules, bin/ for the tools.  `;;` keeps Lua's default paths.
# The _5_4 variables are removed because lua5.4 would prefer them over LUA_PATH/LUA_CPATH.
INPLACE_LUA_PATH = $(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;;
inplace_cpath    = $(CURDIR)/build/$(1)/?.so;;
inplace_env      = env -u LUA_PATH_5_4 -u LUA_CPATH_5_4 LUA_PATH='$(INPLACE_LUA_PATH)' \
                   LUA_CPATH='$(call inplace_cpath,$(1))' PATH="$(CURDIR)/bin:$$PATH"

# ---------------------------------------------------------------------------------------------
# Debian packages

DEPS_PKGS  := lua5.4 liblua5.4-dev luajit libluajit-5.1-dev lua-lpeg lua-cjson lua-busted luarocks \
              gcc make pkg-config clang libclang-rt-14-dev
EXTRA_DEPS ?=
ifneq ($(filter valgrind,$(MAKECMDGOALS)),)
  EXTRA_DEPS += valgrind
endif
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# When a goal needs the packages, every compile waits for `deps` (order-only), so that
# `make -j2 demo` on a fresh machine never starts gcc before gcc is installed.
DEPS_FIRST := $(if $(filter test demo asan valgrind bench,$(MAKECMDGOALS)),deps)

# ---------------------------------------------------------------------------------------------
# Targets

.PHONY: all deps test spec spec-memory spec-public check-install check-includes demo install uninstall \
        env asan valgrind bench bench-alloc ctest rockspecs screenshots clean help FORCE

all: build/$(LUA)/cprof/core.so $(MANS)

help:
	@echo 'make                  build build/$(LUA)/cprof/core.so (LUA=lua5.4 or LUA=luajit)'
	@echo 'make deps             install the Debian packages that are missing'
	@echo 'make test             deps, then specs under lua5.4 and luajit, then install checks'
	@echo 'make spec             only the specs, under $$(LUA)'
	@echo 'make spec-public      the lua5.4 specs with the fast path off (CPROF_FAST_PATH=0)'
	@echo 'make demo             profile $(DEMO) with cprof.auto'
	@echo 'make install          install under PREFIX=$(PREFIX) (DESTDIR honoured); says what to set'
	@echo 'make uninstall        remove what `make install` put under PREFIX'
	@echo 'eval "$$(make -s env)"  use this checkout from any directory, with lua5.4 and luajit'
	@echo 'make rockspecs        build/rockspec/: the rockspec for LuaRocks with LuaJIT'
	@echo 'make asan             specs under AddressSanitizer + UBSan'
	@echo 'make valgrind         $(VALGRIND_RUN) under valgrind'
	@echo 'make bench            run bench/*.lua, then bench-alloc'
	@echo 'make bench-alloc      cprof'"'"'s allocator against the default one (and mimalloc)'
	@echo 'make ctest            C unit tests of the allocator, the hash index and the engine (also ASan, TSan)'
	@echo 'make check-includes   the #include graph of src/ has no cycle'
	@echo 'make export-readers   the programs the export specs read exports with (python3, go, ...)'
	@echo 'make screenshots      the pictures of docs/ taken from the HTML report in headless Chromium'
	@echo 'make clean            remove build/'

# Build rules for one variant ($(1) = lua5.4, luajit or asan).
# build/<variant>/.flags holds the compile and link commands and the source list; it changes
# (and so forces a rebuild) only when one of those does.
define variant_rules
build/$(1)/.flags: FORCE | $$(DEPS_FIRST)
	@mkdir -p $$(@D)
	@printf '%s\n' '$$(cc.$(1)) $$(cflags.$(1)) | $$(ldflags.$(1)) $$(LIBS) | $$(SRCS)' > $$@.tmp
	@if cmp -s $$@.tmp $$@; then rm -f $$@.tmp; else mv -f $$@.tmp $$@; fi

build/$(1)/obj/%.o: src/%.c $$(HDRS) build/$(1)/.flags | $$(DEPS_FIRST)
	@mkdir -p $$(@D)
	$$(cc.$(1)) $$(cflags.$(1)) -c -o $$@ $$<

build/$(1)/cprof/core.so: $$(patsubst src/%.c,build/$(1)/obj/%.o,$$(SRCS)) build/$(1)/.flags
	@test -n '$$(SRCS)' || { echo 'cprof: there is no src/**/*.c to build' >&2; exit 1; }
	@mkdir -p $$(@D)
	$$(cc.$(1)) $$(ldflags.$(1)) -o $$@ $$(filter %.o,$$^) $$(LIBS)

build/$(1)/emptyhook.so: bench/emptyhook.c build/$(1)/.flags | $$(DEPS_FIRST)
	@mkdir -p $$(@D)
	$$(cc.$(1)) $$(cflags.$(1)) $$(ldflags.$(1)) -o $$@ $$< $$(LIBS)
endef
$(foreach v,lua5.4 luajit asan tsan,$(eval $(call variant_rules,$(v))))

deps:
	@missing=''; \
	for p in $(DEPS_PKGS) $(EXTRA_DEPS); do \
	  dpkg -s "$$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

# ---------------------------------------------------------------------------------------------
# Tests
#
# Each busted run uses tools/busted-results.lua as its output handler: the usual utfTerminal
# output on the terminal, plus build/test-results/<suite>.json with the counts (kept up to date
# after every test, so a crash still leaves what ran).  tools/test-summary.sh reads those files.

# $(call run_suite,SUITE,INTERPRETER,VARIANT,EXTRA-ENV): one busted run, then its summary line.
# XDG_CACHE_HOME names a folder that does not exist: a calibration this machine keeps
# (CPROF_CALIBRATE=save) is not used by the specs' profiles.
run_suite = mkdir -p $(RESULTS_DIR) && rm -f $(RESULTS_DIR)/$(1).json $(RESULTS_DIR)/$(1).exit && \
	echo "==> specs under $(1): $(2) $(BUSTED) $(SPEC_DIR)" && \
	rc=0; \
	$(call inplace_env,$(3)) $(4) XDG_CACHE_HOME='$(CURDIR)/$(RESULTS_DIR)/no-cache' CPROF_TEST_SUITE='$(1)' \
	  CPROF_TEST_RESULTS='$(CURDIR)/$(RESULTS_DIR)/$(1).json' \
	  $(2) $(BUSTED) -o '$(CURDIR)/tools/busted-results.lua' $(BUSTED_FLAGS) $(SPEC_DIR) || rc=$$?; \
	if [ $$rc -ne 0 ]; then echo; echo "$$rc" > $(RESULTS_DIR)/$(1).exit; fi; \
	bash tools/test-summary.sh --suites-only $(RESULTS_DIR) $(1) || rc=1; \
	exit $$rc

# Only the specs, under $(LUA).
spec: all
	@$(call run_suite,$(LUA),$(LUA_CMD),$(LUA))

# The lua5.4 specs again with cprof's allocator installed as the interpreter's own, before
# busted loads: everything must work the same on top of it (CPROF_MEMORY=1 does this for
# cprof.auto).
spec-memory: LUA=lua5.4
spec-memory: all
	@$(call run_suite,memory,lua5.4 -e 'require("cprof.memory").install()',lua5.4)

# The lua5.4 specs again with the hook's fast path off (docs/SEMANTICS.md, "The fast path"):
# every profile resolves calls through Lua's public API, as on a release cprof does not know.
spec-public: LUA=lua5.4
spec-public: all
	@$(call run_suite,public,lua5.4,lua5.4,CPROF_FAST_PATH=0)

# Everything; each step runs even when an earlier one failed, and the exit status says
# whether any failed. The LuaJIT build comes first: some lua5.4 specs run both builds.
test: deps export-readers
	@status=0; suites=lua5.4; \
	if command -v luajit >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory LUA=luajit all || status=1; \
	fi; \
	$(MAKE) --no-print-directory LUA=lua5.4 spec || status=1; \
	if command -v luajit >/dev/null 2>&1; then \
	  suites="$$suites luajit"; \
	  $(MAKE) --no-print-directory LUA=luajit spec || status=1; \
	else \
	  echo "==> luajit is not installed: skipping the LuaJIT specs"; \
	fi; \
	$(MAKE) --no-print-directory spec-memory || status=1; \
	suites="$$suites memory"; \
	$(MAKE) --no-print-directory spec-public || status=1; \
	suites="$$suites public"; \
	$(MAKE) --no-print-directory ctest || status=1; \
	echo "==> the benchmarks' C programs build"; \
	$(MAKE) --no-print-directory build/lua5.4/bench-alloc build/lua5.4/emptyhook.so || status=1; \
	$(MAKE) --no-print-directory check-includes || status=1; \
	$(MAKE) --no-print-directory check-install || status=1; \
	$(MAKE) --no-print-directory fuzz-short || status=1; \
	echo "==> summary"; \
	bash tools/test-summary.sh $(RESULTS_DIR) $$suites || status=1; \
	if [ $$status -ne 0 ]; then echo "make test: FAILED"; fi; \
	exit $$status

# The C unit tests (tests/test_*.c), each built twice against cprof's objects: as is (those of
# build/lua5.4/) and with AddressSanitizer + UBSan (those of build/asan/; LeakSanitizer checks
# that closing a heap or a profile frees everything). They link liblua5.4 for whole states.
# The tests that start threads (CTESTS_TSAN) are built a third time with ThreadSanitizer
# (objects of build/tsan/), which fails them on any data race in cprof's code.
CTESTS     := $(patsubst tests/%.c,%,$(sort $(wildcard tests/test_*.c)))
lua54_libs  = $(shell pkg-config --libs lua5.4 2>/dev/null || echo -llua5.4)
ctest_objs  = $(patsubst src/%.c,build/$(1)/obj/%.o,$(SRCS))
ASAN_RUN   := ASAN_OPTIONS='detect_leaks=1:abort_on_error=1' \
              UBSAN_OPTIONS='halt_on_error=1:print_stacktrace=1'
CTESTS_TSAN := test_threads
TSAN_RUN    := TSAN_OPTIONS='halt_on_error=1:exitcode=66'

build/ctest/%: tests/%.c tests/ctest.h $(HDRS) $(call ctest_objs,lua5.4) | $(DEPS_FIRST)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -D_GNU_SOURCE $(call lua_cflags,lua5.4) -o $@ $< \
	  $(call ctest_objs,lua5.4) $(lua54_libs) -ldl -lm -lpthread

build/ctest/asan/%: tests/%.c tests/ctest.h $(HDRS) $(call ctest_objs,asan) | $(DEPS_FIRST)
	@mkdir -p $(@D)
	$(ASAN_CC) $(BASE_CFLAGS) $(SAN_FLAGS) -D_GNU_SOURCE $(call lua_cflags,lua5.4) -o $@ $< \
	  $(call ctest_objs,asan) $(lua54_libs) -ldl -lm -lpthread

build/ctest/tsan/%: tests/%.c tests/ctest.h $(HDRS) $(call ctest_objs,tsan) | $(DEPS_FIRST)
	@mkdir -p $(@D)
	$(ASAN_CC) $(BASE_CFLAGS) $(TSAN_FLAGS) -D_GNU_SOURCE $(call lua_cflags,lua5.4) -o $@ $< \
	  $(call ctest_objs,tsan) $(lua54_libs) -ldl -lm -lpthread

ctest: $(addprefix build/ctest/,$(CTESTS)) $(addprefix build/ctest/asan/,$(CTESTS)) \
       $(addprefix build/ctest/tsan/,$(CTESTS_TSAN))
	@status=0; \
	for t in $(CTESTS); do \
	  echo "==> C unit tests: build/ctest/$$t"; build/ctest/$$t || status=1; \
	done; \
	for t in $(CTESTS); do \
	  echo "==> C unit tests under ASan + UBSan: build/ctest/asan/$$t"; \
	  $(ASAN_RUN) build/ctest/asan/$$t || status=1; \
	done; \
	for t in $(CTESTS_TSAN); do \
	  echo "==> C unit tests under ThreadSanitizer: build/ctest/tsan/$$t"; \
	  $(TSAN_RUN) build/ctest/tsan/$$t || status=1; \
	done; \
	exit $$status

# Files, modules (x.c with x.h and x_*) and folders of src/ include each other without a cycle.
check-includes:
	@$(LUA_CMD) tools/check-includes.lua $(SRCS) $(HDRS)

# luarocks make and make install into scratch trees under build/check-install/.
check-install: build/lua5.4/cprof/core.so
	@MAKE='$(MAKE)' bash tools/check-install.sh

# The sanitizer runtimes are preloaded because lua5.4 itself is not instrumented.
# tools/lsan.supp (when present) lists leaks outside cprof that LeakSanitizer must ignore.
ASAN_ENV = LD_PRELOAD='$(shell $(ASAN_CC) -print-file-name=libasan.so) $(shell $(ASAN_CC) -print-file-name=libubsan.so)' \
           ASAN_OPTIONS='detect_leaks=1:abort_on_error=1' \
           UBSAN_OPTIONS='halt_on_error=1:abort_on_error=1:print_stacktrace=1' \
           $(if $(wildcard tools/lsan.supp),LSAN_OPTIONS='suppressions=$(CURDIR)/tools/lsan.supp:print_suppressions=0')

asan: deps build/asan/cprof/core.so
	@$(call run_suite,asan,lua5.4,asan,$(ASAN_ENV))

# --keep-debuginfo: lua_close() dlclose()s core.so before valgrind prints its leak report.
valgrind: deps all
	@echo "==> valgrind $(LUA_CMD) -l cprof.auto $(VALGRIND_RUN)"
	@$(call inplace_env,$(LUA)) valgrind --error-exitcode=1 --leak-check=full --keep-debuginfo=yes \
	  $(LUA_CMD) -l cprof.auto $(VALGRIND_RUN)

# ---------------------------------------------------------------------------------------------
# Fuzzing the dump reader: fuzz/fuzz_read.c is a libFuzzer harness (clang), linked with the
# reader and writer and liblua5.4. `make fuzz` runs it for FUZZ_SECONDS from the committed seed
# corpus fuzz/corpus/ (fuzz/make_corpus.lua regenerates it); the inputs it finds go to
# build/fuzz/corpus/, a crashing input to build/fuzz/crash-*. `make test` runs fuzz-short: 30 s,
# skipped when clang is not installed.

FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_SRCS    := fuzz/fuzz_read.c src/dump/read.c src/dump/write.c src/dump/out.c src/dump/crc32c.c \
                src/util/fault.c
FUZZ_FLAGS   := -std=c11 -Wall -Wextra -Werror -g -O1 -D_GNU_SOURCE \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
# -malloc_limit_mb: no input (at most a few KB) may make the reader allocate that much.
FUZZ_RUN_FLAGS = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 \
                 -malloc_limit_mb=64 -print_final_stats=1 -artifact_prefix=build/fuzz/ \
                 -dict=fuzz/dump.dict

.PHONY: fuzz fuzz-short

build/fuzz/fuzz_read: $(FUZZ_SRCS) $(HDRS) | deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Isrc $(call lua_cflags,lua5.4) -o $@ $(FUZZ_SRCS) \
	  $$(pkg-config --libs lua5.4 2>/dev/null || echo -llua5.4) -lm

fuzz: build/fuzz/fuzz_read
	@mkdir -p build/fuzz/corpus
	@echo "==> fuzzing the dump reader for $(FUZZ_SECONDS) s: build/fuzz/fuzz_read"
	@build/fuzz/fuzz_read $(FUZZ_RUN_FLAGS) build/fuzz/corpus fuzz/corpus 2> build/fuzz/last-run.log; \
	rc=$$?; grep -aE '^(stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==|SUMMARY|fuzz_read:)' \
	  build/fuzz/last-run.log; \
	if [ $$rc -ne 0 ]; then tail -n 60 build/fuzz/last-run.log; echo "fuzz: FAILED (log: build/fuzz/last-run.log)"; fi; \
	exit $$rc

fuzz-short:
	@if command -v $(FUZZ_CC) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=30; \
	else \
	  echo "==> $(FUZZ_CC) is not installed: skipping the fuzz run"; \
	fi

# ---------------------------------------------------------------------------------------------
# The real readers of the export formats, for spec/export_*_spec.lua: from Debian python3
# (pstats), valgrind (callgrind_annotate), golang-go (go tool pprof), chromium, nodejs and npm;
# from npm, into build/export-readers/ (never committed), speedscope (its importer and its
# file-format schema), ajv (a JSON-schema validator) and playwright-core (drives chromium).
# A reader that cannot be installed leaves its specs pending, with the reason, so this target
# never fails `make test` by itself.

EXPORT_READERS     := build/export-readers
# command:package pairs; a command already on PATH (node from elsewhere, say) is not reinstalled
EXPORT_READER_CMDS := python3:python3 callgrind_annotate:valgrind go:golang-go \
                      chromium:chromium node:nodejs npm:npm
EXPORT_READER_NPM  := speedscope@1.25.0 ajv@8.20.0 playwright-core@1.65.1

.PHONY: export-readers
# After deps: under make -j both would run apt-get at once, and the second fails on dpkg's lock.
export-readers: | deps
	@missing=''; for cp in $(EXPORT_READER_CMDS); do \
	  command -v "$${cp%%:*}" >/dev/null 2>&1 || missing="$$missing $${cp#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "export-readers: installing$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null 2>&1 || \
	  { $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null 2>&1 && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null 2>&1; } || \
	  echo "export-readers: could not install$$missing: their specs will be pending"; \
	fi
	@if [ "$$(cat $(EXPORT_READERS)/.versions 2>/dev/null)" != '$(EXPORT_READER_NPM)' ]; then \
	  if command -v npm >/dev/null 2>&1; then \
	    echo "export-readers: npm install $(EXPORT_READER_NPM) into $(EXPORT_READERS)/"; \
	    mkdir -p $(EXPORT_READERS) && \
	    npm install --prefix $(EXPORT_READERS) --no-audit --no-fund --no-save --loglevel=error \
	      $(EXPORT_READER_NPM) >/dev/null && echo '$(EXPORT_READER_NPM)' > $(EXPORT_READERS)/.versions || \
	    echo "export-readers: npm install failed: the speedscope and browser specs will be pending"; \
	  else \
	    echo "export-readers: npm is missing: the speedscope and browser specs will be pending"; \
	  fi; \
	fi

# ---------------------------------------------------------------------------------------------
# Running things with the in-place build

# The pictures of docs/ (README's among them), taken from the real HTML report by headless
# Chromium (tools/screenshots.sh): run it after a change to the report's look.
screenshots: LUA=lua5.4
screenshots: all
	@$(call inplace_env,lua5.4) bash tools/screenshots.sh

demo: deps all
	@test -f '$(DEMO)' || { echo "demo: $(DEMO) does not exist yet" >&2; exit 1; }
	@echo "==> $(LUA_CMD) -l cprof.auto $(DEMO)   (program output, then the profile on stderr)"
	@$(call inplace_env,$(LUA)) $(LUA_CMD) -l cprof.auto $(DEMO) 2>&1

bench: deps all build/$(LUA)/emptyhook.so
	@test -n '$(BENCH_SCRIPTS)' || { echo "bench: there is no bench/*.lua" >&2; exit 1; }
	@status=0; for f in $(BENCH_SCRIPTS); do \
	  echo "==> $(LUA_CMD) $$f"; \
	  $(call inplace_env,$(LUA)) $(LUA_CMD) "$$f" || status=1; \
	done; \
	if [ '$(LUA)' = lua5.4 ]; then $(MAKE) --no-print-directory bench-alloc || status=1; \
	else echo "==> bench-alloc runs with lua5.4 only (make bench-alloc)"; fi; \
	exit $$status

# cprof's allocator against Lua's default one (and mimalloc, when libmimalloc.so.2 is there:
# it is optional, loaded at run time; `make bench` tries to install libmimalloc-dev and goes on
# without it). BENCH_ALLOC_FLAGS: e.g. --reps=5 --only=binary_trees.
BENCH_ALLOC_FLAGS ?=
ALLOC_SRCS := src/mem/arena.c src/mem/chunk.c src/mem/slab.c src/mem/lalloc.c \
              src/mem/lalloc_state.c src/mem/lalloc_stats.c src/mem/lalloc_trace.c src/util/fault.c \
              src/mem/memattr.c src/util/idxmap.c src/util/array.c
build/lua5.4/bench-alloc: bench/alloc.c $(ALLOC_SRCS) $(HDRS) | $(DEPS_FIRST)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -D_GNU_SOURCE $(call lua_cflags,lua5.4) -o $@ \
	  bench/alloc.c $(ALLOC_SRCS) $(lua54_libs) -ldl -lm

bench-alloc: build/lua5.4/bench-alloc
	@dpkg -s libmimalloc-dev 2>/dev/null | grep -q '^Status: install ok installed' || \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q libmimalloc-dev >/dev/null 2>&1 || \
	  echo "bench-alloc: libmimalloc-dev could not be installed; no mimalloc column"
	@echo "==> build/lua5.4/bench-alloc $(BENCH_ALLOC_FLAGS) bench/alloc.lua"
	@build/lua5.4/bench-alloc $(BENCH_ALLOC_FLAGS) bench/alloc.lua

# lua5.4 reads LUA_PATH_5_4 and LUA_CPATH_5_4 first, luajit (and any Lua 5.1) LUA_PATH and
# LUA_CPATH: one shell runs both builds, each with its own core.so (make, make LUA=luajit).
env:
	@echo "export LUA_PATH_5_4='$(INPLACE_LUA_PATH)'"
	@echo "export LUA_CPATH_5_4='$(call inplace_cpath,lua5.4)'"
	@echo "export LUA_PATH='$(INPLACE_LUA_PATH)'"
	@echo "export LUA_CPATH='$(call inplace_cpath,luajit)'"
	@echo "export PATH='$(CURDIR)/bin':\"\$$PATH\""
	@echo "export MANPATH='$(CURDIR)/build/man':\"\$${MANPATH:-}\""

# The manual pages, laid out as a man directory so that `make -s env`'s MANPATH finds them in a
# checkout: cprof-stats.1 from the tables --help is made of (tools/mkman.lua), cprof.3 as written.
build/man/man1/cprof-stats.1: tools/mkman.lua lua/cprof/cli.lua lua/cprof/version.lua | $(DEPS_FIRST)
	@mkdir -p $(@D)
	@$(call inplace_env,$(LUA)) $(LUA_CMD) tools/mkman.lua > $@.tmp && mv -f $@.tmp $@

build/man/man3/cprof.3: man/cprof.3
	@mkdir -p $(@D)
	@cp $< $@

# LuaRocks configured for LuaJIT (lua_version 5.1) needs a rock that depends on LuaJIT rather
# than on Lua 5.4: the same rockspec with its package name and its Lua dependency changed.
build/rockspec/cprof-luajit-scm-1.rockspec: rockspec/cprof-scm-1.rockspec
	@mkdir -p $(@D)
	@sed -e '1s|.*|-- Made by `make rockspecs` from $<: cprof for LuaRocks configured for LuaJIT.|' \
	  -e 's/^package = "cprof"$$/package = "cprof-luajit"/' \
	  -e 's/"lua >= 5.4, < 5.5",/"lua ~> 5.1", "luajit >= 2.1.0-beta3",/' $< > $@.tmp
	@grep -q '^package = "cprof-luajit"$$' $@.tmp && grep -q '"luajit >= 2.1.0-beta3"' $@.tmp || \
	  { echo "rockspecs: $< no longer has the lines the LuaJIT rockspec changes" >&2; rm -f $@.tmp; exit 1; }
	@mv -f $@.tmp $@

rockspecs: build/rockspec/cprof-luajit-scm-1.rockspec

# ---------------------------------------------------------------------------------------------
# Installing

# bin/ scripts are installed with the interpreter of this build in their #! line; they find the
# modules installed next to them.  The HTML report's page files go next to its module.  Last, tools/install-env.sh says whether Lua finds cprof
# under PREFIX by default, or prints the lines that make it.
install: all
	$(INSTALL) -d '$(inst_lua)/cprof' '$(inst_lib)/cprof' '$(inst_inc)' '$(inst_bin)' \
	  '$(inst_man)/man1' '$(inst_man)/man3' '$(inst_doc)/docs'
	@set -e; for f in $$(find lua/cprof -type f \( -name '*.lua' -o -path 'lua/cprof/export/html/*' \) | sort); do \
	  rel=$${f#lua/}; \
	  echo "$(INSTALL) -D -m 644 $$f '$(inst_lua)/$$rel'"; \
	  $(INSTALL) -D -m 644 "$$f" '$(inst_lua)/'"$$rel"; \
	done
	$(INSTALL) -m 755 build/$(LUA)/cprof/core.so '$(inst_lib)/cprof/core.so'
	$(INSTALL) -m 644 src/cprof.h '$(inst_inc)/cprof.h'
	@set -e; for f in bin/*; do \
	  [ -f "$$f" ] || continue; \
	  echo "$(INSTALL) -m 755 $$f '$(inst_bin)/'$${f#bin/}  (#!/usr/bin/env $(LUA_CMD))"; \
	  sed '1s|^#!.*|#!/usr/bin/env $(LUA_CMD)|' "$$f" > '$(inst_bin)/'"$${f#bin/}.tmp"; \
	  chmod 755 '$(inst_bin)/'"$${f#bin/}.tmp"; \
	  mv -f '$(inst_bin)/'"$${f#bin/}.tmp" '$(inst_bin)/'"$${f#bin/}"; \
	done
	$(INSTALL) -m 644 build/man/man1/cprof-stats.1 '$(inst_man)/man1/cprof-stats.1'
	$(INSTALL) -m 644 build/man/man3/cprof.3 '$(inst_man)/man3/cprof.3'
	@set -e; for f in $(DOCS); do \
	  echo "$(INSTALL) -D -m 644 $$f '$(inst_doc)/'$$f"; \
	  $(INSTALL) -D -m 644 "$$f" '$(inst_doc)/'"$$f"; \
	done
	@bash tools/install-env.sh '$(PREFIX)' '$(LUA_CMD)' '$(LUA_VERSION)'

# Directories `make install` may have made, deepest first: uninstall removes the ones it leaves
# empty.  Under /usr and /usr/local, the standard directories (bin, include, share/man/man1,
# ...) stay, empty or not; the Lua ones go.
lua_dirs = '$(inst_lua)' '$(DESTDIR)$(PREFIX)/share/lua' '$(inst_lib)' '$(DESTDIR)$(PREFIX)/lib/lua'
std_dirs = '$(inst_man)/man1' '$(inst_man)/man3' '$(inst_man)' '$(DESTDIR)$(PREFIX)/share/doc' \
           '$(DESTDIR)$(PREFIX)/share' '$(DESTDIR)$(PREFIX)/lib' '$(inst_bin)' '$(inst_inc)'

uninstall:
	rm -rf '$(inst_lua)/cprof' '$(inst_lib)/cprof' '$(inst_doc)'
	rm -f '$(inst_inc)/cprof.h' '$(inst_man)/man1/cprof-stats.1' '$(inst_man)/man3/cprof.3'
	@for f in bin/*; do \
	  [ -f "$$f" ] || continue; \
	  echo "rm -f '$(inst_bin)/'$${f#bin/}"; rm -f '$(inst_bin)/'"$${f#bin/}"; \
	done
	@case '$(PREFIX)' in /usr|/usr/|/usr/local|/usr/local/) std=keep;; *) std=remove;; esac; \
	for d in $(lua_dirs) -- $(std_dirs); do \
	  if [ "$$d" = -- ]; then [ $$std = keep ] && break; continue; fi; \
	  if [ -d "$$d" ] && rmdir "$$d" 2>/dev/null; then echo "rmdir '$$d'"; fi; \
	done

clean:
	rm -rf build

FORCE:
