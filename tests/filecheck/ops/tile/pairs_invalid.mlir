// Every verifier rule of `pairs` (complex numbers as (re, im); ops/tile/reduce.py, check_pairs),
// each with its exact message and its file:line:col.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// The pair axis must have extent 2.
// STDERR: pairs_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'pairs' needs 'src''s last axis of extent 2 (re, im), got extent 3
func.func @extent(%x: memref<64x3xf32, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' needs 'src''s last axis of extent 2 (re, im), got extent 3
  bulkred.reduce sum grid prologue [#bulkred.map<abs>] pairs %x, %v : memref<64x3xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Parts of f16, f32 or f64 only (complex32, complex64, complex128): no bf16 pairs.
func.func @half(%x: memref<64x2xbf16, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' needs an f16, f32 or f64 'src' (complex32, complex64 or complex128 as (re, im)), got bf16
  bulkred.reduce sum grid prologue [#bulkred.map<abs>] pairs %x, %v : memref<64x2xbf16, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A kind that complex numbers do not have.
func.func @argmax(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<1xi64, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' is not valid with kind argmax (valid: sum, max, min, any, all, var, prod, nanmean, logsumexp)
  bulkred.reduce argmax grid pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
  func.return
}

// -----

// A sum of pairs needs a map that makes each pair real first.
func.func @no_map(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind sum needs a prologue whose first map makes each pair real (abs, square, pow, nonzero; or nan_zero alone: a complex nansum), got none
  bulkred.reduce sum grid pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The real results reduce the pair axis.
func.func @pair_kept(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<2xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind max makes each pair one real value: 'axes' must name the pair axis 1
  bulkred.reduce max grid axes [0 : i64] prologue [#bulkred.map<abs>] pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<2xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The complex product keeps it.
func.func @prod_reduced(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind prod keeps the pair axis (a complex product): 'axes' must not name axis 1
  bulkred.reduce prod grid pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// So does the complex logsumexp, which takes no prologue.
func.func @logsumexp_reduced(%x: memref<64x2xf64, #bulkred.scope<global>>, %v: memref<1xf64, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind logsumexp keeps the pair axis (a complex logsumexp): 'axes' must not name axis 1
  bulkred.reduce logsumexp grid pairs %x, %v : memref<64x2xf64, #bulkred.scope<global>>, memref<1xf64, #bulkred.scope<global>>
  func.return
}

// -----

func.func @logsumexp_prologue(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<2xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind logsumexp takes no prologue (but 'cast') or epilogue
  bulkred.reduce logsumexp grid axes [0 : i64] prologue [#bulkred.map<abs>] pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<2xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @prod_map(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<2xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind prod takes no prologue (but 'cast') or epilogue
  bulkred.reduce prod grid axes [0 : i64] epilogue [#bulkred.map<sqrt>] pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<2xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A complex mean keeps the pair axis, as the product.
func.func @nanmean_reduced(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind nanmean keeps the pair axis (a complex mean): 'axes' must not name axis 1
  bulkred.reduce nanmean grid pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @var_map(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' with kind var takes no prologue, got abs
  bulkred.reduce var grid prologue [#bulkred.map<abs>] pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// var's mean is complex: aux is dst's shape and the pair.
func.func @var_aux(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>, %m: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'aux' shape must be dst's shape and a pair axis [1, 2], got [1]
  bulkred.reduce var grid pairs %x, %v aux %m : memref<1xf32, #bulkred.scope<global>> : memref<64x2xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @accum(%x: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'accum' is not valid with 'pairs'
  bulkred.reduce sum grid accum prologue [#bulkred.map<abs>] pairs %x, %v : memref<64x2xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @thread(%x: memref<2xf32, #bulkred.scope<local>>, %v: memref<1xf32, #bulkred.scope<local>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1]>} {
  // CHECK: pairs_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce' 'pairs' is only valid at grid scope, got scope thread
  bulkred.reduce sum thread pairs %x, %v : memref<2xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
