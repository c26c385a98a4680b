// bulkred.reduce_list and bulkred.scale_list print as they parse (ops/tile/lists.py).
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s | bulkred-opt | filecheck %s

// CHECK: bulkred.reduce_list sum prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %table, %norms, %total scale %s : memref<1xf32, #bulkred.scope<global>> nonfinite %found : memref<1xf32, #bulkred.scope<global>> : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
func.func @unscale(%table: memref<?x4xi64, #bulkred.scope<global>>, %norms: memref<?xf32, #bulkred.scope<global>>, %total: memref<1xf32, #bulkred.scope<global>>, %s: memref<1xf32, #bulkred.scope<global>>, %found: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce_list sum prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %table, %norms, %total scale %s : memref<1xf32, #bulkred.scope<global>> nonfinite %found : memref<1xf32, #bulkred.scope<global>> : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// A static table (three tensors on two CTAs: 1 + 3 + 2 rows) and amax.
// CHECK: bulkred.reduce_list max prologue [#bulkred.map<abs>] %t, %a, %m : memref<6x4xi64, #bulkred.scope<global>>, memref<3xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
func.func @amax(%t: memref<6x4xi64, #bulkred.scope<global>>, %a: memref<3xf32, #bulkred.scope<global>>, %m: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce_list max prologue [#bulkred.map<abs>] %t, %a, %m : memref<6x4xi64, #bulkred.scope<global>>, memref<3xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// CHECK: bulkred.scale_list %t, %f : memref<?x4xi64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
func.func @scale(%t: memref<?x4xi64, #bulkred.scope<global>>, %f: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.scale_list %t, %f : memref<?x4xi64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
