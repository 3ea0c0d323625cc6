# gcsh build.  `make` builds build/gcsh; `make run` starts it on 2 ranks;
# `make test` runs every test.  Both check what they need first: anything
# missing is installed where apt-get is, listed elsewhere (make deps).
#
# The cuda backend is built when nvcc and nccl.h are found (CUDA=0 disables it,
# CUDA=1 insists).  The binary still runs on machines without a GPU or driver:
# it then picks the host backend at run time.  `make run` is the exception:
# where no GPU is visible it builds the host backend alone (build-host/, the
# kernels take most of a clean build), unless CUDA=1 or GPU=1 asks for it;
# `make` and `make test` (CI) always compile the cuda backend where they can,
# so a CUDA compile error is caught on any machine.
#
# Parallel by default (one job per core; make -jN chooses), one line per step
# (`CC src/main.c`); V=1 prints the whole commands.
NPROC := $(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0) # the top make; a sub-make shares its jobs
MAKEFLAGS += -j$(NPROC)
endif
ifeq ($(V),1)
Q :=
SAY := @:
else
Q := @
SAY := @printf '  %-5s %s\n'
endif

BUILD     ?= build
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

CC        ?= gcc
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
# LUA_PREFIX: where a liblua5.4-dev package was unpacked (GPU machines without
# network); otherwise pkg-config finds the system one.
ifdef LUA_PREFIX
# luaconf.h includes the multiarch header; readline links statically from the
# unpacked libreadline-dev, needing only the runtime libtinfo.so.6 there.
LUA_CFLAGS ?= -I$(LUA_PREFIX)/usr/include/lua5.4 -I$(LUA_PREFIX)/usr/include/x86_64-linux-gnu \
              -I$(LUA_PREFIX)/usr/include
LUA_LIBS   ?= $(LUA_PREFIX)/usr/lib/x86_64-linux-gnu/liblua5.4.a
READLINE_LIBS ?= $(LUA_PREFIX)/usr/lib/x86_64-linux-gnu/libreadline.a -l:libtinfo.so.6
# jansson (trace files) links statically from the unpacked libjansson-dev
JANSSON_LIBS ?= $(LUA_PREFIX)/usr/lib/x86_64-linux-gnu/libjansson.a
else
# Lua 5.4's pkg-config name: lua5.4 (Debian, Ubuntu), lua-5.4 (some), lua
# (Fedora, where it is 5.4)
LUA_PC     := $(firstword $(foreach p,lua5.4 lua-5.4 lua54 lua,\
                $(shell pkg-config --exists $(p) 2>/dev/null && echo $(p))))
LUA_CFLAGS ?= $(if $(LUA_PC),$(shell pkg-config --cflags $(LUA_PC)),-I/usr/include/lua5.4)
LUA_LIBS   ?= $(if $(LUA_PC),$(shell pkg-config --libs $(LUA_PC)),-llua5.4)
endif
READLINE_LIBS ?= -lreadline
JANSSON_LIBS ?= $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)

# What gcsh needs to build: GCSH_CFLAGS, GCSH_LDFLAGS, GCSH_LDLIBS (and
# GCSH_NVCCFLAGS below).  The user's CFLAGS, CPPFLAGS, LDFLAGS, LDLIBS and
# NVCCFLAGS (from the command line or the environment, as in any Makefile:
# make CFLAGS="-O2 -march=native") come
# after them, so they add to what gcsh needs and win where they disagree
# (an -O level), and never replace the include paths.
WARN      := -Wall -Wextra -Werror
OPT       ?= -O2 -g
SAN       ?=
GCSH_CFLAGS  := -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SAN) -Isrc $(MPI_CFLAGS) $(LUA_CFLAGS)
GCSH_LDFLAGS := $(SAN)
GCSH_LDLIBS  := $(LUA_LIBS) $(READLINE_LIBS) $(JANSSON_LIBS) $(MPI_LIBS) -lpthread -lm -ldl

