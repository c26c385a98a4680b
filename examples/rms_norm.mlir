// RMSNorm of 4096 rows of 4096 bfloat16 values (a Llama-sized hidden state), with a
// bfloat16 weight and eps 1e-6, the rstd of each row stored for the backward; and the
// softmax of 64 padded rows of 50,000 float32 logits (row stride 50,176): one
// bulkred.normalize_rows each (docs/rows.md). Each row is read once and written once:
// rows_cta holds a row of 4096 in the registers of one CTA, rows_cluster a row of 50,000
// in those of a cluster of 8 CTAs, which combine their partials through distributed
// shared memory.
//   bulkred-opt examples/rms_norm.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}'
//   bulkred-opt examples/rms_norm.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t ptx
func.func @rms_norm(%x: memref<4096x4096xbf16, #bulkred.scope<global>>, %y: memref<4096x4096xbf16, #bulkred.scope<global>>, %weight: memref<4096xbf16, #bulkred.scope<global>>, %rstd: memref<4096xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows rms_norm %x, %y weight %weight : memref<4096xbf16, #bulkred.scope<global>> eps 1.0e-06 : f32 rstd %rstd : memref<4096xf32, #bulkred.scope<global>> : memref<4096x4096xbf16, #bulkred.scope<global>>, memref<4096x4096xbf16, #bulkred.scope<global>>
  func.return
}
func.func @softmax(%x: memref<64x50000xf32, strided<[50176, 1]>, #bulkred.scope<global>>, %y: memref<64x50000xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows softmax %x, %y : memref<64x50000xf32, strided<[50176, 1]>, #bulkred.scope<global>>, memref<64x50000xf32, #bulkred.scope<global>>
  func.return
}
