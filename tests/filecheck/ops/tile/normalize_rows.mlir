// bulkred.normalize_rows prints as it parses, in the custom and the generic form
// (ops/tile/rows.py): each kind, weight and bias, eps, the statistics, padded rows, variant.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s

// CHECK-LABEL: func.func @softmax
// CHECK: bulkred.normalize_rows softmax %x, %y max %m : memref<64xf32, #bulkred.scope<global>> sum %s : memref<64xf32, #bulkred.scope<global>> : memref<64x1000xf32, #bulkred.scope<global>>, memref<64x1000xf32, #bulkred.scope<global>>
func.func @softmax(%x: memref<64x1000xf32, #bulkred.scope<global>>, %y: memref<64x1000xf32, #bulkred.scope<global>>, %m: memref<64xf32, #bulkred.scope<global>>, %s: memref<64xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows softmax %x, %y max %m : memref<64xf32, #bulkred.scope<global>> sum %s : memref<64xf32, #bulkred.scope<global>> : memref<64x1000xf32, #bulkred.scope<global>>, memref<64x1000xf32, #bulkred.scope<global>>
  func.return
}

// A dynamic M (one kernel for every M): x, y and the statistics of ? rows, padded x.
// CHECK-LABEL: func.func @rms_norm_dynamic_m
// CHECK: bulkred.normalize_rows rms_norm %x, %y eps 1.000000e-05 : f32 rstd %r : memref<?xf32, #bulkred.scope<global>> : memref<?x1000xbf16, strided<[1024, 1]>, #bulkred.scope<global>>, memref<?x1000xbf16, #bulkred.scope<global>>
func.func @rms_norm_dynamic_m(%x: memref<?x1000xbf16, strided<[1024, 1]>, #bulkred.scope<global>>, %y: memref<?x1000xbf16, #bulkred.scope<global>>, %r: memref<?xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows rms_norm %x, %y eps 1.0e-05 : f32 rstd %r : memref<?xf32, #bulkred.scope<global>> : memref<?x1000xbf16, strided<[1024, 1]>, #bulkred.scope<global>>, memref<?x1000xbf16, #bulkred.scope<global>>
  func.return
}

// Padded rows in and out (row strides 1024 and 1008), the warp variant forced.
// CHECK-LABEL: func.func @log_softmax_padded
// CHECK: bulkred.normalize_rows log_softmax variant "rows_warp" %x, %y : memref<8x1000xbf16, strided<[1024, 1]>, #bulkred.scope<global>>, memref<8x1000xbf16, strided<[1008, 1]>, #bulkred.scope<global>>
func.func @log_softmax_padded(%x: memref<8x1000xbf16, strided<[1024, 1]>, #bulkred.scope<global>>, %y: memref<8x1000xbf16, strided<[1008, 1]>, #bulkred.scope<global>>) {
  bulkred.normalize_rows log_softmax variant "rows_warp" %x, %y : memref<8x1000xbf16, strided<[1024, 1]>, #bulkred.scope<global>>, memref<8x1000xbf16, strided<[1008, 1]>, #bulkred.scope<global>>
  func.return
}

// CHECK-LABEL: func.func @rms_norm
// CHECK: bulkred.normalize_rows rms_norm %x, %y weight %w : memref<4096xbf16, #bulkred.scope<global>> eps 1.000000e-06 : f32 rstd %r : memref<16xf32, #bulkred.scope<global>> : memref<16x4096xbf16, #bulkred.scope<global>>, memref<16x4096xbf16, #bulkred.scope<global>>
func.func @rms_norm(%x: memref<16x4096xbf16, #bulkred.scope<global>>, %y: memref<16x4096xbf16, #bulkred.scope<global>>, %w: memref<4096xbf16, #bulkred.scope<global>>, %r: memref<16xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows rms_norm %x, %y weight %w : memref<4096xbf16, #bulkred.scope<global>> eps 1.0e-06 : f32 rstd %r : memref<16xf32, #bulkred.scope<global>> : memref<16x4096xbf16, #bulkred.scope<global>>, memref<16x4096xbf16, #bulkred.scope<global>>
  func.return
}

