// shfl.sync (ops/ptx/warp.py): custom and generic syntax round trip, and the PTX line.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -t ptx | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @shfl_f32
// GENERIC-LABEL: sym_name = "shfl_f32"
// PTX-LABEL: .visible .entry shfl_f32(
func.func @shfl_f32(%x: f32, %b: i32, %c: i32, %m: i32) {
  // CHECK: %{{.*}} = ptx.shfl.sync bfly %x, %b, %c, %m : f32
  // GENERIC: "ptx.shfl.sync"(%x, %b, %c, %m) <{mode = #ptx<shfl_mode bfly>}> : (f32, i32, i32, i32) -> f32
  // PTX: shfl.sync.bfly.b32 %f{{[0-9]+}}, %f{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
  %0 = ptx.shfl.sync bfly %x, %b, %c, %m : f32
  // CHECK: ptx.shfl.sync down %x
  // PTX: shfl.sync.down.b32
  %1 = ptx.shfl.sync down %x, %b, %c, %m : f32
  // CHECK: ptx.shfl.sync up %x
  // PTX: shfl.sync.up.b32
  %2 = ptx.shfl.sync up %x, %b, %c, %m : f32
  // CHECK: ptx.shfl.sync idx %x
  // PTX: shfl.sync.idx.b32
  %3 = ptx.shfl.sync idx %x, %b, %c, %m : f32
  func.return
}

// CHECK-LABEL: func.func @shfl_i32
// PTX-LABEL: .visible .entry shfl_i32(
func.func @shfl_i32(%x: i32, %m: i32) {
  // CHECK: %{{.*}} = ptx.shfl.sync bfly %x, %x, %x, %m : i32
  // PTX: shfl.sync.bfly.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}};
  %0 = ptx.shfl.sync bfly %x, %x, %x, %m : i32
  func.return
}
