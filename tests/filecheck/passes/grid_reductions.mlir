// Grid-scope reductions: one bulkred.reduce becomes a whole kernel. The dispatch picks
// the variant from the form (full, rows, columns), the type and the options, and
// writes the launch shape, the workspace and the outputs to zero into the kernel.
// RUN: bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_90a}' | filecheck %s --check-prefix=IR
// RUN: bulkred-opt %s --split-input-file --verify-each -p 'lower-tile-reductions{target=sm_90a explain=true},legalize-for-target{target=sm_90a},lower-bulk-ops,lower-to-ptx{target=sm_90a},check-target{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefixes=EXPLAIN,PTX

// A full f32 sum: grid_full; 16-byte loads, a butterfly per warp, a ticket per CTA.
// EXPLAIN:     // chosen: grid_full
// IR-LABEL:    func.func @full_sum(
// IR-SAME:     %workspace: memref<48xi8, #bulkred.scope<global>>)
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [8], block = [512], cluster = [1]>, bulkred.workspace = 48 : i64
// x is read with 16-byte vector loads: the launcher refuses a misaligned x (bulkred.align).
// IR-SAME:     bulkred.align = [16 : i64, 1 : i64]} {
// PTX-LABEL:   .entry full_sum(
// PTX:         .reqntid 512, 1, 1
// PTX:         ld.global.nc.v4.f32
// PTX:         shfl.sync.bfly.b32
// PTX:         fence.acq_rel.gpu;
// PTX:         atom.global.add.u32
// PTX:         ret;
func.func @full_sum(%x: memref<65539xf32, #bulkred.scope<global>>, %y: memref<1xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %x, %y : memref<65539xf32, #bulkred.scope<global>>, memref<1xf32, #bulkred.scope<global>>
  func.return
}

// -----

// bf16 max: loaded 4 at a time (8 bytes), combined in f32, rounded once.
// EXPLAIN:     // chosen: grid_full
// PTX-LABEL:   .entry full_max_bf16(
// PTX:         ld.global.nc.v4.b16
// PTX:         cvt.f32.bf16
// PTX:         max.NaN.f32
// PTX:         cvt.rn.bf16.f32
func.func @full_max_bf16(%x: memref<4097xbf16, #bulkred.scope<global>>, %y: memref<1xbf16, #bulkred.scope<global>>) {
  bulkred.reduce max grid %x, %y : memref<4097xbf16, #bulkred.scope<global>>, memref<1xbf16, #bulkred.scope<global>>
  func.return
}

// -----

// An int32 sum: grid_full_cluster; redux.sync per warp, red.async into CTA 0 of each
// 2-CTA cluster, completed on an mbarrier.
// EXPLAIN:     // chosen: grid_full_cluster
// IR-LABEL:    func.func @full_sum_i32(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [2], block = [512], cluster = [2]>
// PTX-LABEL:   .entry full_sum_i32(
// PTX:         .reqnctapercluster 2, 1, 1
// PTX:         mbarrier.init.shared::cta.b64
// PTX-DAG:     redux.sync.add.s32
// PTX-DAG:     red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.s32
// PTX-DAG:     mbarrier.try_wait.parity
// PTX-DAG:     atom.global.add.u32
// PTX:         ret;
func.func @full_sum_i32(%x: memref<1000xi32, #bulkred.scope<global>>, %y: memref<1xi32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid %x, %y : memref<1000xi32, #bulkred.scope<global>>, memref<1xi32, #bulkred.scope<global>>
  func.return
}

// -----

// A row sum: grid_rows, one warp per row, no workspace.
// EXPLAIN:     // chosen: grid_rows
// IR-LABEL:    func.func @rowsum(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [125], block = [256], cluster = [1]>, bulkred.align = [16 : i64, 1 : i64]} {
// PTX-LABEL:   .entry rowsum(
// PTX:         ld.global.nc.v4.f32
// PTX:         shfl.sync.bfly.b32
// PTX-NOT:     atom.
// PTX:         ret;
func.func @rowsum(%x: memref<1000x4096xf32, #bulkred.scope<global>>, %y: memref<1000xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [1 : i64] %x, %y : memref<1000x4096xf32, #bulkred.scope<global>>, memref<1000xf32, #bulkred.scope<global>>
  func.return
}

// -----

// A column sum: grid_split_bulk, a shared tile per CTA added into %y by the bulk engine;
// %y is zeroed by the launcher (bulkred.zero_init).
// EXPLAIN:     // chosen: grid_split_bulk
// IR-LABEL:    func.func @colsum(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [4, 264], block = [256], cluster = [1]>, bulkred.zero_init = [1 : i64]
// y too: cp.reduce.async.bulk adds into it 16 bytes at a time.
// IR-SAME:     bulkred.align = [16 : i64, 16 : i64]} {
// PTX-LABEL:   .entry colsum(
// PTX:         ld.global.nc.v4.f32
// PTX:         fence.proxy.async.shared::cta;
// PTX:         bar.sync 0;
// PTX:         cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// PTX:         cp.async.bulk.commit_group;
// PTX:         cp.async.bulk.wait_group.read 0;
func.func @colsum(%x: memref<65536x4096xf32, #bulkred.scope<global>>, %y: memref<4096xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid axes [0 : i64] %x, %y : memref<65536x4096xf32, #bulkred.scope<global>>, memref<4096xf32, #bulkred.scope<global>>
  func.return
}

// -----

// The same column sum, deterministic: grid_split_det, partial rows in the workspace and
// the last CTA of each column tile adds them in split order.
// EXPLAIN:     grid_split_bulk{{ +}}64{{ +}}deterministic{{ +}}FAIL{{ +}}not requested{{ +}}requested
// EXPLAIN:     // chosen: grid_split_det
// IR-LABEL:    func.func @colsum_det(
// IR-SAME:     bulkred.launch = #bulkred.launch<grid = [4, 132], block = [256], cluster = [1]>, bulkred.workspace = 2162704 : i64
// PTX-LABEL:   .entry colsum_det(
// PTX-NOT:     cp.reduce.async.bulk
// PTX:         atom.global.add.u32
func.func @colsum_det(%x: memref<65536x4096xf32, #bulkred.scope<global>>, %y: memref<4096xf32, #bulkred.scope<global>>) {
  bulkred.reduce sum grid deterministic axes [0 : i64] %x, %y : memref<65536x4096xf32, #bulkred.scope<global>>, memref<4096xf32, #bulkred.scope<global>>
  func.return
}
