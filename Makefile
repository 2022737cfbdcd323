# Tessera: `make demo` starts a local sandbox behind Tessera; `make test` runs every test.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: demo test deps build release release-pgo lint fmt compat bench bench-pgo bench-tpcc bench-full bench-tools

deps:
	@bash scripts/install-deps.sh

release: deps
	$(CARGO) build --release --bin tessera

# Profile-guided build (scripts/build-pgo.sh, about 8 minutes on 2 cores): target/pgo/release/tessera,
# a quarter fewer instructions and two thirds fewer instruction-cache misses per statement.
release-pgo: deps
	bash scripts/build-pgo.sh

demo: release
	./target/release/tessera demo

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
	python3 scripts/module-deps.py --check > /dev/null || python3 scripts/module-deps.py

# Every test, built once in the `ci` profile (Cargo.toml: the release optimisation without LTO
# and debug info, a third of the build time); prints how long each step took (docs/testing.md).
TEST_PROFILE ?= ci
test: deps
	CARGO="$(CARGO)" TEST_PROFILE=$(TEST_PROFILE) bash scripts/test-all.sh

# Benchmark kit (crates/bench). Extra options: make bench BENCH_ARGS="--pin --time 30".
ANCHORS := crates/bench/anchors/gaea-sysbench-published.csv

bench-tools: deps
	$(CARGO) build --release --bin tessera --bin tessera-bench

# Quick run (about 6 minutes): point_select, read_only, read_write at 4/16/64 threads, single topology.
bench: bench-tools
	./target/release/tessera-bench --preset quick --anchors $(ANCHORS) $(BENCH_ARGS)

# The quick run with the profile-guided build as Tessera.
bench-pgo: bench-tools release-pgo
	./target/release/tessera-bench --preset quick --anchors $(ANCHORS) --tessera-bin target/pgo/release/tessera $(BENCH_ARGS)

# TPC-C only: 2 warehouses, 60 s, 4 threads, direct and through Tessera, then go-tpc check.
bench-tpcc: bench-tools
	bash scripts/install-go-tpc.sh
	./target/release/tessera-bench --tpcc-only $(BENCH_ARGS)

# The whole matrix: 7 workloads x 4..128 threads x 3 topologies, then TPC-C (about 2.5 hours).
bench-full: bench-tools
	bash scripts/install-go-tpc.sh
	./target/release/tessera-bench --preset full --anchors $(ANCHORS) $(BENCH_ARGS)

# XA fault injection (crates/proxy/tests/xa_faults.rs, a module of the integration binary): bank transfers over 4 shards while
# backends and Tessera are killed; `make test` runs 20 rounds per scenario.
# Example: make xa-faults ROUNDS=100
.PHONY: xa-faults
ROUNDS ?= 20
xa-faults:
	XA_FAULTS_ROUNDS=$(ROUNDS) $(CARGO) test --profile $(TEST_PROFILE) -p tessera-proxy --test integration \
		xa_faults:: -- --nocapture

# Live reload under load (scripts/reload-under-load.sh): sysbench oltp_read_write at 64 threads
# for 60 s while the configuration is reloaded 10 times and an invalid file once.
.PHONY: reload-under-load
reload-under-load:
	$(CARGO) build --release --bin tessera
	TESSERA_BIN=$(CURDIR)/target/release/tessera bash scripts/reload-under-load.sh

# Sharding differential test (tests/difftest/README.md): the corpus, N random statements and the
# DML section on one MariaDB and through Tessera over four shards (`make test` runs it with
# N=2000); SELF=1 runs the harness self-check instead.
# Example: make difftest N=20000 SEED=42
.PHONY: difftest
N ?= 2000
SEED ?=
SELF ?=
difftest:
	DIFFTEST_N=$(N) DIFFTEST_SEED=$(SEED) DIFFTEST_SELF=$(SELF) \
		$(CARGO) test -p tessera-proxy --test integration $(DIFFTEST_CARGO_FLAGS) -- \
		--exact sharding_diff::tessera_answers_like_one_mariadb --nocapture

# MariaDB's own `main` suite (mariadb-test, tests/mtr/README.md) against a running server,
# directly and through Tessera; fails when a test passes directly but not through Tessera
# and is not listed in tests/mtr/inherent.txt. Results in target/mtr/.
# Example: make mtr MTR_TESTS="select insert func_str"
.PHONY: mtr
MTR_TESTS ?=
mtr:
	$(CARGO) build --release --bin tessera
	TESSERA_BIN=$(CURDIR)/target/release/tessera MTR_TESTS="$(MTR_TESTS)" bash scripts/mariadb-test-run.sh
