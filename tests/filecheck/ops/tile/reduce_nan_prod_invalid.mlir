// The verifier rules of `ignore_nan` (kind max or min, a float element type) and of prod
// on bulkred.bulk_reduce (cp.reduce.async.bulk has no multiply), each located.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: reduce_nan_prod_invalid.mlir:[[# @LINE + 4]]:3: error: 'bulkred.reduce' 'ignore_nan' is only valid with kind max or min, got kind sum
func.func @ignore_nan_sum(%a: memref<32xf32, #bulkred.scope<local>>,
                          %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'ignore_nan' is only valid with kind max or min, got kind sum
  bulkred.reduce sum thread ignore_nan %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// STDERR: reduce_nan_prod_invalid.mlir:[[# @LINE + 4]]:3: error: 'bulkred.reduce' 'ignore_nan' is only valid with kind max or min, got kind prod
func.func @ignore_nan_prod(%a: memref<32xf32, #bulkred.scope<local>>,
                           %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'ignore_nan' is only valid with kind max or min, got kind prod
  bulkred.reduce prod thread ignore_nan %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// STDERR: reduce_nan_prod_invalid.mlir:[[# @LINE + 4]]:3: error: 'bulkred.reduce' 'ignore_nan' is only valid with a floating-point element type, got i32
func.func @ignore_nan_int(%a: memref<32xi32, #bulkred.scope<local>>,
                          %b: memref<1xi32, #bulkred.scope<local>>) {
  // CHECK: error: 'bulkred.reduce' 'ignore_nan' is only valid with a floating-point element type, got i32
  bulkred.reduce max thread ignore_nan %a, %b : memref<32xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  func.return
}

// -----

// STDERR: reduce_nan_prod_invalid.mlir:[[# @LINE + 4]]:3: error: 'bulkred.bulk_reduce' 'kind' prod has no cp.reduce.async.bulk form (valid: sum, max, min, and, or, xor)
func.func @bulk_reduce_prod(%s: memref<64xf32, #bulkred.scope<shared>>,
                            %g: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: error: 'bulkred.bulk_reduce' 'kind' prod has no cp.reduce.async.bulk form (valid: sum, max, min, and, or, xor)
  bulkred.bulk_reduce prod %s, %g : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// ignore_nan comes after accum and deterministic: out of order it is a parse error.
// STDERR: reduce_nan_prod_invalid.mlir:[[# @LINE + 4]]:40: error: operand expected
func.func @ignore_nan_order(%a: memref<32xf32, #bulkred.scope<local>>,
                            %b: memref<1xf32, #bulkred.scope<local>>) {
  // CHECK: error: operand expected
  bulkred.reduce max thread ignore_nan accum %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
