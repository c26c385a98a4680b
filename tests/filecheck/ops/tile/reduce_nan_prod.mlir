// bulkred.reduce's NaN option and the prod kind (ops/tile/reduce.py): `ignore_nan` prints after
// `deterministic` and round-trips through the generic form; prod takes every element type.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @nan_and_prod
// CHECK: bulkred.reduce max thread ignore_nan %{{.*}}, %{{.*}} : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
// GENERIC: "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind max>, scope = #bulkred<exec_scope thread>, ignore_nan}>
// CHECK: bulkred.reduce min warp accum ignore_nan %{{.*}}, %{{.*}} : memref<1xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
// CHECK: bulkred.reduce max thread %{{.*}}, %{{.*}} : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
// CHECK: bulkred.reduce prod thread %{{.*}}, %{{.*}} : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
// GENERIC: "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind prod>, scope = #bulkred<exec_scope thread>}>
// CHECK: bulkred.reduce prod thread %{{.*}}, %{{.*}} : memref<8xi16, #bulkred.scope<local>>, memref<1xi16, #bulkred.scope<local>>
func.func @nan_and_prod(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>,
                        %h: memref<1xf16, #bulkred.scope<local>>, %oh: memref<1xf16, #bulkred.scope<local>>,
                        %i: memref<8xi16, #bulkred.scope<local>>, %oi: memref<1xi16, #bulkred.scope<local>>)
    attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [32], cluster = [1]>} {
  bulkred.reduce max thread ignore_nan %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce min warp accum ignore_nan %h, %oh : memref<1xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  bulkred.reduce max thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce prod thread %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce prod thread %i, %oi : memref<8xi16, #bulkred.scope<local>>, memref<1xi16, #bulkred.scope<local>>
  func.return
}

// -----

// CHECK-LABEL: func.func @grid_max_ignore_nan
// CHECK: bulkred.reduce max grid deterministic ignore_nan axes [0 : i64] %{{.*}}, %{{.*}}
func.func @grid_max_ignore_nan(%x: memref<64x32xf32, #bulkred.scope<global>>, %y: memref<32xf32, #bulkred.scope<global>>) {
  bulkred.reduce max grid deterministic ignore_nan axes [0 : i64] %x, %y : memref<64x32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<global>>
  func.return
}