// float16 rows with float32 weight and bias, eps 0, mean and rstd stored.
// CHECK-LABEL: func.func @layer_norm
// CHECK: bulkred.normalize_rows layer_norm %x, %y weight %w : memref<96xf32, #bulkred.scope<global>> bias %b : memref<96xf32, #bulkred.scope<global>> eps 0.000000e+00 : f32 mean %mu : memref<5xf32, #bulkred.scope<global>> rstd %r : memref<5xf32, #bulkred.scope<global>> : memref<5x96xf16, #bulkred.scope<global>>, memref<5x96xf16, #bulkred.scope<global>>
func.func @layer_norm(%x: memref<5x96xf16, #bulkred.scope<global>>, %y: memref<5x96xf16, #bulkred.scope<global>>, %w: memref<96xf32, #bulkred.scope<global>>, %b: memref<96xf32, #bulkred.scope<global>>, %mu: memref<5xf32, #bulkred.scope<global>>, %r: memref<5xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows layer_norm %x, %y weight %w : memref<96xf32, #bulkred.scope<global>> bias %b : memref<96xf32, #bulkred.scope<global>> eps 0.0 : f32 mean %mu : memref<5xf32, #bulkred.scope<global>> rstd %r : memref<5xf32, #bulkred.scope<global>> : memref<5x96xf16, #bulkred.scope<global>>, memref<5x96xf16, #bulkred.scope<global>>
  func.return
}

