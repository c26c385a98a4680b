// Complex numbers (`pairs`, docs/fused.md "Complex numbers") through the dispatch and the
// backend: the form is `pairs` (the other axes' strided form and the pair's stride), which
// only grid_gather takes; each lane loads a pair's re and im (two scalar loads) and makes
// |z|^2 with one mul and one fma; the kernel assembles for sm_90a.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX

// The 2-norm of each row of a complex64 [64, 128].
// EXPLAIN: grid_rows{{ +}}65{{ +}}form{{ +}}FAIL{{ +}}inner{{ +}}pairs [64, 128] strides [256, 2] axes [1] pair stride 1
// EXPLAIN: grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}pairs [64, 128] strides [256, 2] axes [1] pair stride 1
// EXPLAIN: chosen: grid_gather
// CHECK-LABEL: func.func @cnorm
// CHECK: %[[RE:.*]] = ptx.ld f32 %{{.*}} : !ptx.ptr<global> -> f32
// CHECK: %[[IM:.*]] = ptx.ld f32 %{{.*}} : !ptx.ptr<global> -> f32
// CHECK: %[[IM2:.*]] = ptx.mul rn f32 %[[IM]], %[[IM]] : f32
// CHECK: ptx.fma rn f32 %[[RE]], %[[RE]], %[[IM2]] : f32
// CHECK: ptx.sqrt rn f32
// PTX: .entry cnorm
func.func @cnorm(%x: memref<64x128x2xf32, #bulkred.scope<global>>, %n: memref<64xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64, 2 : i64] prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] pairs %x, %n : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The complex product of each column of a complex128 view (x.t() of a [32, 16]: strides [2, 32]
// in f64, the pair stride 1), in stride order; re and im stored side by side.
// EXPLAIN: grid_gather{{ +}}59{{ +}}form{{ +}}ok{{ +}}any{{ +}}pairs [32, 16] strides [32, 2] axes [0] pair stride 1 (stride order: axes [1, 0])
// CHECK-LABEL: func.func @cprod
// CHECK-COUNT-2: ptx.ld f64
// CHECK: ptx.sub rn f64
// CHECK: ptx.fma rn f64
// CHECK-COUNT-2: ptx.st f64
// PTX: .entry cprod
func.func @cprod(%x: memref<16x32x2xf64, strided<[2, 32, 1]>, #bulkred.scope<global>>, %p: memref<16x2xf64, #bulkred.scope<global>>) {
  bulkred.reduce prod grid axes [1 : i64] pairs %x, %p : memref<16x32x2xf64, strided<[2, 32, 1]>, #bulkred.scope<global>>, memref<16x2xf64, #bulkred.scope<global>>
  func.return
}
