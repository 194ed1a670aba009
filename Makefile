# coopreduce — the short way in. CMake does the work; these are the commands people type.
#   make run    build, then sum 1,048,576 ones and a random 2^24-element array (GPU if present)
#   make test   build from scratch in $(BUILD) (the directory is removed first), then run every
#               test (GPU tests skip without a GPU)
#   make check  build incrementally in $(BUILD), then run every test
#   make bench  build, then the quick benchmark
# Variables: BUILD (build directory), CMAKE_FLAGS (extra cmake -D options), CTEST_ARGS (extra
# ctest options), NVCC (the CUDA compiler; empty: the CPU path alone), PREFIX (make install).
BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
CTEST_ARGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CLI = $(BUILD)/coopreduce
# The GPU path builds wherever nvcc is, on the PATH or in the usual place.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifneq ($(NVCC),)
CMAKE_FLAGS += -DCMAKE_CUDA_COMPILER=$(NVCC)
else
CMAKE_FLAGS += -DCOOPREDUCE_ENABLE_CUDA=OFF
endif

.PHONY: all build run test check bench install clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(CLI) sum --gen ones --n 1048576 --dtype f32
	@echo
	$(CLI) sum --gen uniform --n 16777216 --seed 42 --dtype f32

test:
	rm -rf $(BUILD)
	$(MAKE) --no-print-directory check

check: build
	cd $(BUILD) && ctest --output-on-failure $(CTEST_ARGS); rc=$$?; \
	  grep -h '^SKIP' Testing/Temporary/LastTest.log 2>/dev/null; exit $$rc

bench: build
	$(CLI) bench --quick

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
