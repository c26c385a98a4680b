// The L2 norm of each row of a 4096 x 4096 float32 matrix (torch's
// torch.linalg.vector_norm(x, dim=1)): one grid-scope bulkred.reduce, a sum whose prologue
// squares each element as it is loaded and whose epilogue takes the square root of each
// row's sum. The dispatch picks grid_rows (one warp per row), the squares fused into its
// streaming loop: one read of the matrix.
//   bulkred-opt examples/fused_norm.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/fused_norm.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @row_norm(%x: memref<4096x4096xf32, #bulkred.scope<global>>, %out: memref<4096xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] prologue [#bulkred.map<square>] epilogue [#bulkred.map<sqrt>] %x, %out : memref<4096x4096xf32, #bulkred.scope<global>>, memref<4096xf32, #bulkred.scope<global>>
  func.return
}
