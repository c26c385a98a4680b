// The variance (correction 1: the unbiased estimate) and the mean of each column of a
// 65536 x 1024 float32 matrix, over axis 0 (torch's torch.var_mean(x, dim=0)): %var
// receives the variance and the `aux` output %mean the mean, both from one read of the
// data (Welford's update per element, Chan's combination of the partial states). The
// dispatch picks grid_split_det (row splits; the last CTA of each column tile combines
// the partial states in a fixed order).
//   bulkred-opt examples/var_mean.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/var_mean.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t ptx
func.func @var_mean(%x: memref<65536x1024xf32, #bulkred.scope<global>>, %var: memref<1024xf32, #bulkred.scope<global>>, %mean: memref<1024xf32, #bulkred.scope<global>>) {
  bulkred.reduce var grid axes [0 : i64] correction 1 : i64 %x, %var aux %mean : memref<1024xf32, #bulkred.scope<global>> : memref<65536x1024xf32, #bulkred.scope<global>>, memref<1024xf32, #bulkred.scope<global>>
  func.return
}
