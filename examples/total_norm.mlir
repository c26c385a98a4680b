// The gradient norm of a whole model in one launch (torch.nn.utils.get_total_norm):
// bulkred.reduce_list reads the list's descriptor table (address, element count and
// element type of each tensor, and each CTA's chunk of the list's bytes: docs/foreach.md),
// squares each element as it is loaded, writes each tensor's 2-norm into %norms and the
// norm of all of them into %total. Then bulkred.scale_list clips: every element times
// min(max_norm / (total + 1e-6), 1), in place, nothing written when that is 1.
//   bulkred-opt examples/total_norm.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/total_norm.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t ptx
func.func @total_norm(%table: memref<?x4xi64, #bulkred.scope<global>>, %norms: memref<?xf32, #bulkred.scope<global>>, %total: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce_list sum prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %table, %norms, %total : memref<?x4xi64, #bulkred.scope<global>>, memref<?xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
func.func @clip(%table: memref<?x4xi64, #bulkred.scope<global>>, %max_norm: memref<1xf32, #bulkred.scope<global>>, %total: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.scale_list %table, %max_norm clip_by %total : memref<1xf32, #bulkred.scope<global>> : memref<?x4xi64, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
