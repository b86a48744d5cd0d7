# The two commands of the README:
#   make demo  - build everything, reproduce the papers' experiments,
#                write out/reproduce/report.md, benchmark the simulator
#   make test  - run the whole test suite (what CI runs)

# `make demo NANOPU=target/pgo/release/nanopu` after `make pgo` uses the
# profile-guided build (scripts/pgo-build.sh).
NANOPU := target/release/nanopu

.PHONY: demo test setup setup-test build pgo sdk bench clean

demo: setup build sdk
	@echo "== hello (4 harts)"
	$(NANOPU) run sdk/build/hello.elf
	@echo "== the papers' experiments (report: out/reproduce/report.md)"
	$(NANOPU) reproduce --out out/reproduce
	@echo "== simulator speed"
	$(NANOPU) bench --json out/bench.json

# The tests' scratch files go to target/test-tmp, emptied at the start of
# each run, not to the system's temporary directory.
TEST_TMP := $(CURDIR)/target/test-tmp

# Built with the `ci` profile (Cargo.toml: optimised, no fat LTO), whose
# binaries go to target/ci; `make build` and `make demo` use `release`.
test: setup-test sdk
	rm -rf $(TEST_TMP) && mkdir -p $(TEST_TMP)
	TMPDIR=$(TEST_TMP) cargo test --workspace --profile ci
	TMPDIR=$(TEST_TMP) NANOPU_BIN=$(CURDIR)/target/ci/nanopu .venv/bin/python -m pytest -q python/tests
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --profile ci -- -D warnings

setup:
	@scripts/setup.sh

setup-test:
	@scripts/setup.sh --test

build:
	cargo build --release
	@mkdir -p out

pgo: setup
	scripts/pgo-build.sh

sdk:
	$(MAKE) -C sdk

bench: build sdk
	$(NANOPU) bench

clean:
	cargo clean
	$(MAKE) -C sdk clean
