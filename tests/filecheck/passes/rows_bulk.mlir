// bulkred.normalize_rows lowered by rows_bulk (passes/variants/rows_bulk.py, docs/rows.md):
// where CHOSEN has the row (bfloat16 softmax of 131072: clusters of 4 CTAs of 512 threads,
// a 64 KiB slice each, a cluster per row, .minnctapersm 2), the slice copied into shared
// memory by cp.async.bulk on an mbarrier, the (max, sum) pushed to the peer by st.async;
// assembled for sm_90a and sm_100a. A row of odd bytes per CTA goes to the others.
// RUN: bulkred-opt %s -p 'lower-tile-reductions{target=sm_90a explain=true}' | filecheck %s --check-prefix=EXPLAIN
// RUN: bulkred-opt %s -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,SM90
// RUN: bulkred-opt %s -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=PTX,SM100

// EXPLAIN: rows_bulk     25        slices          ok       whole 16-byte chunks per CTA, 16-byte row strides{{ +}}N = 131072 (bfloat16): 4 CTAs of 512 threads, 65536 bytes each
// EXPLAIN: rows_bulk     25        measured        ok       the rows measured faster (rows_bulk.CHOSEN){{ +}}softmax, bfloat16, N = 131072
// EXPLAIN: chosen: rows_bulk
// (the second function's dispatch, printed before the functions)
// EXPLAIN: rows_bulk     25        slices          FAIL     whole 16-byte chunks per CTA, 16-byte row strides{{ +}}N = 65540 (bfloat16)
// EXPLAIN: chosen: rows_stream
// a cluster per row: 64 rows, 256 CTAs
// EXPLAIN: func.func @softmax({{.*}}) attributes {bulkred.launch = #bulkred.launch<grid = [256], block = [512], cluster = [4]>, bulkred.min_ctas_per_sm = 2 : i64, bulkred.align = [16 : i64, 8 : i64]}
// EXPLAIN: ptx.mbarrier.init
// EXPLAIN: ptx.fence.mbarrier_init.release.cluster
// EXPLAIN: ptx.fence.proxy.async space "shared::cta"
// EXPLAIN: ptx.mbarrier.arrive.expect_tx
// EXPLAIN: ptx.cp.async.bulk.shared_cta.global
// EXPLAIN: ptx.mbarrier.try_wait.parity
// EXPLAIN: ptx.ld.vec b16 {{.*}} : !ptx.ptr<shared::cta>
// EXPLAIN: ptx.st.async f32
// EXPLAIN: ptx.st.vec b16

// SM90: .target sm_90a
// SM100: .target sm_100a
// PTX: .visible .entry softmax(
// PTX: .reqntid 512, 1, 1
// PTX: .minnctapersm 2
// PTX: .reqnctapercluster 4, 1, 1
// PTX: cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX: ld.shared::cta.v4.b16
// PTX: st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32
// PTX: ex2.approx.f32
// PTX: st.global.v4.b16
func.func @softmax(%x: memref<64x131072xbf16, #bulkred.scope<global>>, %y: memref<64x131072xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows softmax %x, %y : memref<64x131072xbf16, #bulkred.scope<global>>, memref<64x131072xbf16, #bulkred.scope<global>>
  func.return
}

func.func @odd(%x: memref<4x65540xbf16, #bulkred.scope<global>>, %y: memref<4x65540xbf16, #bulkred.scope<global>>) {
  bulkred.normalize_rows softmax %x, %y : memref<4x65540xbf16, #bulkred.scope<global>>, memref<4x65540xbf16, #bulkred.scope<global>>
  func.return
}
