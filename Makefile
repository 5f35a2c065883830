# SPDX-License-Identifier: MIT
#
# Tessera top-level build.  Everything it makes goes under build/.
#
#   make          build every layer (QEMU with the device, driver, libaccel,
#                 tests, samples, guest initramfs)
#   make demo     ... then a 2x2 slice of 2 VMs trains a classifier (tools/tessera-demo)
#   make check    ... then lint, host unit tests and in-VM kselftests;
#                 ends with "N passed, N failed"; T=NAME runs one suite,
#                 test program or test (tests/run-checks --list names them);
#                 its suites run side by side, CHECK_JOBS=1 one at a time
#   make check-debug  the in-VM tests on the debug kernel (KASAN, lockdep,
#                 UBSAN, kmemleak), and planted bugs it must catch; T=NAME
#                 as for make check, with the debug module rebuilt first
#   make debug-kernel  only build that kernel (build/debug-kernel, cached)
#   make lean-initramfs  the lean guest kernel (build/lean-kernel, cached),
#                 the driver against it and its initramfs: half the boot
#                 CPU of Debian's kernel, for big slices (--lean-kernel)
#   make check-slices  the long slice checks: 4x4 as 4 VMs x 4 chips, and
#                 a 2x2x2 mesh in one VM, each running the exchange; the
#                 collectives' tests on 4x4 as 4 VMs x 4 chips; a host of
#                 a 2x2x2 torus of 2 VMs stopped mid-collective; Ctrl-C
#                 and scancel on a slice run by Slurm; 4x4x4 as 16 VMs x
#                 4 chips (every collective, the embedding op), alone and
#                 as 16 Slurm tasks (run-checks --only moonshot), on the
#                 lean kernel
#   make bench    BENCH lines (see tools/tessera-bench)
#   make fuzz     the ioctl fuzzer in a VM, FUZZ_CALLS (1000000) calls of a
#                 new stream, or FUZZ_SEED's
#   make lint     checkpatch (kernel and QEMU flavours) and sparse
#   make lint-patch  checkpatch on a patch, each file by its own tree's
#                 rules: PATCH=FILE, or REV=RANGE (default HEAD^!)
#   make install  libaccel's headers, libraries and pkg-config file, the
#                 tools and their man pages, under PREFIX (/usr/local) and DESTDIR
#   make deps     only install/fetch dependencies (tools/tessera-deps)
#   make clean    remove build products but keep fetched dependencies
#                 and the debug kernel

include mk/versions.env

KREL := $(KERNEL_ABI)-$(KERNEL_FLAVOUR)
KDIR ?= /usr/src/linux-headers-$(KREL)
REPO := $(CURDIR)
B := $(REPO)/build
JOBS ?= $(shell nproc)

PYTHON := /usr/bin/python3

DEPS_STAMP := $(B)/deps/.stamp
KMOD_ROOT := $(B)/deps/kernel/root/lib/modules/$(KREL)
HARNESS_DIR := $(B)/deps/linux-source/tools/testing/selftests

QEMU_SRC := $(B)/qemu/src
QEMU_BUILD := $(B)/qemu/build
QEMU_BIN := $(QEMU_BUILD)/qemu-system-x86_64
QEMU_FIRMWARE := $(B)/qemu/firmware
QEMU_CONFIGURE := --python=$(PYTHON) --target-list=x86_64-softmmu \
	--without-default-features --without-default-devices \
	--with-devices-x86_64=tessera --disable-docs --disable-user \
	--disable-install-blobs --enable-trace-backends=log --enable-attr --enable-virtfs
# The flags QEMU was configured with, and its folders: meson writes their
# absolute paths into its build folder (include folders, its Python, the
# depfiles), so a change of either configures QEMU again, and a build
# folder configured for other folders (in a copy of the tree) afresh.
QEMU_CONFIG_FLAGS := $(B)/qemu/configure-flags
QEMU_CONFIG_RECORD := $(QEMU_SRC) $(QEMU_BUILD) $(QEMU_CONFIGURE)

KMOD_DIR := $(B)/kmod
TESSERA_KO := $(KMOD_DIR)/driver/tessera.ko