# ---- cuda detection -------------------------------------------------------
ifeq ($(CUDA),)
ifneq ($(wildcard src/cuda/*.c),)
CUDA := $(shell test -x $(NVCC) && test -f $(CUDA_HOME)/include/nccl.h -o -f /usr/include/nccl.h && echo 1 || echo 0)
else
CUDA := 0
endif
endif

# the layers (src/DESIGN.md): core (context, backend interface, dtypes, the
# kernels' plan), wire (links, messages, output, checks), shell (rank 0's
# terminal, session and coordinator), rank (a rank's assembly and worker),
# bind (the Lua types), trace, the backends host and cuda, and gpu (what any
# GPU backend shares; no CUDA in it, so it is built, and unit-tested with a
# made-up device runtime, without CUDA too)
LAYERS    := core wire shell rank bind trace host gpu
SRCS      := src/main.c src/options.c $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c))
CU_SRCS   :=
ifeq ($(CUDA),1)
SRCS      += $(wildcard src/cuda/*.c)
CU_SRCS   += $(wildcard kernels/*.cu kernels/cuda/*.cu)
GCSH_CFLAGS += -DGCSH_HAVE_CUDA -I$(CUDA_HOME)/include -Ikernels
GCSH_NVCCFLAGS := -O3 -std=c++17 $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings \
                  -Isrc -Ikernels -I$(CUDA_HOME)/include -DGCSH_HAVE_CUDA
# cudart is linked statically so the binary starts without a driver; NCCL is
# found through the rpath.
GCSH_LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl -lcudart_static -lrt -lstdc++
endif

OBJS      := $(SRCS:%.c=$(BUILD)/%.o) $(CU_SRCS:%.cu=$(BUILD)/%.o)
DEPS      := $(OBJS:.o=.d)

.PHONY: all deps deps-test print-deps-flags run test check test-one test-asan bench bench-host preflight clean install uninstall
all: $(BUILD)/gcsh $(BUILD)/gcsh-loopback.so

$(BUILD)/gcsh: $(OBJS)
	$(SAY) LINK $@
	$(Q)$(CC) $(GCSH_LDFLAGS) $(LDFLAGS) -o $@ $^ $(GCSH_LDLIBS) $(LDLIBS)

# What gcsh -n preloads into mpirun on one machine (src/shell/launch_net.h):
# libc only, and never sanitized (mpirun is not: the sanitizer's runtime
# would have to come first).
$(BUILD)/gcsh-loopback.so: src/preload/loopback.c
	@mkdir -p $(dir $@)
	$(SAY) CC $<
	$(Q)$(CC) -std=c11 $(OPT) $(WARN) $(CFLAGS) -fPIC -shared -o $@ $< -ldl

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(SAY) CC $<
	$(Q)$(CC) $(GCSH_CFLAGS) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/%.o: %.cu
	@mkdir -p $(dir $@)
	$(SAY) NVCC $<
	$(Q)$(NVCC) $(GCSH_NVCCFLAGS) $(NVCCFLAGS) -MMD -MP -c -o $@ $<

-include $(DEPS)

# What is missing: installed with apt-get where there is one, else listed
# with each distribution's package names (scripts/install-deps.sh).
deps:
	@bash scripts/install-deps.sh build

deps-test:
	@bash scripts/install-deps.sh test

# The flags the dependency check compiles with: the ones found above.
print-deps-flags:
	@echo "LUA_CFLAGS='$(LUA_CFLAGS)' LUA_LIBS='$(LUA_LIBS)'"
	@echo "READLINE_LIBS='$(READLINE_LIBS)' JANSSON_LIBS='$(JANSSON_LIBS)'"

# make run without a visible GPU (no /dev/nvidia0, nvidia-smi sees none):
# the host backend alone, in build-host/ (objects built with and without the
# cuda backend differ, so they are kept apart), unless CUDA= or GPU=1 is given.
GPU_SEEN := $(shell test -e /dev/nvidia0 && nvidia-smi -L >/dev/null 2>&1 && echo 1)
ifeq ($(origin CUDA)$(CUDA)$(GPU)$(GPU_SEEN),file1)
RUN_FLAGS := BUILD=build-host CUDA=0
RUN_BUILD := build-host
else
RUN_FLAGS :=
RUN_BUILD := $(BUILD)
endif

run: deps
	@$(if $(RUN_FLAGS),echo "make run: no GPU here: the host backend alone in $(RUN_BUILD)/ (make run GPU=1 builds the kernels too)")
	@$(MAKE) --no-print-directory $(RUN_FLAGS) all
	$(RUN_BUILD)/gcsh -n 2

test: deps-test
	@$(MAKE) --no-print-directory all
	@bash tests/run.sh $(BUILD)/gcsh

# The fast tier: unit tests, Lua tests at 2 ranks, the shell tests not
# marked "# tests/run.sh: slow" (a few minutes; `make test` runs everything).
check: deps-test
	@$(MAKE) --no-print-directory all
	@QUICK=1 RANKS=2 bash tests/run.sh $(BUILD)/gcsh

# One test file: make test-one T=startup (tests/sh/startup.sh), T=comm_p2p
# (tests/lua, at RANKS, default 1 2 4), T=dtype (tests/unit/test_dtype.c).
test-one: all
	@[ -n '$(T)' ] || { echo 'usage: make test-one T=NAME' >&2; exit 2; }
	@bash tests/run.sh -t '$(T)' $(BUILD)/gcsh

# The host test set under AddressSanitizer and UndefinedBehaviorSanitizer.
ASAN_FLAGS := BUILD=build-asan CUDA=0 OPT="-O1 -g -fno-omit-frame-pointer" \
              SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
test-asan: deps-test
	@$(MAKE) --no-print-directory $(ASAN_FLAGS) all unit
	@ASAN_OPTIONS=detect_leaks=0 GCSH_MAKE_FLAGS='$(ASAN_FLAGS)' bash tests/run.sh build-asan/gcsh

bench: all
	@bash scripts/bench-shell.sh $(BUILD)/gcsh

# the host backend's per-call cost against MPI in C (docs/benchmarks.md)
bench-host: all
	@bash scripts/bench-host-call $(BUILD)/gcsh

# A workshop seat's pre-flight: builds, then one verdict line on the OS, the
# ranks (N, default 4), the backend and every lesson's first part.
preflight: all
	@bash scripts/preflight.sh $(BUILD)/gcsh $(or $(N),4)

clean:
	rm -rf build build-*

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, everything under
# lua/ (gcsh.* modules, tutorial/ lessons, examples/) as PREFIX/share/gcsh,
# where the binary looks for it, gcsh-loopback.so in PREFIX/lib/gcsh (beside
# the binary: ../lib/gcsh), and the man page.  uninstall removes them.
PREFIX  ?= /usr/local
BINDIR   = $(DESTDIR)$(PREFIX)/bin
DATADIR  = $(DESTDIR)$(PREFIX)/share/gcsh
MANDIR   = $(DESTDIR)$(PREFIX)/share/man/man1
LIBDIR   = $(DESTDIR)$(PREFIX)/lib/gcsh

install: all
	install -d $(BINDIR) $(MANDIR) $(LIBDIR)
	install -m 755 $(BUILD)/gcsh $(BINDIR)/gcsh
	install -m 644 $(BUILD)/gcsh-loopback.so $(LIBDIR)/gcsh-loopback.so
	rm -rf $(DATADIR)
	install -d $(DATADIR)
	cp -R lua/. $(DATADIR)/
	chmod -R u=rwX,go=rX $(DATADIR)
	install -m 644 src/gcsh.1 $(MANDIR)/gcsh.1

uninstall:
	rm -f $(BINDIR)/gcsh $(MANDIR)/gcsh.1 $(LIBDIR)/gcsh-loopback.so
	-rmdir $(LIBDIR) 2>/dev/null
	rm -rf $(DATADIR)

# C unit tests: tests/unit/test_*.c, each linked with every object but main.o
# and options.o (the command line).
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
LIB_OBJS  := $(filter-out $(BUILD)/src/main.o $(BUILD)/src/options.o,$(OBJS))
.PHONY: unit
unit: $(UNIT_BINS)
$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(SAY) CC $<
	$(Q)$(CC) $(GCSH_CFLAGS) $(CPPFLAGS) $(CFLAGS) -Itests/unit $(GCSH_LDFLAGS) $(LDFLAGS) -o $@ $< \
	    $(LIB_OBJS) $(GCSH_LDLIBS) $(LDLIBS)
