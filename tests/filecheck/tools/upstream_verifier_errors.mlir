// Ops of xDSL's own dialects whose verifiers raise a bare Exception (or assert) on bad
// input, or accept it: bulkred-opt reports a located error with exit status 1, not an
// internal error (nor code that addresses memory outside a buffer).
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

// -----

// Ops that xDSL's verifiers accept but that address memory outside their buffer
// (issue 22, the fuzz finds): a constant index outside its static dimension, a
// memref.subview outside its source, a subview whose declared type is not the one its
// offsets, sizes and strides give (diagnostics.py, _UPSTREAM_CHECKS).

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 4]]:3: error: 'memref.load' 'indices' #0 must be in [0, 4) for dimension 0 of memref<4xf32>, got 9
// EXIT: upstream_verifier_errors.mlir:[[# @LINE + 3]]:3: error: 'memref.load' 'indices' #0 must be in [0, 4)
func.func @load_constant_index_past_the_end(%a: memref<4xf32>) {
  %c9 = arith.constant 9 : index
  %x = memref.load %a[%c9] : memref<4xf32>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 3]]:3: error: 'memref.store' 'indices' #1 must be in [0, 8) for dimension 1 of memref<4x8xf32>, got -1
func.func @store_negative_constant_index(%a: memref<4x8xf32>, %i: index, %v: f32) {
  %m1 = arith.constant -1 : index
  memref.store %v, %a[%i, %m1] : memref<4x8xf32>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 3]]:3: error: 'memref.store' 'indices' #0 must be in [0, 4) for dimension 0 of memref<4xi1, #bulkred.scope<global>>, got 4
func.func @store_index_equal_to_the_size(%a: memref<4xi1, #bulkred.scope<global>>, %v: i1) {
  %c4 = arith.constant 4 : index
  memref.store %v, %a[%c4] : memref<4xi1, #bulkred.scope<global>>
  func.return
}

// -----

// Rows 3 and 4 of a 4x16 buffer: row 1 of the view was loaded from byte 256 of 256.
// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 5]]:3: error: 'memref.subview' dimension 0 of the view must lie in [0, 4) (dimension 0 of memref<4x16xf32, #bulkred.scope<global>>), got elements 3 to 4 (offset 3, size 2, stride 1)
// EXIT: upstream_verifier_errors.mlir:[[# @LINE + 4]]:3: error: 'memref.subview' dimension 0 of the view must lie in [0, 4)
func.func @subview_past_the_end(%A: memref<4x16xf32, #bulkred.scope<global>>, %B: memref<1xf32, #bulkred.scope<global>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.subview %A[3, 0] [2, 16] [1, 1] : memref<4x16xf32, #bulkred.scope<global>> to memref<2x16xf32, strided<[16, 1], offset: 48>, #bulkred.scope<global>>
  %x = memref.load %v[%c1, %c0] : memref<2x16xf32, strided<[16, 1], offset: 48>, #bulkred.scope<global>>
  memref.store %x, %B[%c0] : memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' dimension 1 of the view must lie in [0, 16) (dimension 1 of memref<4x16xf32>), got elements 0 to 4294967295 (offset 0, size 4294967296, stride 1)
func.func @subview_huge_size(%A: memref<4x16xf32>) {
  %v = memref.subview %A[0, 0] [1, 4294967296] [1, 1] : memref<4x16xf32> to memref<1x4294967296xf32, strided<[16, 1]>>
  func.return
}

// -----

// With an offset given by an operand, the size and stride alone must fit.
// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' dimension 1 of the view must fit in the 16 elements of dimension 1 of memref<4x16xf32>, got a span of 4294967296 (size 4294967296, stride 1)
func.func @subview_huge_size_dynamic_offset(%A: memref<4x16xf32>, %j: index) {
  %v = memref.subview %A[0, %j] [1, 4294967296] [1, 1] : memref<4x16xf32> to memref<1x4294967296xf32, strided<[16, 1], offset: ?>>
  func.return
}

// -----

// Eight elements, every second one: elements 1 to 15 of a row of 16, then 3 to 17.
// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 3]]:3: error: 'memref.subview' dimension 1 of the view must lie in [0, 16) (dimension 1 of memref<4x16xf32>), got elements 3 to 17 (offset 3, size 8, stride 2)
func.func @subview_strided_past_the_end(%A: memref<4x16xf32>) {
  %ok = memref.subview %A[0, 1] [4, 8] [1, 2] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 2], offset: 1>>
  %v = memref.subview %A[0, 3] [4, 8] [1, 2] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 2], offset: 3>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' 'static_offsets' #0 must be in [0, 4] for dimension 0 of memref<4x16xf32>, got 5
