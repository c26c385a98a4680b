// The argmax over the last axis of a 4096 x 4096 float32 matrix, with the largest values
// (torch's torch.max(x, dim=1): values and indices): %idx (int64) receives the index of
// the first largest element of each row, NaN counting as the largest, and the `aux`
// output %val its value. The state is a (value, index) pair; the dispatch picks grid_rows.
//   bulkred-opt examples/argmax_rows.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/argmax_rows.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @argmax_rows(%x: memref<4096x4096xf32, #bulkred.scope<global>>, %idx: memref<4096xi64, #bulkred.scope<global>>, %val: memref<4096xf32, #bulkred.scope<global>>) {
  bulkred.reduce argmax grid axes [1 : i64] %x, %idx aux %val : memref<4096xf32, #bulkred.scope<global>> : memref<4096x4096xf32, #bulkred.scope<global>>, memref<4096xi64, #bulkred.scope<global>>
  func.return
}
