// Complex numbers in bulkred.reduce: `pairs` (ops/tile/reduce.py, check_pairs; docs/fused.md,
// "Complex numbers"): src's last axis of extent 2 holds (re, im). Each form prints as written,
// parses back from its own output and round-trips through the generic form.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// |z| summed (vector_norm ord 1), z != 0 counted, the complex product (the pair axis kept),
// a nansum and a nanmean (complex: the pair axis kept), the variance with its complex mean (aux:
// dst's shape and the pair).
// CHECK-LABEL: func.func @pairs
// CHECK: bulkred.reduce sum grid axes [1 : i64, 2 : i64] prologue [#bulkred.map<abs>] pairs %{{.*}}, %{{.*}} : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
// CHECK: bulkred.reduce sum grid prologue [#bulkred.map<nonzero>] pairs %{{.*}}, %{{.*}} : memref<64x128x2xf64, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
// CHECK: bulkred.reduce prod grid axes [1 : i64] pairs %{{.*}}, %{{.*}} : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64x2xf32, #bulkred.scope<global>>
// CHECK: bulkred.reduce sum grid axes [0 : i64] prologue [#bulkred.map<nan_zero>] pairs %{{.*}}, %{{.*}} : memref<64x128x2xf32, #bulkred.scope<global>>, memref<128x2xf32, #bulkred.scope<global>>
// CHECK: bulkred.reduce nanmean grid axes [1 : i64] pairs %{{.*}}, %{{.*}} : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64x2xf32, #bulkred.scope<global>>
// CHECK: bulkred.reduce logsumexp grid axes [1 : i64] pairs %{{.*}}, %{{.*}} : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64x2xf32, #bulkred.scope<global>>
// CHECK: bulkred.reduce var grid axes [0 : i64, 2 : i64] correction 1 : i64 pairs %{{.*}}, %{{.*}} aux %{{.*}} : memref<128x2xf32, #bulkred.scope<global>> : memref<64x128x2xf32, #bulkred.scope<global>>, memref<128xf32, #bulkred.scope<global>>
// GENERIC-LABEL: sym_name = "pairs"
// GENERIC: "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind sum>, scope = #bulkred<exec_scope grid>, axes = [1 : i64, 2 : i64], prologue = [#bulkred.map<abs>], pairs}>
func.func @pairs(%x: memref<64x128x2xf32, #bulkred.scope<global>>, %d: memref<64x128x2xf64, #bulkred.scope<global>>,
                 %n: memref<64xf32, #bulkred.scope<global>>, %c: memref<1xi64, #bulkred.scope<global>>,
                 %p: memref<64x2xf32, #bulkred.scope<global>>, %v: memref<128xf32, #bulkred.scope<global>>,
                 %m: memref<128x2xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64, 2 : i64] prologue [#bulkred.map<abs>] pairs %x, %n : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<global>>
  bulkred.reduce sum grid prologue [#bulkred.map<nonzero>] pairs %d, %c : memref<64x128x2xf64, #bulkred.scope<global>>, memref<1xi64, #bulkred.scope<global>>
  bulkred.reduce prod grid axes [1 : i64] pairs %x, %p : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64x2xf32, #bulkred.scope<global>>
  bulkred.reduce sum grid axes [0 : i64] prologue [#bulkred.map<nan_zero>] pairs %x, %m : memref<64x128x2xf32, #bulkred.scope<global>>, memref<128x2xf32, #bulkred.scope<global>>
  bulkred.reduce nanmean grid axes [1 : i64] pairs %x, %p : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64x2xf32, #bulkred.scope<global>>
  bulkred.reduce logsumexp grid axes [1 : i64] pairs %x, %p : memref<64x128x2xf32, #bulkred.scope<global>>, memref<64x2xf32, #bulkred.scope<global>>
  bulkred.reduce var grid axes [0 : i64, 2 : i64] correction 1 : i64 pairs %x, %v aux %m : memref<128x2xf32, #bulkred.scope<global>> : memref<64x128x2xf32, #bulkred.scope<global>>, memref<128xf32, #bulkred.scope<global>>
  func.return
}
