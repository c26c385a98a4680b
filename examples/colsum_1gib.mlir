// The column sum of a 65536 x 4096 float32 matrix (1 GiB) into 4096 columns: one
// grid-scope bulkred.reduce is the whole kernel. The dispatch picks grid_split_bulk
// (row splits, each CTA's column tile added into %out with cp.reduce.async.bulk) and
// writes the launch shape; add `deterministic` for grid_split_det.
//
//   bulkred-opt examples/colsum_1gib.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/colsum_1gib.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @colsum(%x: memref<65536x4096xf32, #bulkred.scope<global>>, %out: memref<4096xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64] %x, %out : memref<65536x4096xf32, #bulkred.scope<global>>, memref<4096xf32, #bulkred.scope<global>>
  func.return
}
