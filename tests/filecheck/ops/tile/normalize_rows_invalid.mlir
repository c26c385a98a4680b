// Every verifier rule of bulkred.normalize_rows (ops/tile/rows.py), each with its message
// and its file:line:col; the exit status is 1.
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s

func.func @x_rank(%x: memref<256xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' must have rank 2 ([M, N] rows), got rank 1
  bulkred.normalize_rows softmax %x, %y : memref<256xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_type(%x: memref<4x64xf64, #bulkred.scope<global>>, %y: memref<4x64xf64, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' element type must be one of f32, bf16, f16, got f64
  bulkred.normalize_rows softmax %x, %y : memref<4x64xf64, #bulkred.scope<global>>, memref<4x64xf64, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_scope(%x: memref<4x64xf32, #bulkred.scope<shared>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' must be in scope global, got shared
  bulkred.normalize_rows softmax %x, %y : memref<4x64xf32, #bulkred.scope<shared>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_dynamic_m_y_static(%x: memref<?x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'y' shape must be x's [?, 64], got [4, 64]
  bulkred.normalize_rows softmax %x, %y : memref<?x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_dynamic_n(%x: memref<4x?xf32, #bulkred.scope<global>>, %y: memref<4x?xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' must have a static row length N (dimension 1; only M may be ?), got [4, ?]
  bulkred.normalize_rows softmax %x, %y : memref<4x?xf32, #bulkred.scope<global>>, memref<4x?xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @stat_static_with_dynamic_m(%x: memref<?x64xf32, #bulkred.scope<global>>, %y: memref<?x64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'rstd' shape must be [?] (x's M is ?: one value per row), got [4]
  bulkred.normalize_rows rms_norm %x, %y eps 1.0e-05 : f32 rstd %r : memref<4xf32, #bulkred.scope<global>> : memref<?x64xf32, #bulkred.scope<global>>, memref<?x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_zero_rows(%x: memref<0x64xf32, #bulkred.scope<global>>, %y: memref<0x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' must have sizes >= 1 (M may be ?), got [0, 64]
  bulkred.normalize_rows softmax %x, %y : memref<0x64xf32, #bulkred.scope<global>>, memref<0x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_overlap(%x: memref<4x64xf32, strided<[32, 1]>, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' row stride must be >= the row length 64 (rows may not overlap), got 32
  bulkred.normalize_rows softmax %x, %y : memref<4x64xf32, strided<[32, 1]>, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_inner_stride(%x: memref<4x64xf32, strided<[64, 2]>, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' must have static strides [S, 1] (the last dimension contiguous), got [64, 2]
  bulkred.normalize_rows softmax %x, %y : memref<4x64xf32, strided<[64, 2]>, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @x_offset(%x: memref<4x64xf32, strided<[64, 1], offset: 8>, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'x' must have offset 0 (the parameter points at the first row), got offset 8
  bulkred.normalize_rows softmax %x, %y : memref<4x64xf32, strided<[64, 1], offset: 8>, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @y_shape(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x32xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'y' shape must be x's [4, 64], got [4, 32]
  bulkred.normalize_rows softmax %x, %y : memref<4x64xf32, #bulkred.scope<global>>, memref<4x32xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @y_type(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'y' element type must be x's f32, got bf16
  bulkred.normalize_rows softmax %x, %y : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @weight_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %w: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'weight' is only valid with kind rms_norm, layer_norm, add_rms_norm, rms_norm_backward or layer_norm_backward, got kind softmax
  bulkred.normalize_rows softmax %x, %y weight %w : memref<64xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bias_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'bias' is only valid with kind layer_norm, got kind rms_norm
  bulkred.normalize_rows rms_norm %x, %y bias %b : memref<64xf32, #bulkred.scope<global>> eps 1.0e-05 : f32 : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @weight_shape(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %w: memref<32xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'weight' shape must be [64], got [32]
  bulkred.normalize_rows rms_norm %x, %y weight %w : memref<32xf32, #bulkred.scope<global>> eps 1.0e-05 : f32 : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @weight_type(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %w: memref<64xf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'weight' element type must be f32, got f16
  bulkred.normalize_rows rms_norm %x, %y weight %w : memref<64xf16, #bulkred.scope<global>> eps 1.0e-05 : f32 : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @bias_type(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %w: memref<64xbf16, #bulkred.scope<global>>, %b: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'bias' element type must be weight's bf16, got f32
  bulkred.normalize_rows layer_norm %x, %y weight %w : memref<64xbf16, #bulkred.scope<global>> bias %b : memref<64xf32, #bulkred.scope<global>> eps 1.0e-05 : f32 : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @stat_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'rstd' is only valid with kind rms_norm, layer_norm, add_rms_norm, rms_norm_backward or layer_norm_backward, got kind softmax
  bulkred.normalize_rows softmax %x, %y rstd %r : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @mean_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'mean' is only valid with kind layer_norm or layer_norm_backward, got kind rms_norm
  bulkred.normalize_rows rms_norm %x, %y eps 1.0e-05 : f32 mean %r : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @stat_shape(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<8xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'row_max' shape must be [4], got [8]
  bulkred.normalize_rows softmax %x, %y max %r : memref<8xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @stat_type(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<4xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'row_sum' element type must be f32, got bf16
  bulkred.normalize_rows softmax %x, %y sum %r : memref<4xbf16, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @eps_missing(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'eps' is required with kind layer_norm (torch's default: 1e-5 or the dtype's eps), got none
  bulkred.normalize_rows layer_norm %x, %y : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @eps_negative(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'eps' must be a finite float >= 0, got -1e-05
  bulkred.normalize_rows rms_norm %x, %y eps -1.0e-05 : f32 : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @eps_softmax(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'eps' is only valid with kind rms_norm, layer_norm or add_rms_norm, got kind softmax
  bulkred.normalize_rows softmax %x, %y eps 1.0e-05 : f32 : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @eps_type(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'eps' must be an f32 attribute, got f64
  bulkred.normalize_rows rms_norm %x, %y eps 1.0e-05 : f64 : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}

// -----

func.func @residual_missing(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %h: memref<4x64xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'residual' is required with kind add_rms_norm, got none
  bulkred.normalize_rows add_rms_norm %x, %y residual_out %h : memref<4x64xbf16, #bulkred.scope<global>> eps 1.0e-06 : f32 : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @residual_kind(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %r: memref<4x64xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'residual' is only valid with kind add_rms_norm, got kind rms_norm
  bulkred.normalize_rows rms_norm %x, %y residual %r : memref<4x64xbf16, #bulkred.scope<global>> eps 1.0e-06 : f32 : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @residual_shape(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %r: memref<4x32xbf16, #bulkred.scope<global>>, %h: memref<4x64xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'residual' must have x's shape [4, 64] and element type bf16, got [4, 32] of bf16
  bulkred.normalize_rows add_rms_norm %x, %y residual %r : memref<4x32xbf16, #bulkred.scope<global>> residual_out %h : memref<4x64xbf16, #bulkred.scope<global>> eps 1.0e-06 : f32 : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @residual_out_alias(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %r: memref<4x64xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'residual_out' must be a buffer of its own (not x, residual or y)
  bulkred.normalize_rows add_rms_norm %x, %y residual %r : memref<4x64xbf16, #bulkred.scope<global>> residual_out %x : memref<4x64xbf16, #bulkred.scope<global>> eps 1.0e-06 : f32 : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @y_missing(%x: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'y' is required with kind softmax, got none
  bulkred.normalize_rows softmax %x : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @y_cross_entropy(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'y' is not taken by kind cross_entropy (it writes 'loss'; dx in the same pass: not yet), got one
  bulkred.normalize_rows cross_entropy %x, %y target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @target_missing(%x: memref<4x64xf32, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'target' is required with kind cross_entropy, got none
  bulkred.normalize_rows cross_entropy %x loss %l : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @target_type(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi32, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'target' element type must be i64, got i32
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi32, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @loss_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'loss' is only valid with kind cross_entropy, got kind softmax
  bulkred.normalize_rows softmax %x, %y loss %l : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @reduction_value(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'reduction' must be "mean" or "sum", got 'none'
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> reduction "none" : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @reduction_without_reduced(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'reduction' needs operand 'reduced' (the [1] result), got none
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> reduction "sum" : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @reduced_without_reduction(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>, %r: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'reduced' needs 'reduction' ("mean" or "sum"), got none
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> reduced %r : memref<1xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @reduced_shape(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>, %r: memref<2xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'reduced' shape must be [1], got [2]
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> reduction "mean" reduced %r : memref<2xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @reduced_type(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>, %r: memref<1xf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'reduced' element type must be f32, got f16
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> reduction "mean" reduced %r : memref<1xf16, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @reduction_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<1xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'reduction' is only valid with kind cross_entropy, got kind softmax
  bulkred.normalize_rows softmax %x, %y reduction "sum" reduced %r : memref<1xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @smoothing_range(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'label_smoothing' must be in [0, 1], got 1.5
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> label_smoothing 1.5 : f32 : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @ignore_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' 'ignore_index' is only valid with kind cross_entropy or cross_entropy_backward, got kind log_softmax
  bulkred.normalize_rows log_softmax %x, %y ignore_index 3 : i64 : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @lse_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %y: memref<4x64xf32, #bulkred.scope<global>>, %s: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'lse' is only valid with kind cross_entropy or cross_entropy_backward, got kind softmax
  bulkred.normalize_rows softmax %x, %y lse %s : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @grad_missing(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'grad' is required with kind log_softmax_backward, got none
  bulkred.normalize_rows log_softmax_backward %x, %y : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @grad_kind(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %g: memref<4x64xbf16, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'grad' is only valid with kind softmax_backward, log_softmax_backward, rms_norm_backward, layer_norm_backward or cross_entropy_backward, got kind softmax
  bulkred.normalize_rows softmax %x, %y grad %g : memref<4x64xbf16, #bulkred.scope<global>> : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

func.func @grad_type(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %g: memref<4x64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'grad' must have x's shape [4, 64] and element type bf16, got [4, 64] of f32
  bulkred.normalize_rows softmax_backward %x, %y grad %g : memref<4x64xf32, #bulkred.scope<global>> : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}
// -----

// Outside a kernel.
%x = memref.alloca() : memref<4x64xf32, #bulkred.scope<global>>
%y = memref.alloca() : memref<4x64xf32, #bulkred.scope<global>>
// CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:1: error: 'bulkred.normalize_rows' must be inside a func.func kernel
bulkred.normalize_rows softmax %x, %y : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>

// -----

// A variant that does not apply is refused when lowering, with the reason.
// RUN: not bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' 2>&1 | filecheck %s --check-prefix=FORCED
// FORCED: normalize_rows_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.normalize_rows' forced 'variant' 'rows_warp' does not apply: row_length (expected N <= 1024, got N = 2048 (float32, limit 1024))
// FORCED: rows_warp    priority 30: rejected: row_length
func.func @forced(%x: memref<4x2048xf32, #bulkred.scope<global>>, %y: memref<4x2048xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows softmax variant "rows_warp" %x, %y : memref<4x2048xf32, #bulkred.scope<global>>, memref<4x2048xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @backward_stat_missing(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %dy: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'mean' is required with kind layer_norm_backward (the forward's), got none
  bulkred.normalize_rows layer_norm_backward %x, %dx grad %dy : memref<4x64xf32, #bulkred.scope<global>> rstd %r : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @dweight_without_weight(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %dy: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>, %dw: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'dweight' needs operand 'weight' (the gradient of a weight), got no weight
  bulkred.normalize_rows rms_norm_backward %x, %dx grad %dy : memref<4x64xf32, #bulkred.scope<global>> rstd %r : memref<4xf32, #bulkred.scope<global>> dweight %dw : memref<64xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @dbias_kind(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %dy: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>, %db: memref<64xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'dbias' is only valid with kind layer_norm_backward, got kind rms_norm_backward
  bulkred.normalize_rows rms_norm_backward %x, %dx grad %dy : memref<4x64xf32, #bulkred.scope<global>> rstd %r : memref<4xf32, #bulkred.scope<global>> dbias %db : memref<64xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @dweight_shape(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %dy: memref<4x64xf32, #bulkred.scope<global>>, %w: memref<64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>, %dw: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'dweight' shape must be [64], got [4]
  bulkred.normalize_rows rms_norm_backward %x, %dx grad %dy : memref<4x64xf32, #bulkred.scope<global>> weight %w : memref<64xf32, #bulkred.scope<global>> rstd %r : memref<4xf32, #bulkred.scope<global>> dweight %dw : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @ce_backward_grad_rows(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %g: memref<4x64xf32, #bulkred.scope<global>>, %s: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'grad' shape must be [4], got [4, 64]
  bulkred.normalize_rows cross_entropy_backward %x, %dx target %t : memref<4xi64, #bulkred.scope<global>> grad %g : memref<4x64xf32, #bulkred.scope<global>> lse %s : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
// -----

func.func @ce_backward_loss(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>, %g: memref<4xf32, #bulkred.scope<global>>, %s: memref<4xf32, #bulkred.scope<global>>) {
  // CHECK: normalize_rows_invalid.mlir:[[# @LINE + 1]]:3: error: 'bulkred.normalize_rows' operand 'loss' is only valid with kind cross_entropy, got kind cross_entropy_backward
  bulkred.normalize_rows cross_entropy_backward %x, %dx target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> grad %g : memref<4xf32, #bulkred.scope<global>> lse %s : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
