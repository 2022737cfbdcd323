# Tessera: `make demo` starts a local sandbox behind Tessera; `make test` runs every test.
SHELL := /bin/bash
CARGO ?= cargo

.PHONY: demo test deps build release lint fmt compat

deps:
	@bash scripts/install-deps.sh

release: deps
	$(CARGO) build --release --bin tessera

demo: release
	./target/release/tessera demo

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test: deps
	$(CARGO) build --release --bin tessera
	$(CARGO) test --workspace --release
	TESSERA_BIN=$(CURDIR)/target/release/tessera bash tests/compat/run.sh
