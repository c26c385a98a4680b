// The sum of 2^28 float32 values (1 GiB) into one: the dispatch picks grid_full.
//   bulkred-opt examples/full_sum.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/full_sum.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @full_sum(%x: memref<268435456xf32, #bulkred.scope<global>>, %out: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %x, %out : memref<268435456xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}
