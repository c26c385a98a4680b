// Malformed input that xDSL 0.74's parser accepts without a word, or reports without a
// location (issue 15, section 3; docs/DEVELOPING.md, "Diagnostics"): each is one located
// error, exit status 1, never a traceback.
// RUN: not bulkred-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=DIAG

// CHECK-NOT: Traceback

// A launch field given twice: the last value used to win, and the first was never checked.
// CHECK: malformed_input.mlir:[[# @LINE + 1]]:93: error: launch field 'grid' given twice
func.func @launch_twice() attributes {bulkred.launch = #bulkred.launch<grid = [2147483648], grid = [32]>} {
  func.return
}

// -----

// An index literal wider than 64 bits used to wrap modulo 2^64 in the address arithmetic.
func.func @index_too_wide(%A: memref<32xf32, #bulkred.scope<global>>) {
  // CHECK: malformed_input.mlir:[[# @LINE + 1]]:25: error: integer value 1000000000000000000000000000000 is out of range for type index (64 bits), which supports values in the range [-9223372036854775808, 18446744073709551616)
  %big = arith.constant 1000000000000000000000000000000 : index
  %v = memref.load %A[%big] : memref<32xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @index_below_range() {
  // CHECK: malformed_input.mlir:[[# @LINE + 1]]:23: error: integer value -9223372036854775809 is out of range for type index
  %0 = arith.constant -9223372036854775809 : index
  func.return
}

// -----

// A clause without its operand used to be dropped without a word.
func.func @prefetch_policy_missing(%src: !ptx.ptr<global>, %size: i32) {
  ptx.cp.async.bulk.prefetch.L2.global %src, %size cachePolicy =
  // CHECK: malformed_input.mlir:[[# @LINE + 1]]:3: error: expected an operand after 'cachePolicy ='
  func.return
}

// -----

func.func @copy_mask_missing(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cta>) {
  // CHECK: malformed_input.mlir:[[# @LINE + 1]]:109: error: expected an operand after 'ctaMask ='
  ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" %dst, %src, %size, %mbar ctaMask = cachePolicy = %size
  func.return
}

// -----

// `{ }` holds no block: an error, as in MLIR (a declaration is written without braces).
// CHECK: malformed_input.mlir:[[# @LINE + 1]]:20: error: expected non-empty function body ('{ }' holds no block; a declaration is written without braces)
func.func @first() { }

// -----

// A block label defined twice, after a forward reference to it (was: error: 'bb1').
func.func @label_twice() {
  cf.br ^bb1
^bb1:
  cf.br ^bb1
// CHECK: malformed_input.mlir:[[# @LINE + 1]]:1: error: re-declaration of block 'bb1'
^bb1:
  func.return
}

// -----

// `attributes` at the end of the input used to make a declaration.
// CHECK: malformed_input.mlir:[[# @LINE + 1]]:57: error: expected an attribute dictionary '{...}' after 'attributes', got the end of the input
func.func @k(%B: memref<4xf32, #bulkred.scope<global>>) attributes

// CHECK-NOT: Traceback

// DIAG: error: launch field 'grid' given twice
// DIAG: error: integer value 1000000000000000000000000000000 is out of range for type index
// DIAG: error: integer value -9223372036854775809 is out of range for type index
// DIAG: error: expected an operand after 'cachePolicy ='
// DIAG: error: expected an operand after 'ctaMask ='
// DIAG: error: expected non-empty function body
// DIAG: error: re-declaration of block 'bb1'
// DIAG: error: expected an attribute dictionary '{...}' after 'attributes'
