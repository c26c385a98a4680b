// bulkred.normalize_rows lowered (passes/variants/rows_*.py, docs/rows.md): the explain rows
// of each variant, the kernel's launch (a function of N and the element type), the vector
// loads and stores, and examples/rms_norm.mlir assembled for sm_90a and sm_100a.
// RUN: bulkred-opt %S/../../../examples/rms_norm.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=EXPLAIN
// RUN: bulkred-opt %S/../../../examples/rms_norm.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,SM90
// RUN: bulkred-opt %S/../../../examples/rms_norm.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,SM100
// RUN: bulkred-opt %s -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=WARP
// RUN: bulkred-opt %s -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=WARPPTX

// EXPLAIN: // dispatch of 'bulkred.normalize_rows' at {{.*}}rms_norm.mlir:9:3 on sm_90a
// EXPLAIN: //   rows_warp    30        row_length  FAIL     N <= 1024             N = 4096 (bfloat16, limit 1024)
// EXPLAIN: //   rows_cta     20        row_length  ok       N <= 16384            N = 4096 (bfloat16, limit 16384)
// EXPLAIN: // chosen: rows_cta
// EXPLAIN: // dispatch of 'bulkred.normalize_rows' at {{.*}}rms_norm.mlir:13:3 on sm_90a
// EXPLAIN: //   rows_cta     20        row_length  FAIL     N <= 16384            N = 50000 (float32, limit 16384)
// EXPLAIN: // chosen: rows_stream
// 128 threads hold a row of 4096 (8 vectors of 4 each); 16 CTAs per multiprocessor
// EXPLAIN: func.func @rms_norm({{.*}}) attributes {bulkred.launch = #bulkred.launch<grid = [2112], block = [128], cluster = [1]>, bulkred.align = [8 : i64, 8 : i64, 8 : i64, 1 : i64]}
// EXPLAIN-COUNT-8: ptx.ld.vec nc b16
// EXPLAIN: ptx.shfl.sync bfly
// EXPLAIN: ptx.bar.sync
// EXPLAIN: ptx.sqrt rn f32
// EXPLAIN: ptx.rcp rn f32
// EXPLAIN: ptx.ld.vec nc b16
// EXPLAIN: ptx.st.vec b16
// EXPLAIN: func.func @softmax({{.*}}) attributes {bulkred.launch = #bulkred.launch<grid = [64], block = [512], cluster = [1]>, bulkred.align = [16 : i64, 16 : i64]}

// SM90: .target sm_90a
// SM100: .target sm_100a
// PTX: .visible .entry rms_norm(
// PTX: .reqntid 128, 1, 1
// PTX: ld.global.nc.v4.b16
// PTX: cvt.f32.bf16
// PTX: shfl.sync.bfly.b32
// PTX: bar.sync 0;
// PTX: cvt.rn.bf16.f32
// PTX: st.global.v4.b16
// PTX: st.global.f32
// PTX: .visible .entry softmax(
// PTX: .reqntid 512, 1, 1
// PTX: ld.global.nc.v4.f32
// PTX: ex2.approx.f32
// PTX: st.global.v4.f32

// Short rows: a warp per row, 8 rows per CTA of 256 threads, no shared memory.
// WARP: rows_warp    priority 30: chosen
// WARP: func.func @short(%x: memref<100x640xf16, #bulkred.scope<global>>, %y: memref<100x640xf16, #bulkred.scope<global>>, %mean: memref<100xf32, #bulkred.scope<global>>, %rstd: memref<100xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [13], block = [256], cluster = [1]>
// WARP-NOT: ptx.bar.sync
// WARP: ptx.shfl.sync bfly
// WARP-NOT: ptx.bar.sync
// WARP: func.return
// WARPPTX: .visible .entry short(
// WARPPTX-NOT: .shared
// WARPPTX: ld.global.nc.v4.b16
// WARPPTX: st.global.v4.b16
func.func @short(%x: memref<100x640xf16, #bulkred.scope<global>>, %y: memref<100x640xf16, #bulkred.scope<global>>, %mean: memref<100xf32, #bulkred.scope<global>>, %rstd: memref<100xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows layer_norm %x, %y eps 1.0e-05 : f32 mean %mean : memref<100xf32, #bulkred.scope<global>> rstd %rstd : memref<100xf32, #bulkred.scope<global>> : memref<100x640xf16, #bulkred.scope<global>>, memref<100x640xf16, #bulkred.scope<global>>
  func.return
}
