// Grid-scope reductions the verifier rejects, and ones no grid variant lowers.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// CHECK: grid_reductions_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' operand 'src' must be in scope global at grid scope, got local
// STDERR: grid_reductions_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' operand 'src' must be in scope global at grid scope, got local
func.func @grid_local(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'axes' is only valid at grid scope, got scope thread
func.func @axes_thread(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread axes [0 : i64] %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'axes' must be in [0, 2) for 'src' of rank 2, got [2]
func.func @axes_range(%a: memref<4x8xf32, #bulkred.scope<global>>, %b: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [2 : i64] %a, %b : memref<4x8xf32, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'axes' must be a non-empty, increasing list without repeats, got [1, 0]
func.func @axes_order(%a: memref<4x8xf32, #bulkred.scope<global>>, %b: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64, 0 : i64] %a, %b : memref<4x8xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'dst' shape must be [8] to reduce 'src' [4, 8] over axes [0], got [4]
func.func @dst_shape(%a: memref<4x8xf32, #bulkred.scope<global>>, %b: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64] %a, %b : memref<4x8xf32, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'deterministic' is only valid at grid scope, got scope cta
func.func @det_cta(%a: memref<1xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum cta deterministic %a, %b : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// The middle axis of three: neither rows nor columns.
// CHECK: error: 'bulkred.reduce' no lowering variant applies on sm_90a
// CHECK: grid_full{{ +}}60{{ +}}form{{ +}}FAIL{{ +}}full{{ +}}axes [1]
func.func @middle_axis(%a: memref<4x8x2xf32, #bulkred.scope<global>>, %b: memref<4x2xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %a, %b : memref<4x8x2xf32, #bulkred.scope<global>>, memref<4x2xf32, #bulkred.scope<global>>
  func.return
}

// -----

// f64 has no grid variant (the collective lowerings move 32-bit values).
// CHECK: error: 'bulkred.reduce' no lowering variant applies on sm_90a
// CHECK: grid_full{{ +}}60{{ +}}dtype{{ +}}FAIL{{ +}}int32, float16, bfloat16, float32{{ +}}float64
func.func @f64(%a: memref<64xf64, #bulkred.scope<global>>, %b: memref<1xf64, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %a, %b : memref<64xf64, #bulkred.scope<global>>, memref<1xf64, #bulkred.scope<global>>
  func.return
}

// -----

// A grid reduction owns its kernel: another tile op beside it is declined.
// CHECK: error: 'bulkred.reduce' no lowering variant applies on sm_90a
// CHECK: grid_full{{ +}}60{{ +}}kernel{{ +}}FAIL{{ +}}alone, on parameters{{ +}}kernel also holds bulkred.copy
func.func @not_alone(%a: memref<64xf32, #bulkred.scope<global>>, %b: memref<1xf32, #bulkred.scope<global>>, %c: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %a, %b : memref<64xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  bulkred.copy %b, %c : memref<1xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
