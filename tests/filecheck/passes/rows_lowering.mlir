// bulkred.normalize_rows lowered (passes/variants/rows_*.py, docs/rows.md): the explain rows
// of each variant, the kernel's launch (a function of N and the element type), the vector
// loads and stores, and examples/rms_norm.mlir assembled for sm_90a and sm_100a.
// RUN: bulkred-opt %S/../../../examples/rms_norm.mlir -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=EXPLAIN
// RUN: bulkred-opt %S/../../../examples/rms_norm.mlir -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,SM90
// RUN: bulkred-opt %S/../../../examples/rms_norm.mlir -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,SM100
// RUN: bulkred-opt %s -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=WARP
// RUN: bulkred-opt %s -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=WARPPTX

// EXPLAIN: // dispatch of 'bulkred.normalize_rows' at {{.*}}rms_norm.mlir:11:3 on sm_90a
// EXPLAIN: //   rows_warp     30        row_length      FAIL     N <= 1024{{.*}}N = 4096 (bfloat16, limit 1024)
// EXPLAIN: //   rows_cta      20        row_length      ok       N <= 16384{{.*}}N = 4096 (bfloat16, limit 16384)
// EXPLAIN: // chosen: rows_cta
// EXPLAIN: // dispatch of 'bulkred.normalize_rows' at {{.*}}rms_norm.mlir:15:3 on sm_90a
// EXPLAIN: //   rows_cta      20        row_length      FAIL     N <= 16384{{.*}}N = 50000 (float32, limit 16384)
// EXPLAIN: //   rows_cluster  15        row_in_cluster  ok       <= 32 values per thread in 16 CTAs of 512{{ +}}N = 50000: 8 CTAs of 256 threads, 28 values each
// EXPLAIN: // chosen: rows_cluster
// 128 threads hold a row of 4096 (4 vectors of 8 each, 16 bytes: rows_common.WIDE_BF16_MEASURED);
// a CTA a row in a grid of M (rows_cta.CTAS_PER_SM_MEASURED: the hardware refills the
// multiprocessors, as Quack's grid), both measured for bfloat16 rms_norm at 4096 on an H200
// EXPLAIN: func.func @rms_norm({{.*}}) attributes {bulkred.launch = #bulkred.launch<grid = [4096], block = [128], cluster = [1]>, bulkred.align = [16 : i64, 16 : i64, 16 : i64, 1 : i64]}
// unpipelined (rows_common.FORWARD_MEASURED's cell): the weight's 4 vectors loaded before the
// loop over rows, held in words for every row (rows_common.AFFINE_HELD), the row's 4 in the
// loop; the CTA's sum in one barrier (rows_common.CTA_ONE_BARRIER)
// EXPLAIN-COUNT-4: ptx.ld.vec nc b32
// EXPLAIN: scf.for
// EXPLAIN-COUNT-4: ptx.ld.vec nc b32
// EXPLAIN: ptx.shfl.sync bfly
// EXPLAIN: ptx.bar.sync
// EXPLAIN-NOT: ptx.bar.sync
// EXPLAIN: ptx.sqrt rn f32
// EXPLAIN: ptx.rcp rn f32
// EXPLAIN-NOT: ptx.ld.vec
// EXPLAIN: ptx.st.vec b32
// a cluster of 8 CTAs per row: 64 rows, 512 CTAs
// EXPLAIN: func.func @softmax({{.*}}) attributes {bulkred.launch = #bulkred.launch<grid = [512], block = [256], cluster = [8]>, bulkred.align = [16 : i64, 16 : i64]}
// the push exchange: the mbarriers set up before the rows loop (two per statistic, up to
// 4 statistics), then per row thread 0 announces the bytes, lanes 0-7 store the CTA's
// (max, sum) into slot `rank` of CTA `lane`, every thread waits and reads its own 8 slots
// EXPLAIN: ptx.mov.sreg cluster_ctarank
// EXPLAIN-COUNT-8: ptx.mbarrier.init
// EXPLAIN: ptx.fence.mbarrier_init.release.cluster
// EXPLAIN-NEXT: ptx.barrier.cluster.arrive sem release
// EXPLAIN-NEXT: ptx.barrier.cluster.wait acquire
// EXPLAIN-NOT: ptx.barrier.cluster
// EXPLAIN: ptx.mbarrier.arrive.expect_tx
// EXPLAIN: ptx.mapa %{{.*}}, %tid_x
// EXPLAIN-NEXT: ptx.mapa %{{.*}}, %tid_x
// EXPLAIN-NEXT: ptx.st.async f32 %{{.*}}, %{{.*}}, %{{.*}} mbar %{{.*}} : !ptx.ptr<shared::cluster>, !ptx.ptr<shared::cluster>, f32, f32
// EXPLAIN: ptx.mbarrier.try_wait.parity
// EXPLAIN-COUNT-16: ptx.ld f32 %{{.*}} : !ptx.ptr<shared::cta> -> f32
// EXPLAIN-NOT: ptx.ld f32 {{.*}}shared::cluster
// EXPLAIN: ptx.barrier.cluster.arrive sem release

