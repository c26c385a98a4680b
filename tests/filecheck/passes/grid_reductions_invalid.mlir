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

// CHECK: error: 'bulkred.reduce' 'axes' must be in [0, 2) for 'src' of rank 2, got 2 in [2]
func.func @axes_range(%a: memref<4x8xf32, #bulkred.scope<global>>, %b: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [2 : i64] %a, %b : memref<4x8xf32, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'axes' must be in ascending order, [0, 1], got [1, 0]
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

// CHECK: grid_reductions_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'axes' must be distinct, got 1 more than once in [0, 1, 1]
// STDERR: grid_reductions_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' 'axes' must be distinct, got 1 more than once in [0, 1, 1]
func.func @axes_repeated(%a: memref<4x8x2xf32, #bulkred.scope<global>>, %b: memref<2xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64, 1 : i64, 1 : i64] %a, %b : memref<4x8x2xf32, #bulkred.scope<global>>, memref<2xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'axes' must name at least one axis, got []
func.func @axes_empty(%a: memref<4x8xf32, #bulkred.scope<global>>, %b: memref<4x8xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [] %a, %b : memref<4x8xf32, #bulkred.scope<global>>, memref<4x8xf32, #bulkred.scope<global>>
  func.return
}

// -----

// CHECK: error: 'bulkred.reduce' 'axes' must be in [0, 3) for 'src' of rank 3, got -1 in [-1]
func.func @axes_negative(%a: memref<4x8x2xf32, #bulkred.scope<global>>, %b: memref<4x8xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [-1 : i64] %a, %b : memref<4x8x2xf32, #bulkred.scope<global>>, memref<4x8xf32, #bulkred.scope<global>>
  func.return
}

// -----

// Rank 9: beyond the 8 axes a grid reduction takes.
// CHECK: error: 'bulkred.reduce' 'src' of a grid-scope reduction must have rank 1 to 8, got rank 9
func.func @rank9(%a: memref<2x2x2x2x2x2x2x2x2xf32, #bulkred.scope<global>>, %b: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %a, %b : memref<2x2x2x2x2x2x2x2x2xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The kept axes in order: [4, 2] for axes [1] of [4, 8, 2], not [2, 4].
// CHECK: error: 'bulkred.reduce' 'dst' shape must be [4, 2] to reduce 'src' [4, 8, 2] over axes [1], got [2, 4]
func.func @dst_kept_order(%a: memref<4x8x2xf32, #bulkred.scope<global>>, %b: memref<2x4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %a, %b : memref<4x8x2xf32, #bulkred.scope<global>>, memref<2x4xf32, #bulkred.scope<global>>
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

// -----

// A strided dst is not taken yet: every grid variant's `form` row says why (a strided
// src is: grid_canonical.mlir).
// CHECK: error: 'bulkred.reduce' no lowering variant applies on sm_90a
// CHECK: grid_gather{{ +}}59{{ +}}form{{ +}}FAIL{{ +}}any{{ +}}dst layout strided<[2]> (strided dst: not yet)
func.func @strided_dst(%a: memref<4x8xf32, strided<[16, 1]>, #bulkred.scope<global>>, %b: memref<4xf32, strided<[2]>, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %a, %b : memref<4x8xf32, strided<[16, 1]>, #bulkred.scope<global>>, memref<4xf32, strided<[2]>, #bulkred.scope<global>>
  func.return
}

// -----

// A negative stride (a flipped view) is refused by the verifier.
// CHECK: grid_reductions_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'src' of a grid-scope reduction must have static element strides >= 0, got strides [-8, 1]
// STDERR: grid_reductions_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' 'src' of a grid-scope reduction must have static element strides >= 0, got strides [-8, 1]
func.func @negative_stride(%a: memref<4x8xf32, strided<[-8, 1]>, #bulkred.scope<global>>, %b: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %a, %b : memref<4x8xf32, strided<[-8, 1]>, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A dynamic stride: the variants need the strides at compile time.
// CHECK: grid_reductions_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' 'src' of a grid-scope reduction must have static element strides >= 0, got strides [?, 1]
func.func @dynamic_stride(%a: memref<4x8xf32, strided<[?, 1]>, #bulkred.scope<global>>, %b: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %a, %b : memref<4x8xf32, strided<[?, 1]>, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}

// -----

// An offset: the kernel parameter is the view's first element.
// CHECK: grid_reductions_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' 'src' of a grid-scope reduction must have offset 0 (the parameter points at the view's first element), got offset 3
func.func @offset(%a: memref<4x8xf32, strided<[16, 1], offset: 3>, #bulkred.scope<global>>, %b: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %a, %b : memref<4x8xf32, strided<[16, 1], offset: 3>, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A whole reduction writes dst of shape [1], not a 0-d memref (the API presents 0-d results).
// CHECK: error: 'bulkred.reduce' 'dst' shape must be [1] to reduce 'src' [4, 8] over axes [0, 1], got []
func.func @dst_rank0(%a: memref<4x8xf32, #bulkred.scope<global>>, %b: memref<f32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %a, %b : memref<4x8xf32, #bulkred.scope<global>>, memref<f32, #bulkred.scope<global>>
  func.return
}
