// Each predicate of sm100_packed that declines a reduction, named in the explain
// table; the reduction then lowers to local. The target comes from the module's
// bulkred.target attribute (no pass option).
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{explain=true}' | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions' | filecheck %s --check-prefix=IR

// CHECK:      dispatch of 'bulkred.reduce' at {{.*}}declines.mlir:[[# @LINE + 8]]:3 on sm_100a
// CHECK:      sm100_packed 20 reduction_len FAIL >= 8 7
// CHECK:      sm100_packed priority 20: rejected: reduction_len
// CHECK-NEXT: local priority 10: chosen
// IR-LABEL: func.func @len7
// IR-NOT:   ptx.add.f32x2
module attributes {bulkred.target = "sm_100a"} {
func.func @len7(%a: memref<7xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<7xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // IR: scf.for
  // IR: ptx.add rn f32
  func.return
}
}

// -----

// CHECK:      dispatch of 'bulkred.reduce' at {{.*}}declines.mlir:[[# @LINE + 8]]:3 on sm_100a
// CHECK:      sm100_packed 20 dtype FAIL float32 float16
// CHECK:      local 10 dtype ok {{.*}} float16
// CHECK:      sm100_packed priority 20: rejected: dtype
// CHECK-NEXT: local priority 10: chosen
// IR-LABEL: func.func @f16
module attributes {bulkred.target = "sm_100a"} {
func.func @f16(%a: memref<32xf16, #bulkred.scope<local>>, %b: memref<1xf16, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<32xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  // IR: ptx.add rn f16
  func.return
}
}

// -----

// CHECK:      dispatch of 'bulkred.reduce' at {{.*}}declines.mlir:[[# @LINE + 7]]:3 on sm_100a
// CHECK:      sm100_packed 20 src_ndim FAIL 1 2
// CHECK:      sm100_packed priority 20: rejected: src_ndim
// CHECK-NEXT: local priority 10: chosen
// IR-LABEL: func.func @src_2d
module attributes {bulkred.target = "sm_100a"} {
func.func @src_2d(%a: memref<1x32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce max thread %a, %b : memref<1x32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // IR: scf.for
  // IR: ptx.max NaN f32
  func.return
}
}

// -----

// CHECK:      dispatch of 'bulkred.reduce' at {{.*}}declines.mlir:[[# @LINE + 8]]:3 on sm_100a
// CHECK:      sm100_packed 20 dst_len FAIL 1 2
// CHECK:      sm100_packed 20 src_ndim FAIL 1 2
// CHECK:      sm100_packed priority 20: rejected: dst_len, src_ndim
// CHECK-NEXT: local priority 10: chosen
// IR-LABEL: func.func @dst_len2
module attributes {bulkred.target = "sm_100a"} {
func.func @dst_len2(%a: memref<2x16xf32, #bulkred.scope<local>>, %b: memref<2xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<2x16xf32, #bulkred.scope<local>>, memref<2xf32, #bulkred.scope<local>>
  // IR: scf.for
  // IR: scf.for
  // IR: ptx.add rn f32
  func.return
}
}

// -----

// CHECK:      dispatch of 'bulkred.reduce' at {{.*}}declines.mlir:[[# @LINE + 7]]:3 on sm_90a
// CHECK:      sm100_packed 20 sm_version FAIL >= 100 90 (sm_90a)
// CHECK:      sm100_packed priority 20: rejected: sm_version
// CHECK-NEXT: local priority 10: chosen
// IR-LABEL: func.func @hopper
module attributes {bulkred.target = "sm_90a"} {
func.func @hopper(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce min thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // IR-NOT: ptx.min3
  // IR: ptx.min NaN f32
  func.return
}
}

// -----

// prod: sm100_packed has no packed multiply, so its kind row says why and local runs.
// CHECK:      dispatch of 'bulkred.reduce' at {{.*}}declines.mlir:[[# @LINE + 7]]:3 on sm_100a
// CHECK:      sm100_packed 20 kind FAIL sum, max, min prod
// CHECK:      sm100_packed priority 20: rejected: kind
// CHECK-NEXT: local priority 10: chosen
// IR-LABEL: func.func @prod
module attributes {bulkred.target = "sm_100a"} {
func.func @prod(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce prod thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // IR: ptx.mul rn f32
  func.return
}
}