// SM90: .target sm_90a
// SM100: .target sm_100a
// PTX: .visible .entry rms_norm(
// PTX: .reqntid 128, 1, 1
// PTX: ld.global.nc.v4.b32
// PTX: shfl.sync.bfly.b32
// PTX: bar.sync 0;
// PTX-NOT: bar.sync
// PTX-NOT: ld.global.nc.v4.b16
// PTX: rcp.rn.f32
// PTX: mov.b32 %f{{[0-9]+}}, %r{{[0-9]+}};
// PTX: cvt.rn.bf16.f32
// PTX: st.global.v4.b32
// PTX: st.global.f32
// PTX: .visible .entry softmax(
// PTX: .reqntid 256, 1, 1
// PTX: .reqnctapercluster 8, 1, 1
// PTX: .explicitcluster
// PTX: mbarrier.init.shared::cta.b64
// PTX: fence.mbarrier_init.release.cluster;
// PTX: barrier.cluster.arrive.release;
// PTX: barrier.cluster.wait.acquire;
// PTX: ld.global.nc.v4.f32
// PTX: mbarrier.arrive.expect_tx.shared::cta.b64 _,
// PTX: mapa.shared::cluster.u32
// PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: ex2.approx.f32
// PTX: st.global.v4.f32

// Short rows: a warp per row, 8 rows per CTA of 256 threads, no shared memory.
// WARP: rows_warp     priority 30: chosen
// WARP: rows_cluster  15        row_in_cluster  FAIL     <= 32 values per thread in 16 CTAs of 512{{ +}}N = 300000: 16 CTAs of 512 threads, 40 values each
// WARP: rows_cluster  priority 15: rejected: row_in_cluster, measured
// WARP: rows_stream   priority 10: chosen
// WARP: rows_cluster{{ +}}15{{ +}}measured{{ +}}FAIL{{.*}}cross_entropy, float32, N = 65536
// WARP: rows_stream{{ +}}priority 10: chosen
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

// Rows longer than a cluster holds: a CTA of 512 threads per row, the row read twice
// (its explain table is printed with the one above, ahead of the IR).
// WARP: func.func @long({{.*}}) attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [512], cluster = [1]>
// WARP: scf.for
// WARP: ptx.ld.vec nc b16
// WARP: ptx.ex2 approx f32
// WARPPTX: .visible .entry long(
// WARPPTX: ld.global.nc.v4.b16
// WARPPTX: st.global.v4.b16
func.func @long(%x: memref<2x300000xbf16, #bulkred.scope<global>>, %y: memref<2x300000xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows log_softmax %x, %y : memref<2x300000xbf16, #bulkred.scope<global>>, memref<2x300000xbf16, #bulkred.scope<global>>
  func.return
}

