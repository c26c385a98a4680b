// Ops of xDSL's own dialects whose verifiers raise a bare Exception (or assert) on bad
// input: bulkred-opt reports a located error with exit status 1, not an internal error.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=EXIT

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 3]]:3: error: 'memref.store' 'indices' must hold one index per dimension of memref<4xf32> (1), got 2
// EXIT: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.store'
func.func @store_two_indices(%m: memref<4xf32>, %i: index, %v: f32) {
  memref.store %v, %m[%i, %i] : memref<4xf32>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.load' 'indices' must hold one index per dimension of memref<4x4xf32> (2), got 1
func.func @load_one_index(%m: memref<4x4xf32>, %i: index) {
  %x = memref.load %m[%i] : memref<4x4xf32>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.store' 'indices' must hold one index per dimension of memref<f32> (0), got 1
func.func @store_into_rank0(%m: memref<f32>, %i: index, %v: f32) {
  memref.store %v, %m[%i] : memref<f32>
  func.return
}

// -----

// scf.for's verifier raises a bare Exception too: its own words, located.
// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'scf.for' scf.yield expected 1 args, but got 0
func.func @for_yields_nothing(%n: index, %f: f32) {
  %r = scf.for %i = %n to %n step %n iter_args(%x = %f) -> (f32) {
    scf.yield
  }
  func.return
}

// CHECK-NOT: internal error
// EXIT-NOT: internal error
// EXIT-NOT: Traceback
