// bulkred.normalize_rows' backward kinds and rows_bulk_backward (passes/variants/rows_bulk_backward.py,
// docs/rows_bench_bwd_h200.md): its explain rows. Taken where rows_bulk_backward.CHOSEN has the row
// (measured faster on an H200: bfloat16 past 131072, float32 65536 to 262144). Its
// configuration from N and the type: layer_norm_backward bfloat16 of 262144, clusters of 16 CTAs of
// 512 threads, 8 vectors of 4 each per thread (64 column sums in registers), 4 slots of 32 KiB and the
// weight's slice (32 KiB) in shared memory;
// float32 rms_norm of 262144 (no weight), 64 KiB slices: 2 slots (dy in registers: rows_bulk_backward.SETTINGS). A row of odd bytes per CTA fails its "slices" row.
// RUN: bulkred-opt %s -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=EXPLAIN

// EXPLAIN: rows_bulk_backward  26        kind            ok       softmax_backward, log_softmax_backward, rms_norm_backward, layer_norm_backward  layer_norm_backward
// EXPLAIN: rows_bulk_backward  26        slices          ok       whole 16-byte chunks per CTA, 16-byte row strides, <= 64 column sums a thread   N = 262144 (bfloat16): 16 CTAs of 512 threads, 8 vectors each, 4 slices of 32768 bytes, the weight's 32768
// EXPLAIN: rows_bulk_backward  26        measured        ok       the rows measured faster (rows_bulk_backward.CHOSEN)                            layer_norm_backward, bfloat16, N = 262144
// EXPLAIN: chosen: rows_bulk_backward
// EXPLAIN: rows_bulk_backward  26        slices          ok       {{.*}}N = 262144 (float32): 16 CTAs of 512 threads, 8 vectors each, 2 slices of 65536 bytes
// EXPLAIN: rows_bulk_backward  26        measured        ok
// EXPLAIN: chosen: rows_bulk_backward
// EXPLAIN: rows_bulk_backward  26        slices          FAIL     {{.*}}N = 65540 (bfloat16): 8 CTAs of 512 threads, 4 vectors each, 4 slices of 16385 bytes
// EXPLAIN: rows_bulk_backward  priority 26: rejected: slices, measured
// EXPLAIN: chosen: rows_stream

func.func @layer_norm_backward(%x: memref<8x262144xbf16, #bulkred.scope<global>>, %y: memref<8x262144xbf16, #bulkred.scope<global>>, %grad: memref<8x262144xbf16, #bulkred.scope<global>>, %weight: memref<262144xbf16, #bulkred.scope<global>>, %mean: memref<8xf32, #bulkred.scope<global>>, %rstd: memref<8xf32, #bulkred.scope<global>>, %dweight: memref<262144xbf16, #bulkred.scope<global>>, %dbias: memref<262144xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows layer_norm_backward %x, %y grad %grad : memref<8x262144xbf16, #bulkred.scope<global>> weight %weight : memref<262144xbf16, #bulkred.scope<global>> mean %mean : memref<8xf32, #bulkred.scope<global>> rstd %rstd : memref<8xf32, #bulkred.scope<global>> dweight %dweight : memref<262144xbf16, #bulkred.scope<global>> dbias %dbias : memref<262144xbf16, #bulkred.scope<global>> : memref<8x262144xbf16, #bulkred.scope<global>>, memref<8x262144xbf16, #bulkred.scope<global>>
  func.return
}

func.func @rms_norm_backward(%x: memref<8x262144xf32, #bulkred.scope<global>>, %y: memref<8x262144xf32, #bulkred.scope<global>>, %grad: memref<8x262144xf32, #bulkred.scope<global>>, %rstd: memref<8xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows rms_norm_backward %x, %y grad %grad : memref<8x262144xf32, #bulkred.scope<global>> rstd %rstd : memref<8xf32, #bulkred.scope<global>> : memref<8x262144xf32, #bulkred.scope<global>>, memref<8x262144xf32, #bulkred.scope<global>>
  func.return
}

func.func @odd(%x: memref<8x65540xbf16, #bulkred.scope<global>>, %y: memref<8x65540xbf16, #bulkred.scope<global>>, %grad: memref<8x65540xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows softmax_backward %x, %y grad %grad : memref<8x65540xbf16, #bulkred.scope<global>> : memref<8x65540xbf16, #bulkred.scope<global>>, memref<8x65540xbf16, #bulkred.scope<global>>
  func.return
}
