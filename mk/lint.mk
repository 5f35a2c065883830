# SPDX-License-Identifier: MIT
#
# make lint: checkpatch (kernel and QEMU flavours) and sparse, included by
# the Makefile.  Each check remembers what it passed, so that a warm tree
# re-reads only what was edited (a from-scratch build checks everything).

KERNEL_CHECKPATCH := $(B)/deps/linux-source/scripts/checkpatch.pl
QEMU_CHECKPATCH := $(QEMU_SRC)/scripts/checkpatch.pl
KERNEL_LINT_FILES := $(wildcard driver/*.[ch] uapi/drm/*.h include/tessera/*.h)
QEMU_LINT_FILES := $(shell find qemu-device -name '*.[ch]')
# The tests' C (tests/host/tessera_chip.h is the chip core's host, QEMU's
# dialect), and every Python program of tests/ and tools/.
TEST_LINT_FILES := $(filter-out tests/host/tessera_chip.h,\
	$(wildcard tests/*/*.[ch] tests/*/*/*.[ch]))
# The shell scripts of tests/, tools/ and mk/ (found by their #! line).
SHELL_LINT_FILES := $(shell grep -lsE '^\#!(/usr)?/bin/(env )?(ba|busybox )?sh' \
	tests/*/* tools/* tools/*/* mk/*)
PY_LINT_FILES := tests/run-checks mk/lint-versions \
	$(wildcard tests/*/*.py tools/*.py) \
	$(shell grep -ls '^\#!.*python' tools/tessera-*)

# Each file's checkpatch verdict is kept (build/lint/FILE.FLAVOUR) until the
# file, the checker or these rules change (this file, not the Makefile,
# whose every edit would have every file read again).  A file that fails
# keeps no verdict and is read again.
LINT_OK := $(B)/lint
KERNEL_LINT_OK := $(KERNEL_LINT_FILES:%=$(LINT_OK)/%.kernel)
QEMU_LINT_OK := $(QEMU_LINT_FILES:%=$(LINT_OK)/%.qemu)
TEST_LINT_OK := $(TEST_LINT_FILES:%=$(LINT_OK)/%.tests)
# The files are read LINT_JOBS at a time (each checkpatch is one perl
# process on one file), each file's findings printed together.
LINT_JOBS ?= $(JOBS)

$(LINT_OK)/%.kernel: % $(DEPS_STAMP) mk/lint.mk
	@perl $(KERNEL_CHECKPATCH) --strict --no-tree --quiet --show-types -f $<
	@mkdir -p $(@D) && touch $@

$(LINT_OK)/%.qemu: % $(QEMU_BUILD)/build.ninja mk/lint.mk
	@cd $(QEMU_SRC) && perl $(QEMU_CHECKPATCH) --no-tree --terse -f $(REPO)/$<
	@mkdir -p $(@D) && touch $@

$(LINT_OK)/%.tests: % mk/lint-tests $(DEPS_STAMP) mk/lint.mk
	@mk/lint-tests $(KERNEL_CHECKPATCH) $<
	@mkdir -p $(@D) && touch $@

# Sparse runs as Kbuild compiles (C=1), in a tree of its own: relinking
# build/kmod would change the module that the checks running beside lint
# compare the guest's against.  It runs when a file it reads changed, and
# Kbuild then recompiles, and so checks, what the edit reaches (a source, a
# header it includes).  A run that finds anything removes every object,
# so that the next run checks every file again and fails again until it
# is fixed; new rules or a new kernel start afresh.
SPARSE_TREE := $(B)/kmod-sparse

$(LINT_OK)/sparse: $(KERNEL_LINT_FILES) Kbuild mk/lint.mk $(DEPS_STAMP)
	$(if $(filter mk/lint.mk $(DEPS_STAMP),$?),@rm -rf $(SPARSE_TREE))
	@mk/link-tree $(SPARSE_TREE) Kbuild driver uapi include
	@$(MAKE) -s -C $(KDIR) M=$(SPARSE_TREE) C=1 \
		CHECK="sparse -Wno-unknown-attribute" modules 2>&1 | \
		tee $(B)/sparse.log | grep -v '^  ' || true
	@! grep -q ': \(warning\|error\):' $(B)/sparse.log || \
		{ find $(SPARSE_TREE) -name '*.o' -delete; false; }
	@mkdir -p $(@D) && touch $@

lint: $(DEPS_STAMP) $(QEMU_BUILD)/build.ninja
	@echo "lint: checkpatch: the kernel's --strict on driver/, uapi/ and include/tessera/,"
	@echo "lint: QEMU's on qemu-device/, the kernel's on the tests' C (as kselftests);"
	@echo "lint: sparse on the driver"
	@$(MAKE) -s -k -O -j$(LINT_JOBS) $(KERNEL_LINT_OK) $(QEMU_LINT_OK) \
		$(TEST_LINT_OK) $(LINT_OK)/sparse
	@echo "lint: the tests' and tools' Python (pyflakes)"
	@pyflakes3 $(PY_LINT_FILES)
	@echo "lint: the shell of tests/, tools/ and mk/ (shellcheck, warnings)"
	@shellcheck -S warning $(SHELL_LINT_FILES)
	@echo "lint: the versions the documentation and headers state"
	@mk/lint-versions
	@echo "lint: clean"

# make lint-patch [PATCH=FILE | REV=RANGE]: a patch (default: the last
# commit) checked as the lists it would go to would check it.
REV ?= HEAD^!
lint-patch: $(DEPS_STAMP) $(QEMU_BUILD)/build.ninja
	@mk/lint-patch $(KERNEL_CHECKPATCH) $(QEMU_SRC) '$(or $(PATCH),$(REV))'