# The guest kernels Tessera builds from Debian's source (mk/guest-kernel),
# each from mk/guest-kernel.config and a fragment of its own, from one
# unpacked source.  Not part of `all`.
KERNEL_SRC := $(B)/kernel-src
KERNEL_BASE_CONFIG := mk/guest-kernel.config
# The debug kernel, the driver and the planted-bug module built against it,
# and its initramfs.
DEBUG_KERNEL := $(B)/debug-kernel
DEBUG_KBUILD := $(DEBUG_KERNEL)/obj
DEBUG_KERNEL_STAMP := $(DEBUG_KERNEL)/.key
DEBUG_KMOD_ROOT := $(DEBUG_KERNEL)/modules
KMOD_DEBUG_DIR := $(B)/kmod-debug
TESSERA_DEBUG_KO := $(KMOD_DEBUG_DIR)/driver/tessera.ko
PLANT_DIR := $(B)/kmod-plant
PLANT_KO := $(PLANT_DIR)/tessera_plant.ko
DEBUG_INITRAMFS := $(B)/guest/initramfs-debug.cpio
# The lean kernel (a guest that boots fast, for big slices), the driver
# against it, and its initramfs.
LEAN_KERNEL := $(B)/lean-kernel
LEAN_KERNEL_STAMP := $(LEAN_KERNEL)/.key
KMOD_LEAN_DIR := $(B)/kmod-lean
TESSERA_LEAN_KO := $(KMOD_LEAN_DIR)/driver/tessera.ko
LEAN_INITRAMFS := $(B)/guest/initramfs-lean.cpio

# Userspace: C11 with GNU extensions, warnings are errors.  pkg-config is
# asked when a recipe runs (=, not :=): on a fresh machine libdrm-dev is
# only there once the deps step has run.
CC ?= cc
USER_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE
DRM_CFLAGS = $(shell pkg-config --cflags libdrm 2>/dev/null)
DRM_LIBS = $(shell pkg-config --libs libdrm 2>/dev/null)
# The driver's interface (uapi/) and the chip's definition (include/tessera/,
# shared by the device, the driver and libaccel).
UAPI_CFLAGS := -I$(REPO)/uapi -I$(REPO)/include
# The harness compares mixed-sign values on purpose (it prints both sides)
# and vforks around fixtures, which -Wclobbered misreads.
HARNESS_CFLAGS := -I$(HARNESS_DIR) -Wno-unused-parameter -Wno-sign-compare -Wno-clobbered -pthread

