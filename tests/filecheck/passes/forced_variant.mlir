// `variant "local"` forces the local variant where sm100_packed would win; the
// explain table says so. (Forced variants that fail: lower_tile_reductions_invalid.mlir.)
// RUN: bulkred-opt %s -p 'lower-tile-reductions{target=sm_100a explain=true}' | filecheck %s

// CHECK:      // dispatch of 'bulkred.reduce' at {{.*}}forced_variant.mlir:[[# @LINE + 18]]:3 on sm_100a
// CHECK:      //   sm100_packed priority 20: applies, not forced
// CHECK-NEXT: //   local priority 10: chosen (forced by 'variant')
// CHECK-NEXT: // forced by 'variant': local
// CHECK-NEXT: //   not for scope thread: {{.*}}
// CHECK-NEXT: // chosen: local
// CHECK:      // dispatch of 'bulkred.reduce' at {{.*}}forced_variant.mlir:[[# @LINE + 13]]:3 on sm_100a
// CHECK:      //   sm100_packed priority 20: chosen (forced by 'variant')
// CHECK-NEXT: //   local priority 10: applies, not forced
// CHECK-NEXT: // forced by 'variant': sm100_packed
// CHECK-NEXT: //   not for scope thread: {{.*}}
// CHECK-NEXT: // chosen: sm100_packed
// CHECK-LABEL: func.func @forced
// CHECK:         scf.for {{.*}} -> (f32)
// CHECK:           ptx.add rn f32
// CHECK:         ptx.add.f32x2 rn ftz
// CHECK-NOT:     bulkred.reduce
func.func @forced(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread variant "local" %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  bulkred.reduce sum thread variant "sm100_packed" %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
