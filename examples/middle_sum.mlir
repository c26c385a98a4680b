// The sums over the middle axis of a 64 x 1000 x 256 float32 tensor (torch's
// x.sum(dim=1)): the canonical form is middle [64, 1000, 256], and the dispatch picks
// grid_middle (a deterministic split reduction per block of 1000 x 256).
//   bulkred-opt examples/middle_sum.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/middle_sum.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @middle_sum(%x: memref<64x1000x256xf32, #bulkred.scope<global>>, %out: memref<64x256xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %out : memref<64x1000x256xf32, #bulkred.scope<global>>, memref<64x256xf32, #bulkred.scope<global>>
  func.return
}