# libaccel: versioned shared library, static library.
LIBACCEL_SONAME := libaccel.so.$(shell sed -n 's/^\#define ACCEL_VERSION_MAJOR //p' libaccel/include/accel/common.h)
LIBACCEL_VERSION := $(shell sed -n 's/^\#define ACCEL_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' libaccel/include/accel/common.h | paste -sd.)
LIBACCEL_SRCS := $(wildcard libaccel/src/*.c)
LIBACCEL_OBJS := $(LIBACCEL_SRCS:%.c=$(B)/obj/%.o)
LIBACCEL_SO := $(B)/lib/libaccel.so.$(LIBACCEL_VERSION)
LIBACCEL_A := $(B)/lib/libaccel.a
LIBACCEL_CFLAGS = -Ilibaccel/include $(UAPI_CFLAGS) $(DRM_CFLAGS)
JSONC_CFLAGS = $(shell pkg-config --cflags json-c 2>/dev/null)
JSONC_LIBS = $(shell pkg-config --libs json-c 2>/dev/null)

# Headers every userspace program may include; programs built in one step
# from several sources depend on all of them rather than on -MMD files.
USER_HEADERS := $(wildcard uapi/drm/*.h include/tessera/*.h libaccel/include/accel/*.h qemu-device/core/*.h)

# Chip core, built for the host unit tests (the same files QEMU compiles)
# once, into objects that every program of it links: compiled into each of
# some twenty, it cost about 8 s of CPU apiece.
CORE_SRCS := $(wildcard qemu-device/core/*.c)
CORE_OBJS := $(CORE_SRCS:%.c=$(B)/obj/%.o)
CORE_CFLAGS = -Iqemu-device/core -I$(REPO)/include $(shell pkg-config --cflags openblas libisal 2>/dev/null)
CORE_LIBS = $(shell pkg-config --libs openblas libisal 2>/dev/null) -lm -pthread

HOST_TESTS := $(patsubst tests/host/%.c,$(B)/tests/host/%,$(wildcard tests/host/*_test.c))
# Tests of the chip core that check it against libaccel's CPU reference.
CORE_REF_TESTS := $(B)/tests/host/tessera_sparse_test
CORE_TESTS := $(filter-out $(CORE_REF_TESTS),$(filter $(B)/tests/host/tessera_%,$(HOST_TESTS)))
VM_TESTS := $(patsubst tests/vm/%.c,$(B)/tests/vm/%,$(wildcard tests/vm/*_test.c))
SAMPLES := $(patsubst tools/samples/%.c,$(B)/bin/%,$(wildcard tools/samples/*.c))
# Command-line tools written in C, one directory each: tools/<name>/<name>.c
# and the other .c files beside it.
TOOLS := $(patsubst tools/%/,$(B)/bin/%,$(dir $(wildcard tools/*/tessera-*.c)))
BENCHES := $(patsubst tests/bench/%.c,$(B)/bench/%,$(wildcard tests/bench/*.c))
GUEST_BENCHES := $(patsubst tests/bench/vm/%.c,$(B)/bench/vm/%,$(wildcard tests/bench/vm/*.c))
GUEST_PROGS := $(patsubst tests/vm/progs/%.c,$(B)/tests/vm/progs/%,$(wildcard tests/vm/progs/*.c))
# Programs that tools/tessera-slice runs on every host of a slice.
SLICE_PROGS := $(patsubst tests/slice/%.c,$(B)/tests/slice/%,$(wildcard tests/slice/*.c))
INITRAMFS := $(B)/guest/initramfs.cpio
CONSUMER_PREFIX := $(B)/install
CONSUMERS := $(B)/tests/vm/progs/consumer $(B)/tests/vm/progs/consumer-static
TUTORIAL := $(B)/tests/vm/progs/tutorial

.PHONY: all deps qemu module libaccel tests samples tools man initramfs \
	check demo bench fuzz lint lint-patch install clean distclean help \
	debug-kernel debug-module debug-initramfs check-debug check-slices \
	lean-kernel lean-module lean-initramfs
.DEFAULT_GOAL := all

all: qemu module libaccel tests samples tools man initramfs

help:
	@sed -n '3,/^$$/s/^# \?//p' Makefile

# ---------------------------------------------------------------- deps
deps: $(DEPS_STAMP)

$(DEPS_STAMP): mk/versions.env tools/tessera-deps
	tools/tessera-deps --out $(B)/deps
	@touch $@

# The harness headers come with the deps; anything built with them waits.
$(HARNESS_DIR)/kselftest_harness.h: $(DEPS_STAMP)

# ---------------------------------------------------------------- QEMU
qemu: $(QEMU_BIN) $(QEMU_FIRMWARE)/.stamp

$(QEMU_CONFIG_FLAGS): FORCE
	@mkdir -p $(@D)
	@echo '$(QEMU_CONFIG_RECORD)' | cmp -s - $@ || echo '$(QEMU_CONFIG_RECORD)' > $@

$(QEMU_BUILD)/build.ninja: $(DEPS_STAMP) mk/qemu-overlay $(QEMU_CONFIG_FLAGS)
	mk/qemu-overlay $(QEMU_SRC) $(REPO)
	@if [ -f $(QEMU_BUILD)/meson-info/meson-info.json ] && ! grep -qF \
		'"build": "$(QEMU_BUILD)"' $(QEMU_BUILD)/meson-info/meson-info.json; then \
		echo "$(QEMU_BUILD) was configured elsewhere: configuring it afresh"; \
		rm -rf $(QEMU_BUILD); fi
	mkdir -p $(QEMU_BUILD)
	cd $(QEMU_BUILD) && $(QEMU_SRC)/configure $(QEMU_CONFIGURE) > configure.log 2>&1 || \
		{ tail -n 30 configure.log; exit 1; }

# ninja knows what depends on which device file; always ask it.
$(QEMU_BIN): $(QEMU_BUILD)/build.ninja FORCE
	@mk/qemu-overlay $(QEMU_SRC) $(REPO)
	@ninja -C $(QEMU_BUILD) -j$(JOBS) qemu-system-x86_64

# tools/tessera-vm boots with qboot.rom (a link's time is its target's,
# older than the deps: order-only, made once).
$(QEMU_FIRMWARE)/.stamp: $(DEPS_STAMP) | $(QEMU_FIRMWARE)/qboot.rom
	mkdir -p $(QEMU_FIRMWARE)
	ln -sf /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
		/usr/share/qemu/kvmvapic.bin /usr/share/qemu/pvh.bin $(QEMU_FIRMWARE)/
	@touch $@

$(QEMU_FIRMWARE)/qboot.rom: | $(DEPS_STAMP)
	mkdir -p $(QEMU_FIRMWARE)
	ln -sf /usr/share/qemu/qboot.rom $@

# ---------------------------------------------------------------- driver
# Kbuild writes objects beside the sources; build in a mirror of links so
# that they land under build/.
module: $(TESSERA_KO)

$(TESSERA_KO): $(DEPS_STAMP) FORCE
	@mk/link-tree $(KMOD_DIR) Kbuild driver uapi include
	@$(MAKE) -s -C $(KDIR) M=$(KMOD_DIR) W=1 KCFLAGS=-Werror modules

# ---------------------------------------------------------------- guest kernels
# Each built once (the debug kernel about 8 minutes on 2 cores, the lean
# one 4) and cached under a key of the source version, the configuration
# fragments and the script; the script returns at once when the key
# matches.
debug-kernel: $(DEBUG_KERNEL_STAMP)

$(DEBUG_KERNEL_STAMP): $(DEPS_STAMP) mk/guest-kernel $(KERNEL_BASE_CONFIG) \
		mk/debug-kernel.config mk/versions.env
	mk/guest-kernel $(REPO) $(KERNEL_SRC) $(DEBUG_KERNEL) $(JOBS) \
		$(KERNEL_BASE_CONFIG) mk/debug-kernel.config
	@touch $@

lean-kernel: $(LEAN_KERNEL_STAMP)

$(LEAN_KERNEL_STAMP): $(DEPS_STAMP) mk/guest-kernel $(KERNEL_BASE_CONFIG) \
		mk/lean-kernel.config mk/versions.env
	mk/guest-kernel $(REPO) $(KERNEL_SRC) $(LEAN_KERNEL) $(JOBS) \
		$(KERNEL_BASE_CONFIG) mk/lean-kernel.config
	@touch $@

# The driver against the lean kernel, warnings errors as in `all`.
lean-module: $(TESSERA_LEAN_KO)

$(TESSERA_LEAN_KO): $(LEAN_KERNEL_STAMP) FORCE
	@mk/guest-kernel-links $(LEAN_KERNEL)
	@mk/link-tree $(KMOD_LEAN_DIR) Kbuild driver uapi include
	@$(MAKE) -s -C $(LEAN_KERNEL)/obj M=$(KMOD_LEAN_DIR) W=1 KCFLAGS=-Werror modules

# The driver as it is, against the debug kernel.  Not -Werror: the
# sanitizers change what the compiler sees; the normal build judges warnings.
debug-module: $(TESSERA_DEBUG_KO) $(PLANT_KO)

$(TESSERA_DEBUG_KO): $(DEBUG_KERNEL_STAMP) FORCE
	@mk/guest-kernel-links $(DEBUG_KERNEL)
	@mk/link-tree $(KMOD_DEBUG_DIR) Kbuild driver uapi include
	@$(MAKE) -s -C $(DEBUG_KBUILD) M=$(KMOD_DEBUG_DIR) W=1 modules

$(PLANT_KO): $(DEBUG_KERNEL_STAMP) tests/debug/Kbuild tests/debug/tessera_plant.c
	@mk/guest-kernel-links $(DEBUG_KERNEL)
	@mk/link-tree -C tests/debug $(PLANT_DIR) Kbuild tessera_plant.c
	@$(MAKE) -s -C $(DEBUG_KBUILD) M=$(PLANT_DIR) W=1 KCFLAGS=-Werror modules

# ---------------------------------------------------------------- libaccel
libaccel: $(LIBACCEL_SO) $(LIBACCEL_A)

$(B)/obj/libaccel/%.o: libaccel/%.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -MMD -MP -fPIC -fvisibility=hidden $(LIBACCEL_CFLAGS) -c -o $@ $<

$(LIBACCEL_SO): $(LIBACCEL_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,$(LIBACCEL_SONAME) -Wl,--no-undefined -o $@ $^ $(DRM_LIBS) -lm -pthread
	ln -sf $(@F) $(B)/lib/$(LIBACCEL_SONAME)
	ln -sf $(LIBACCEL_SONAME) $(B)/lib/libaccel.so

# The soname link is made with the library; say so for parallel makes.
$(B)/lib/$(LIBACCEL_SONAME): $(LIBACCEL_SO)
	@:

$(LIBACCEL_A): $(LIBACCEL_OBJS)
	@mkdir -p $(@D)
	$(AR) rcs $@ $^

# ---------------------------------------------------------------- install
# libaccel's public headers include <tessera/chip.h> (the chip's
# element types and operations), so that header is installed beside them.
PREFIX ?= /usr/local
DESTDIR ?=
INCLUDEDIR := $(PREFIX)/include
LIBDIR := $(PREFIX)/lib
BINDIR := $(PREFIX)/bin
MANDIR := $(PREFIX)/share/man

install: libaccel tools man
	install -d $(DESTDIR)$(INCLUDEDIR)/accel $(DESTDIR)$(INCLUDEDIR)/tessera \
		$(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 644 libaccel/include/accel/*.h $(DESTDIR)$(INCLUDEDIR)/accel/
	install -m 644 include/tessera/chip.h $(DESTDIR)$(INCLUDEDIR)/tessera/
	install -m 755 $(LIBACCEL_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIBACCEL_SO)) $(DESTDIR)$(LIBDIR)/$(LIBACCEL_SONAME)
	ln -sf $(LIBACCEL_SONAME) $(DESTDIR)$(LIBDIR)/libaccel.so
	install -m 644 $(LIBACCEL_A) $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(LIBACCEL_VERSION)|' \
		libaccel/libaccel.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libaccel.pc
	$(if $(TOOLS),install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/)
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/

# A program outside the tree, built the way a user builds one: against an
# installation, through pkg-config only (shared and static).  It runs in
# the VM with the tests.
$(CONSUMERS) &: tests/install/consumer.c tests/install/Makefile $(LIBACCEL_SO) $(LIBACCEL_A) \
		$(USER_HEADERS) libaccel/libaccel.pc.in
	rm -rf $(CONSUMER_PREFIX) $(CONSUMERS)
	$(MAKE) -s install PREFIX=$(CONSUMER_PREFIX) TOOLS= >/dev/null
	PKG_CONFIG_PATH=$(CONSUMER_PREFIX)/lib/pkgconfig $(MAKE) -s -C tests/install \
		OUT=$(B)/tests/vm/progs CC=$(CC)

# ---------------------------------------------------------------- tests
tests: $(HOST_TESTS) $(VM_TESTS) $(B)/tests/vm/run-tests $(BENCHES) $(GUEST_BENCHES) \
	$(GUEST_PROGS) $(SLICE_PROGS) $(CONSUMERS) $(TUTORIAL)

$(B)/obj/qemu-device/core/%.o: qemu-device/core/%.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -MMD -MP -pthread $(CORE_CFLAGS) -c -o $@ $<

$(CORE_TESTS): $(B)/tests/host/%: tests/host/%.c tests/host/tessera_chip.h \
		tests/host/ici_slice.h $(CORE_OBJS) \
		$(USER_HEADERS) $(HARNESS_DIR)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(HARNESS_CFLAGS) $(CORE_CFLAGS) -o $@ $(filter %.c %.o,$^) $(CORE_LIBS)

$(B)/bench/chip_bench: tests/bench/chip_bench.c tests/host/tessera_chip.h $(CORE_OBJS) $(DEPS_STAMP) \
		$(USER_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(CORE_CFLAGS) -o $@ $(filter %.c %.o,$^) $(CORE_LIBS)

# The floors of a link carried by a socket and by a ring, beside a raw
# socket copy and a memcpy.
$(B)/bench/link_floor: tests/bench/link_floor.c $(B)/obj/qemu-device/core/tessera-link.o \
		$(B)/obj/qemu-device/core/tessera-ring.o $(USER_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(CORE_CFLAGS) -o $@ $(filter %.c %.o,$^) $(CORE_LIBS)

# The host's reference for the collectives: Open MPI's MPI_Allreduce.
$(B)/bench/mpi_allreduce: tests/bench/mpi_allreduce.c $(DEPS_STAMP)
	@mkdir -p $(@D)
	mpicc $(USER_CFLAGS) -o $@ $<

# The ops tests run what libaccel builds on the chip core itself.
$(B)/tests/host/libaccel_ops_test $(CORE_REF_TESTS): $(B)/tests/host/%: tests/host/%.c \
		tests/host/tessera_chip.h $(CORE_OBJS) $(LIBACCEL_A) $(USER_HEADERS) \
		$(HARNESS_DIR)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(HARNESS_CFLAGS) $(CORE_CFLAGS) $(LIBACCEL_CFLAGS) -o $@ \
		$(filter %.c %.o,$^) $(LIBACCEL_A) $(DRM_LIBS) $(CORE_LIBS)

$(filter-out %/libaccel_ops_test,$(filter $(B)/tests/host/libaccel_%,$(HOST_TESTS))): \
		$(B)/tests/host/%: tests/host/%.c tests/host/coll_slice.h \
		$(LIBACCEL_A) $(wildcard libaccel/src/*.h) $(USER_HEADERS) $(HARNESS_DIR)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(HARNESS_CFLAGS) $(LIBACCEL_CFLAGS) -Ilibaccel/src -o $@ $< \
		$(LIBACCEL_A) $(DRM_LIBS) -lm

$(B)/tests/vm/%_test: tests/vm/%_test.c tests/vm/tessera_util.h tests/vm/libaccel_util.h $(LIBACCEL_SO) \
		$(USER_HEADERS) $(HARNESS_DIR)/kselftest_harness.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(HARNESS_CFLAGS) $(LIBACCEL_CFLAGS) $(JSONC_CFLAGS) -o $@ \
		$(filter %.c,$^) -L$(B)/lib -laccel $(DRM_LIBS) $(JSONC_LIBS) -lm

# The fuzzer's parts are compiled with it.
$(B)/tests/vm/tessera_fuzz_test: $(wildcard tests/vm/fuzz/*.[ch])

# Benchmarks and helper programs that run in the guest, on the raw uapi.
$(B)/bench/vm/%: tests/bench/vm/%.c tests/vm/tessera_util.h $(USER_HEADERS) $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(UAPI_CFLAGS) $(DRM_CFLAGS) -Itests/vm -o $@ $< $(DRM_LIBS)

# ... except those that go through libaccel.
$(B)/bench/vm/libaccel_bench $(B)/bench/vm/sc_bench: $(B)/bench/vm/%: tests/bench/vm/%.c \
		$(LIBACCEL_SO) $(USER_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(LIBACCEL_CFLAGS) -o $@ $< -L$(B)/lib -laccel -lm

$(B)/tests/vm/progs/%: tests/vm/progs/%.c tests/vm/tessera_util.h $(USER_HEADERS) $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(UAPI_CFLAGS) $(DRM_CFLAGS) -Itests/vm -o $@ $< $(DRM_LIBS)

$(B)/tests/slice/%: tests/slice/%.c tests/vm/tessera_util.h $(USER_HEADERS) $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(UAPI_CFLAGS) $(DRM_CFLAGS) -Itests/vm -o $@ $< $(DRM_LIBS)

# ... except those that go through libaccel.
$(B)/tests/slice/slice_failure $(B)/tests/slice/slice_setup: $(B)/tests/slice/%: tests/slice/%.c tests/slice/slice_ports.h $(LIBACCEL_SO) $(USER_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(LIBACCEL_CFLAGS) -o $@ $< -L$(B)/lib -laccel -lm

# The tutorial's code is the C blocks of Documentation/tutorial.md, in order.
$(B)/obj/tutorial.c: Documentation/tutorial.md mk/extract-c
	@mkdir -p $(@D)
	mk/extract-c $< > $@

$(TUTORIAL): $(B)/obj/tutorial.c $(LIBACCEL_SO) $(USER_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(LIBACCEL_CFLAGS) -o $@ $< -L$(B)/lib -laccel -lm

$(B)/tests/vm/run-tests: tests/vm/run-tests
	@mkdir -p $(@D)
	cp $< $@

# ---------------------------------------------------------------- samples
samples: $(SAMPLES)

$(B)/bin/%: tools/samples/%.c $(wildcard tools/samples/*.h) $(LIBACCEL_SO) $(USER_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(LIBACCEL_CFLAGS) -o $@ $< -L$(B)/lib -laccel -lm

# The training sample's data: scikit-learn's digits, from python3-sklearn
# (tools/tessera-deps installs it), as plain CSV for the guest.
DIGITS_GZ := /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
DIGITS := $(B)/share/digits.csv

$(DIGITS): $(DEPS_STAMP)
	@mkdir -p $(@D)
	gzip -dc $(DIGITS_GZ) > $@.tmp
	mv $@.tmp $@

# The embedding-bag sample's data: four licence texts of base-files, as
# windows of 12 lowercase words, each after its licence's class (0-3)
# and a comma: CSV, which mk/initramfs copies to /tessera/share.
LICENSES := $(addprefix /usr/share/common-licenses/,GPL-3 Apache-2.0 Artistic MPL-2.0)
LICENSE_WORDS := $(B)/share/licenses.csv

$(LICENSE_WORDS): $(LICENSES)
	@mkdir -p $(@D)
	c=0; for f in $(LICENSES); do tr 'A-Z' 'a-z' < $$f | tr -cs 'a-z' '\n' | \
		grep . | paste -d ' ' - - - - - - - - - - - - | grep -v ' $$' | \
		sed "s/^/$$c,/"; c=$$((c + 1)); done > $@.tmp
	mv $@.tmp $@

# ---------------------------------------------------------------- tools
# Programs the host-side tools run (tools/tessera-vm: the host's TSC rate).
HOST_HELPERS := $(patsubst tools/host/%.c,$(B)/libexec/%,$(wildcard tools/host/*.c))

tools: $(TOOLS) $(HOST_HELPERS)

$(B)/libexec/%: tools/host/%.c
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -o $@ $<

.SECONDEXPANSION:
$(TOOLS): $(B)/bin/%: tools/%/$$*.c $$(wildcard tools/$$*/*.[ch]) tools/include/tessera-cli.h \
		$(LIBACCEL_SO) $(USER_HEADERS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(LIBACCEL_CFLAGS) $(JSONC_CFLAGS) -Itools/include -o $@ $(filter %.c,$^) \
		-L$(B)/lib -laccel $(JSONC_LIBS) -lm

# ---------------------------------------------------------------- man pages
# One roff source per command in Documentation/man/, the version filled
# in; tests/run-checks renders each and holds it to the command's --help.
MAN_PAGES := $(patsubst Documentation/man/%,$(B)/man/man1/%,$(wildcard Documentation/man/*.1))

man: $(MAN_PAGES)

$(B)/man/man1/%.1: Documentation/man/%.1 libaccel/include/accel/common.h
	@mkdir -p $(@D)
	sed 's/@VERSION@/$(LIBACCEL_VERSION)/g' $< > $@

# ---------------------------------------------------------------- guest
initramfs: $(INITRAMFS)

GUEST_FILES := $(VM_TESTS) $(B)/tests/vm/run-tests $(SAMPLES) $(TOOLS) $(GUEST_BENCHES) \
	$(GUEST_PROGS) $(SLICE_PROGS) $(CONSUMERS) $(TUTORIAL) $(B)/lib/$(LIBACCEL_SONAME) $(LIBACCEL_SO) \
	$(DIGITS) $(LICENSE_WORDS)

$(INITRAMFS): mk/initramfs tools/guest/init $(TESSERA_KO) $(GUEST_FILES) $(DEPS_STAMP)
	@mkdir -p $(@D)
	mk/initramfs $@ $(REPO) $(KMOD_ROOT) $(TESSERA_KO) $(GUEST_FILES)

# The same userland with the debug kernel's modules, and the planted bugs.
debug-initramfs: $(DEBUG_INITRAMFS)

$(DEBUG_INITRAMFS): mk/initramfs tools/guest/init $(TESSERA_DEBUG_KO) $(PLANT_KO) $(GUEST_FILES) \
		$(DEBUG_KERNEL_STAMP)
	@mkdir -p $(@D)
	mk/initramfs $@ $(REPO) $(DEBUG_KMOD_ROOT) $(TESSERA_DEBUG_KO) $(GUEST_FILES) $(PLANT_KO)

# The same userland with the lean kernel's modules.
lean-initramfs: $(LEAN_INITRAMFS)

$(LEAN_INITRAMFS): mk/initramfs tools/guest/init $(TESSERA_LEAN_KO) $(GUEST_FILES) \
		$(LEAN_KERNEL_STAMP)
	@mkdir -p $(@D)
	mk/initramfs $@ $(REPO) $(LEAN_KERNEL)/modules $(TESSERA_LEAN_KO) $(GUEST_FILES)

# ---------------------------------------------------------------- run
demo: all
	tools/tessera-demo

# T=NAME: one suite, test program or test (tests/run-checks --test).
# CHECK_JOBS=N: CPUs the suites side by side keep busy (run-checks --jobs;
# default the machine's; 1: one suite at a time).
CHECK_ARGS = $(if $(CHECK_JOBS),--jobs $(CHECK_JOBS))
# Both build first what the checks run; run-checks alone runs make itself.
check: all
	$(PYTHON) tests/run-checks --no-build $(CHECK_ARGS) $(if $(T),--test $(T))

check-debug: all debug-initramfs
	$(PYTHON) tests/run-checks --debug --no-build $(CHECK_ARGS) $(if $(T),--test $(T))

# Slices too large for make check: every chip writes to every other.
check-slices: all lean-initramfs
	tools/tessera-slice --topology 4x4 --host 2x2 --timeout 600 -- slice_exchange
	tools/tessera-slice --topology 2x2x2 --mesh --host 2x2x2 --timeout 600 -- slice_exchange
	tools/tessera-slice --topology 4x4 --host 2x2 --timeout 3000 -d debug-regs=on \
		--driver-args job_timeout_ms=600000 -- run-tests libaccel_coll_ici_test
	tests/slice/failures.py sigstop-2x2x2
	$(PYTHON) tests/run-checks --no-build --jobs 1 --only slurm-long,moonshot

bench: all
	$(PYTHON) tools/tessera-bench

# The ioctl fuzzer for longer than make check runs it (30000 calls of one
# fixed stream there), on a new stream each time unless FUZZ_SEED is given.
FUZZ_CALLS ?= 1000000
FUZZ_SEED ?= 0x$$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
fuzz: all
	tools/tessera-vm -d debug-regs=on -d debug-regs=on \
		--driver-args job_timeout_ms=2000 --timeout 7200 -- \
		"TESSERA_FUZZ_CALLS=$(FUZZ_CALLS) TESSERA_FUZZ_SEED=$(FUZZ_SEED) tessera_fuzz_test"

# ---------------------------------------------------------------- lint
include mk/lint.mk

# ---------------------------------------------------------------- clean
clean:
	rm -rf $(B)/obj $(B)/lib $(B)/bin $(B)/bench $(B)/tests $(B)/kmod $(B)/guest $(B)/logs $(B)/man \
		$(B)/kmod-debug $(B)/kmod-lean $(B)/kmod-plant $(B)/kmod-sparse $(B)/lint
	-ninja -C $(QEMU_BUILD) -t clean >/dev/null 2>&1

distclean:
	rm -rf $(B)

FORCE:

-include $(LIBACCEL_OBJS:.o=.d) $(CORE_OBJS:.o=.d)
