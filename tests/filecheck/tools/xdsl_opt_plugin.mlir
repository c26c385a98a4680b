// The package registers itself as an xDSL plugin (entry point xdsl.universe):
// plain xdsl-opt parses both dialects and runs our passes.
// RUN: xdsl-opt %s -p 'check-target{target=sm_100a}' | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @plugin
// GENERIC: "bulkred.reduce"
// GENERIC: "ptx.redux.sync"
func.func @plugin(%a: memref<16xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>, %x: f32, %m: i32) {
  // CHECK: bulkred.reduce max thread %{{.*}}, %{{.*}}
  bulkred.reduce max thread %a, %b : memref<16xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // CHECK: ptx.redux.sync max f32
  %0 = ptx.redux.sync max f32 %x, %m : f32
  func.return
}
