// Every verifier rule of bulkred.reduce_list and bulkred.scale_list (ops/tile/lists.py),
// each with its message and its file:line:col; the exit status is 1.
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s

func.func @bad_kind(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' 'kind' of bulkred.reduce_list must be one of sum, max, min, got prod
  bulkred.reduce_list prod %t, %d, %s : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_table_cols(%t: memref<?x3xi64, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' operand 'table' shape must be [?x4], got [?x3]
  bulkred.reduce_list sum %t, %d, %s : memref<?x3xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_table_type(%t: memref<?x4xi32, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' operand 'table' element type must be i64, got i32
  bulkred.reduce_list sum %t, %d, %s : memref<?x4xi32, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_dst_type(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<?xf16, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' operand 'dst' element type must be f32, got f16
  bulkred.reduce_list sum %t, %d, %s : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf16, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_total(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<2xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' operand 'total' shape must be [1], got [2]
  bulkred.reduce_list sum %t, %d, %s : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<2xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @shared_dst(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<8xf32, #bulkred.scope<shared>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' operand 'dst' must be in scope global, got shared
  bulkred.reduce_list sum %t, %d, %s : memref<?x4xi64, #bulkred.scope<global>>, memref<8xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_map(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' 'prologue' map 0 must be one of abs, square, pow, scale, nonzero, got exp_sub
  bulkred.reduce_list sum prologue [#bulkred.map<exp_sub>] %t, %d, %s : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_epilogue(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' 'epilogue' map 0 must be one of sqrt, pow, scale, got div_count
  bulkred.reduce_list sum prologue [#bulkred.map<square>] epilogue [#bulkred.map<div_count>] %t, %d, %s : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @nonzero_not_alone(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' 'prologue' map 'nonzero' must be the only map, got nonzero, abs
  bulkred.reduce_list sum prologue [#bulkred.map<nonzero>, #bulkred.map<abs>] %t, %d, %s : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_scale(%t: memref<?x4xi64, #bulkred.scope<global>>, %d: memref<?xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>, %c: memref<1xf64, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.reduce_list' operand 'scale' element type must be f32, got f64
  bulkred.reduce_list sum %t, %d, %s scale %c : memref<1xf64, #bulkred.scope<global>> : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bad_factor(%t: memref<?x4xi64, #bulkred.scope<global>>, %m: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.scale_list' operand 'factor' shape must be [1], got [4]
  bulkred.scale_list %t, %m : memref<?x4xi64, #bulkred.scope<global>>, memref<4xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @strided_table(%t: memref<?x4xi64, strided<[8, 1]>, #bulkred.scope<global>>, %m: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: list_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.scale_list' operand 'table' must be contiguous (no layout), got strided<[8, 1]>
  bulkred.scale_list %t, %m : memref<?x4xi64, strided<[8, 1]>, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