func.func @subview_offset_past_the_end_dynamic_size(%A: memref<4x16xf32>, %n: index) {
  %v = memref.subview %A[5, 0] [%n, 16] [1, 1] : memref<4x16xf32> to memref<?x16xf32, strided<[16, 1], offset: 80>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' 'static_sizes' #0 must be >= 0, got -1
func.func @subview_negative_size(%A: memref<4x16xf32>) {
  %v = memref.subview %A[1, 0] [-1, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 16>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' 'static_offsets' must hold one value per dimension of memref<4x16xf32> (2), got 1
func.func @subview_too_few_offsets(%A: memref<4x16xf32>) {
  %v = memref.subview %A[1] [2] [1] : memref<4x16xf32> to memref<2xf32, strided<[16], offset: 16>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' result type must be memref<2x16xf32, strided<[16, 1], offset: 16>, #bulkred.scope<global>>, got memref<3x16xf32, strided<[16, 1], offset: 16>, #bulkred.scope<global>>: its shape [3, 16] is not [2, 16]
func.func @subview_declared_shape(%A: memref<4x16xf32, #bulkred.scope<global>>) {
  %v = memref.subview %A[1, 0] [2, 16] [1, 1] : memref<4x16xf32, #bulkred.scope<global>> to memref<3x16xf32, strided<[16, 1], offset: 16>, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' result type must be memref<1x16xf32, strided<[16, 1], offset: 16>> (or it without dimensions of size 1), got memref<2xf32, strided<[1], offset: 16>>: its shape [2] is not [1, 16]
func.func @subview_declared_rank_reduced_shape(%A: memref<4x16xf32>) {
  %v = memref.subview %A[1, 0] [1, 16] [1, 1] : memref<4x16xf32> to memref<2xf32, strided<[1], offset: 16>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' result type must be memref<2x8xf32, strided<[16, 2]>>, got memref<2x8xf32, strided<[16, 1]>>: its strides [16, 1] are not [16, 2]
func.func @subview_declared_strides(%A: memref<4x16xf32>) {
  %v = memref.subview %A[0, 0] [2, 8] [1, 2] : memref<4x16xf32> to memref<2x8xf32, strided<[16, 1]>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' result type must be memref<2x16xf32, strided<[16, 1], offset: 16>>, got memref<2x16xf32, strided<[16, 1]>>: its offset 0 is not 16
func.func @subview_declared_offset(%A: memref<4x16xf32>) {
  %v = memref.subview %A[1, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1]>>
  func.return
}

// -----

// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 2]]:3: error: 'memref.subview' result type must be memref<2x16xf32, strided<[16, 1], offset: ?>>, got memref<2x16xf32, strided<[16, 1], offset: 16>>: its offset 16 is not ? (an offset given by an operand must be declared '?')
func.func @subview_declared_static_offset_of_an_operand(%A: memref<4x16xf32>, %i: index) {
  %v = memref.subview %A[%i, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 16>>
  func.return
}

// -----

// A load through a view is checked against the view's shape.
// CHECK: upstream_verifier_errors.mlir:[[# @LINE + 5]]:3: error: 'memref.load' 'indices' #0 must be in [0, 2) for dimension 0 of memref<2x16xf32, strided<[16, 1], offset: 16>>, got 2
func.func @load_past_the_view(%A: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %v = memref.subview %A[1, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 16>>
  %x = memref.load %v[%c2, %c0] : memref<2x16xf32, strided<[16, 1], offset: 16>>
  func.return
}

// -----

// What still verifies: the last element; a view that ends at the source's end; one of
// no rows at the end; one with a dimension of size 1 dropped; a static offset or
// stride declared '?'; an index or offset given by an operand.
// CHECK-LABEL: func.func @in_bounds
// CHECK: memref.load %a[%c3] : memref<4xf32>
// CHECK: memref.subview %A[2, 0] [2, 16] [1, 1]
// CHECK: memref.subview %A[4, 0] [0, 16] [1, 1]
// CHECK: memref.subview %A[1, 0] [1, 16] [1, 1] : memref<4x16xf32> to memref<16xf32, strided<[1], offset: 16>>
// CHECK: memref.subview %A[1, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[?, 1], offset: ?>>
// CHECK: memref.subview %A[%i, 0] [2, 16] [1, 1]
// CHECK: memref.load %a[%i] : memref<4xf32>
func.func @in_bounds(%a: memref<4xf32>, %A: memref<4x16xf32>, %i: index) {
  %c3 = arith.constant 3 : index
  %x = memref.load %a[%c3] : memref<4xf32>
  %end = memref.subview %A[2, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: 32>>
  %none = memref.subview %A[4, 0] [0, 16] [1, 1] : memref<4x16xf32> to memref<0x16xf32, strided<[16, 1], offset: 64>>
  %row = memref.subview %A[1, 0] [1, 16] [1, 1] : memref<4x16xf32> to memref<16xf32, strided<[1], offset: 16>>
  %loose = memref.subview %A[1, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[?, 1], offset: ?>>
  %dyn = memref.subview %A[%i, 0] [2, 16] [1, 1] : memref<4x16xf32> to memref<2x16xf32, strided<[16, 1], offset: ?>>
  %y = memref.load %a[%i] : memref<4xf32>
  func.return
}

// CHECK-NOT: internal error
// EXIT-NOT: internal error
// EXIT-NOT: Traceback
