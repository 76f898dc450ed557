# pg_lease -- PGXS build of the extension, plus the project's test and demo targets.

EXTENSION   = pg_lease
# The version is written once, in the control file (the client's build reads it too).
EXTVERSION  = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big  = pg_lease
OBJS        = extension/lease_load.o extension/lease_stats.o extension/lease_wait.o extension/lease_wake.o \
              extension/lease_args.o extension/lease_queries.o extension/lease_spi.o extension/lease_lockqueue.o extension/lease_xact.o \
              extension/lease_session.o extension/lease_held.o extension/lease_try.o extension/lease_acquire.o \
              extension/lease_grant_ops.o extension/lease_where.o extension/lease_election.o extension/lease_funcs.o
# One base script (0.1.0, as it shipped) and the upgrade chain to the current
# version, as contrib does: CREATE EXTENSION runs the base and then each update
# (PostgreSQL finds the path, there being no script of default_version).  A new
# version is a new upgrade script; released scripts are never edited.
DATA        = $(wildcard extension/$(EXTENSION)--*.sql)

# pg_regress suites (sql/, expected/) and isolation specs (tests/isolation/).
# upgrade (the walk from 0.1.0) drops and recreates the extension: it runs last.
REGRESS        = basic fence transactions bad_input privileges nested session stats election shared upgrade
REGRESS_OPTS   = --load-extension=$(EXTENSION)
ISOLATION      = fence_orders_acquire acquire_waits_for_grant break_waits_for_fence \
                 repeatable_read_conflict failed_takeover_keeps_no_lock rebind_beats_session_takeover \
                 reader_fence_orders_writer reader_waits_for_open_grant release_between_clear_and_read fast_path_keeps_no_lock \
                 permit_waits_for_open_grant
ISOLATION_OPTS = --load-extension=$(EXTENSION) --inputdir=tests/isolation

# make installcheck writes its output (results/, regression.diffs, output_iso/)
# outside the checkout, in REGRESS_OUTDIR (tests/lib/sql_suite.sh gives one per
# cluster).  With no PGHOST or PGPORT it needs no server: pg_regress starts a
# temporary one with the library preloaded (tests/regress.conf), as pg_cron
# does; PostgreSQL refuses to run it as root.  With them it uses that server.
REGRESS_OUTDIR ?= $(or $(TMPDIR),/tmp)/pg_lease-installcheck-$(shell id -un)
REGRESS_OPTS   += --outputdir=$(REGRESS_OUTDIR)/regress
ISOLATION_OPTS += --outputdir=$(REGRESS_OUTDIR)/isolation
ifeq ($(PGHOST)$(PGPORT),)
REGRESS_OPTS   += --temp-instance=$(REGRESS_OUTDIR)/regress/instance --temp-config=tests/regress.conf
ISOLATION_OPTS += --temp-instance=$(REGRESS_OUTDIR)/isolation/instance --temp-config=tests/regress.conf
TEMP_INSTANCE   = yes
endif

PG_CPPFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror
# make LEASE_ASSERTS=1: Assert()s of the extension checked (make faults builds so)
ifdef LEASE_ASSERTS
PG_CPPFLAGS += -DUSE_ASSERT_CHECKING
endif

# Bitcode for JIT inlining buys nothing for these functions, and would need clang.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)

.DEFAULT_GOAL := all
.PHONY: test demo demo-election deps client install-client faults ha bench bench-quick db servers stop

BUILD_DIR ?= build
CMAKE_FLAGS ?=

# These work before the PostgreSQL build files exist: they install them first.
# make test: every test registered with CTest (tests/CMakeLists.txt);
# CTEST_ARGS narrows it (e.g. CTEST_ARGS="-L unit" or "-R shell").
test:
	scripts/test.sh $(CTEST_ARGS)

demo:
	scripts/demo.sh

# a leader-elected worker: the leader frozen, a follower elected with a higher
# term, the frozen leader's fenced write rejected (examples/election/)
demo-election:
	scripts/demo-election.sh

# the fault suite in full (the CTest label "faults"; make test runs it quick)
faults:
	scripts/faults.sh

# Automatic failovers under pg_auto_failover, checked (tests/ha/run.sh; --quick: HA_QUICK=1)
ha:
	scripts/ha.sh

# Every provider and baseline, every scenario, one interleaved run (bench/results/latest.{md,json,svg});
# (its servers on free loopback ports, the clusters on Unix sockets); then the
# election figures (bench/election.sh: bench/results/election.md), the shared-lease
# and semaphore figures (bench/sharing.sh: bench/results/sharing.md) and what lease
# pairs cost a TPC-B beside them (bench/host_impact.sh: bench/results/host-impact.md)
bench:
	bench/run.sh
	bench/host_impact.sh
	bench/election.sh
	bench/sharing.sh

bench-quick:
	bench/run.sh --quick

deps:
	scripts/install-deps.sh

# Servers to try pglease against, running until make stop (scripts/local.sh;
# their files in .pglease-local/, or $PGLEASE_LOCAL): make db, a PostgreSQL
# cluster with pg_lease installed and preloaded; make servers, a Redis, an etcd
# and a ZooKeeper on free ports.  Each prints the conninfo/URLs to use.
db:
	@scripts/local.sh db

servers:
	@scripts/local.sh servers

stop:
	@scripts/local.sh stop

# The C++ client library, CLI and tests (CMake; client/CMakeLists.txt, tests/CMakeLists.txt).
client:
	cmake -S client -B $(BUILD_DIR)/client $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD_DIR)/client -j2

install-client: client
	cmake --install $(BUILD_DIR)/client >/dev/null

ifneq ($(wildcard $(PGXS)),)
include $(PGXS)
else
all install installcheck:
	@echo "PGXS not found (pg_config --pgxs). Run 'make deps' (as root) or install postgresql-server-dev-15." >&2
	@exit 1
endif

installcheck: regress-outdir
.PHONY: regress-outdir
regress-outdir:
ifdef TEMP_INSTANCE
	@[ "$$(id -u)" != 0 ] || { echo "make installcheck starts its own server, which PostgreSQL refuses to run as root:" \
		"run it as another user, or name a running server with PGHOST and PGPORT" >&2; exit 1; }
endif
	@mkdir -p $(REGRESS_OUTDIR)/regress $(REGRESS_OUTDIR)/isolation
	@[ "$$(grep -c '"version": "$(EXTVERSION)"' META.json)" = 2 ] || \
		{ echo "META.json: both versions must be $(EXTVERSION), as pg_lease.control says" >&2; exit 1; }

# make install also installs the client (library, headers, CMake and pkg-config
# files, CLI); make install WITH_CLIENT=0 installs the extension alone.
ifneq ($(WITH_CLIENT),0)
install: install-client
endif