// cross_entropy in a cluster (forced, at rows_cta's longest rows: the dispatch sends float32
// rows past them to rows_stream, which reads them once, rows_cluster.LOSS_ROWS): the target
// read while the row's loads are in flight, then rank 0's thread 0 writes the loss and the
// lse (and.pred of the two conditions), no y.
// WARPPTX: .visible .entry ce(
// WARPPTX: .reqnctapercluster {{[0-9]+}}, 1, 1
// WARPPTX: ld.global.nc.v4.f32
// WARPPTX: ld.global.{{[bsu]}}64
// WARPPTX: and.pred
// WARPPTX: st.global.f32
func.func @ce(%x: memref<16x16384xf32, #bulkred.scope<global>>, %t: memref<16xi64, #bulkred.scope<global>>, %loss: memref<16xf32, #bulkred.scope<global>>, %lse: memref<16xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows cross_entropy variant "rows_cluster" %x target %t : memref<16xi64, #bulkred.scope<global>> loss %loss : memref<16xf32, #bulkred.scope<global>> lse %lse : memref<16xf32, #bulkred.scope<global>> : memref<16x16384xf32, #bulkred.scope<global>>
  func.return
}

// Left to the dispatch, float32 rows of 65536 go to rows_stream: one CTA a row, no cluster
// (its explain rows: WARP, above).
// WARPPTX-LABEL: .visible .entry ce_dispatch(
// WARPPTX-NOT: .reqnctapercluster
func.func @ce_dispatch(%x: memref<16x65536xf32, #bulkred.scope<global>>, %t: memref<16xi64, #bulkred.scope<global>>, %loss: memref<16xf32, #bulkred.scope<global>>, %lse: memref<16xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows cross_entropy %x target %t : memref<16xi64, #bulkred.scope<global>> loss %loss : memref<16xf32, #bulkred.scope<global>> lse %lse : memref<16xf32, #bulkred.scope<global>> : memref<16x65536xf32, #bulkred.scope<global>>
  func.return
}

// A dynamic M: one kernel for every M. The lowering appends the i64 parameter %m (the
// launcher passes x's dimension 0, which y and the statistics share: bulkred.dims) and
// the rule of the grid (bulkred.grid_rows = [rows per unit, units at most]: the launch
// takes min(units, ceil(M / rows)) clusters; #bulkred.launch's grid is the largest); the
// rows' loop strides by the launched grid (%nctaid.x / cluster).
// WARP: func.func @dynamic_m(%x: memref<?x65536xf32, #bulkred.scope<global>>, %y: memref<?x65536xf32, #bulkred.scope<global>>, %rstd: memref<?xf32, #bulkred.scope<global>>, %m: i64) attributes {bulkred.launch = #bulkred.launch<grid = [1056], block = [256], cluster = [8]>, bulkred.dims = {{\[\[\[}}0 : i64, 0 : i64], [1 : i64, 0 : i64], [2 : i64, 0 : i64]]], {{.*}}bulkred.grid_rows = [1 : i64, 132 : i64]
// WARP: ptx.mov.sreg nctaid.x
// WARP: scf.for {{.*}} to %m step
// WARPPTX: .visible .entry dynamic_m(
// WARPPTX: .param .u64 dynamic_m_param_3
// WARPPTX: mov.u32 {{.*}}%nctaid.x
func.func @dynamic_m(%x: memref<?x65536xf32, #bulkred.scope<global>>, %y: memref<?x65536xf32, #bulkred.scope<global>>, %rstd: memref<?xf32, #bulkred.scope<global>>) {
  bulkred.normalize_rows rms_norm %x, %y eps 1.0e-05 : f32 rstd %rstd : memref<?xf32, #bulkred.scope<global>> : memref<?x65536xf32, #bulkred.scope<global>>, memref<?x65536xf32, #bulkred.scope<global>>
  func.return
}
