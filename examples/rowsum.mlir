// The row sums of a 65536 x 4096 float32 matrix (1 GiB): the dispatch picks grid_rows.
//   bulkred-opt examples/rowsum.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/rowsum.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @rowsum(%x: memref<65536x4096xf32, #bulkred.scope<global>>, %out: memref<65536xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %out : memref<65536x4096xf32, #bulkred.scope<global>>, memref<65536xf32, #bulkred.scope<global>>
  func.return
}