// add_rms_norm: h = x + residual written to residual_out, then the rms_norm of h.
// CHECK-LABEL: func.func @add_rms_norm
// CHECK: bulkred.normalize_rows add_rms_norm %x, %y residual %r : memref<4x64xbf16, #bulkred.scope<global>> residual_out %h : memref<4x64xbf16, #bulkred.scope<global>> weight %w : memref<64xbf16, #bulkred.scope<global>> eps 1.000000e-06 : f32 : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
func.func @add_rms_norm(%x: memref<4x64xbf16, #bulkred.scope<global>>, %y: memref<4x64xbf16, #bulkred.scope<global>>, %r: memref<4x64xbf16, #bulkred.scope<global>>, %h: memref<4x64xbf16, #bulkred.scope<global>>, %w: memref<64xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows add_rms_norm %x, %y residual %r : memref<4x64xbf16, #bulkred.scope<global>> residual_out %h : memref<4x64xbf16, #bulkred.scope<global>> weight %w : memref<64xbf16, #bulkred.scope<global>> eps 1.0e-06 : f32 : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}

// cross_entropy: no y; the loss of each row, its lse; ignore_index and label_smoothing.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> ignore_index 0 : i64 label_smoothing 1.000000e-01 : f32 lse %s : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>
func.func @cross_entropy(%x: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>, %s: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> ignore_index 0 : i64 label_smoothing 0.1 : f32 lse %s : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>
  func.return
}

// cross_entropy reduced in the same kernel: the loss rows' mean (or sum) in x's type.
// CHECK-LABEL: func.func @cross_entropy_mean
// CHECK: bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> lse %s : memref<4xf32, #bulkred.scope<global>> reduction "mean" reduced %r : memref<1xbf16, #bulkred.scope<global>> : memref<4x64xbf16, #bulkred.scope<global>>
func.func @cross_entropy_mean(%x: memref<4x64xbf16, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %l: memref<4xf32, #bulkred.scope<global>>, %s: memref<4xf32, #bulkred.scope<global>>, %r: memref<1xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows cross_entropy %x target %t : memref<4xi64, #bulkred.scope<global>> loss %l : memref<4xf32, #bulkred.scope<global>> lse %s : memref<4xf32, #bulkred.scope<global>> reduction "mean" reduced %r : memref<1xbf16, #bulkred.scope<global>> : memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}

// The backward of softmax: x is softmax's output, grad its gradient, y dx.
// CHECK-LABEL: func.func @softmax_backward
// CHECK: bulkred.normalize_rows softmax_backward %y, %dx grad %dy : memref<4x64xbf16, #bulkred.scope<global>> : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
func.func @softmax_backward(%y: memref<4x64xbf16, #bulkred.scope<global>>, %dx: memref<4x64xbf16, #bulkred.scope<global>>, %dy: memref<4x64xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows softmax_backward %y, %dx grad %dy : memref<4x64xbf16, #bulkred.scope<global>> : memref<4x64xbf16, #bulkred.scope<global>>, memref<4x64xbf16, #bulkred.scope<global>>
  func.return
}

// The norms' backward: dx from x, dy and the stored statistics; dweight and dbias, the
// sums over the rows (a dynamic M here).
// CHECK-LABEL: func.func @layer_norm_backward
// CHECK: bulkred.normalize_rows layer_norm_backward %x, %dx grad %dy : memref<?x64xbf16, #bulkred.scope<global>> weight %w : memref<64xf32, #bulkred.scope<global>> mean %mu : memref<?xf32, #bulkred.scope<global>> rstd %r : memref<?xf32, #bulkred.scope<global>> dweight %dw : memref<64xf32, #bulkred.scope<global>> dbias %db : memref<64xf32, #bulkred.scope<global>> : memref<?x64xbf16, #bulkred.scope<global>>, memref<?x64xbf16, #bulkred.scope<global>>
func.func @layer_norm_backward(%x: memref<?x64xbf16, #bulkred.scope<global>>, %dx: memref<?x64xbf16, #bulkred.scope<global>>, %dy: memref<?x64xbf16, #bulkred.scope<global>>, %w: memref<64xf32, #bulkred.scope<global>>, %mu: memref<?xf32, #bulkred.scope<global>>, %r: memref<?xf32, #bulkred.scope<global>>, %dw: memref<64xf32, #bulkred.scope<global>>, %db: memref<64xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows layer_norm_backward %x, %dx grad %dy : memref<?x64xbf16, #bulkred.scope<global>> weight %w : memref<64xf32, #bulkred.scope<global>> mean %mu : memref<?xf32, #bulkred.scope<global>> rstd %r : memref<?xf32, #bulkred.scope<global>> dweight %dw : memref<64xf32, #bulkred.scope<global>> dbias %db : memref<64xf32, #bulkred.scope<global>> : memref<?x64xbf16, #bulkred.scope<global>>, memref<?x64xbf16, #bulkred.scope<global>>
  func.return
}

// CHECK-LABEL: func.func @rms_norm_backward
// CHECK: bulkred.normalize_rows rms_norm_backward %x, %dx grad %dy : memref<4x64xf32, #bulkred.scope<global>> rstd %r : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
func.func @rms_norm_backward(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %dy: memref<4x64xf32, #bulkred.scope<global>>, %r: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows rms_norm_backward %x, %dx grad %dy : memref<4x64xf32, #bulkred.scope<global>> rstd %r : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}

// cross_entropy's backward: dx from the logits, the targets, the loss's gradient per row
// (grad, float32 [M]) and the stored lse.
// CHECK-LABEL: func.func @cross_entropy_backward
// CHECK: bulkred.normalize_rows cross_entropy_backward %x, %dx target %t : memref<4xi64, #bulkred.scope<global>> label_smoothing 1.000000e-01 : f32 grad %g : memref<4xf32, #bulkred.scope<global>> lse %s : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
func.func @cross_entropy_backward(%x: memref<4x64xf32, #bulkred.scope<global>>, %dx: memref<4x64xf32, #bulkred.scope<global>>, %t: memref<4xi64, #bulkred.scope<global>>, %g: memref<4xf32, #bulkred.scope<global>>, %s: memref<4xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows cross_entropy_backward %x, %dx target %t : memref<4xi64, #bulkred.scope<global>> label_smoothing 0.1 : f32 grad %g : memref<4xf32, #bulkred.scope<global>> lse %s : memref<4xf32, #bulkred.scope<global>> : memref<4x64xf32, #bulkred.scope<global>>, memref<4x64xf32, #bulkred.scope<global>>
  func.return
}
