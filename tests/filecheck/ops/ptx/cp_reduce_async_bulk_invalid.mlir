// Every verifier rule of cp.reduce.async.bulk, rejected with its message: the syntax block's
// .type list, each row of the .redOp x .type table for both destinations, .noftz both ways,
// the cache hint and its operand, the size, the mbarrier's state space, the alignment of
// dstMem / srcMem (16) and mbar (8) where known.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: cp_reduce_async_bulk_invalid.mlir:[[# @LINE + 5]]:3: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.type' f32 is not valid for '.dst' shared::cluster (valid: b32, u32, s32, u64)
// f32 is not in the .type list of the shared::cluster syntax block. The valid list is that of
// the table: the syntax block also lists b64, which no .redOp accepts for shared::cluster.
func.func @cluster_type_f32(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.type' f32 is not valid for '.dst' shared::cluster (valid: b32, u32, s32, u64)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add f32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_type_s64(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.type' s64 is not valid for '.dst' shared::cluster (valid: b32, u32, s32, u64)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta min s64 %dst, %src, %size, %mbar
  func.return
}

// -----

// b64 is in the syntax list but in no row of the table for shared::cluster.
func.func @cluster_add_b64(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' add is not valid with '.type' b64 for '.dst' shared::cluster (valid: u32, s32, u64)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add b64 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_type_f16(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.type' f16 is not valid for '.dst' shared::cluster (valid: b32, u32, s32, u64)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add f16 %dst, %src, %size, %mbar
  func.return
}

// -----

// Narrower than the global table: no 64-bit min/max into shared::cluster.
func.func @cluster_min_u64(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' min is not valid with '.type' u64 for '.dst' shared::cluster (valid: u32, s32)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta min u64 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_max_b32(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' max is not valid with '.type' b32 for '.dst' shared::cluster (valid: u32, s32)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta max b32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_inc_s32(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' inc is not valid with '.type' s32 for '.dst' shared::cluster (valid: u32)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta inc s32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_dec_u64(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' dec is not valid with '.type' u64 for '.dst' shared::cluster (valid: u32)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta dec u64 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_and_b64(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' and is not valid with '.type' b64 for '.dst' shared::cluster (valid: b32)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta and b64 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_or_u32(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' or is not valid with '.type' u32 for '.dst' shared::cluster (valid: b32)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta or u32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_xor_s32(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.redOp' xor is not valid with '.type' s32 for '.dst' shared::cluster (valid: b32)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta xor s32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_noftz(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' '.noftz' is only valid with '.redOp' add and '.type' f16 or bf16, got '.redOp' add and '.type' u32
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add noftz u32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @global_add_s64(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' add is not valid with '.type' s64 for '.dst' global (valid: u32, s32, u64, f32, f64, f16, bf16)
  ptx.cp.reduce.async.bulk.global.shared_cta add s64 %dst, %src, %size
  func.return
}

// -----

func.func @global_add_b32(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' add is not valid with '.type' b32 for '.dst' global (valid: u32, s32, u64, f32, f64, f16, bf16)
  ptx.cp.reduce.async.bulk.global.shared_cta add b32 %dst, %src, %size
  func.return
}

// -----

func.func @global_min_f32(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' min is not valid with '.type' f32 for '.dst' global (valid: u32, s32, u64, s64, f16, bf16)
  ptx.cp.reduce.async.bulk.global.shared_cta min f32 %dst, %src, %size
  func.return
}

// -----

func.func @global_max_f64(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' max is not valid with '.type' f64 for '.dst' global (valid: u32, s32, u64, s64, f16, bf16)
  ptx.cp.reduce.async.bulk.global.shared_cta max f64 %dst, %src, %size
  func.return
}

// -----

func.func @global_max_b64(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' max is not valid with '.type' b64 for '.dst' global (valid: u32, s32, u64, s64, f16, bf16)
  ptx.cp.reduce.async.bulk.global.shared_cta max b64 %dst, %src, %size
  func.return
}

// -----

func.func @global_inc_s32(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' inc is not valid with '.type' s32 for '.dst' global (valid: u32)
  ptx.cp.reduce.async.bulk.global.shared_cta inc s32 %dst, %src, %size
  func.return
}

// -----

func.func @global_dec_u64(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' dec is not valid with '.type' u64 for '.dst' global (valid: u32)
  ptx.cp.reduce.async.bulk.global.shared_cta dec u64 %dst, %src, %size
  func.return
}

// -----

func.func @global_and_u32(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' and is not valid with '.type' u32 for '.dst' global (valid: b32, b64)
  ptx.cp.reduce.async.bulk.global.shared_cta and u32 %dst, %src, %size
  func.return
}

// -----

func.func @global_or_s64(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' or is not valid with '.type' s64 for '.dst' global (valid: b32, b64)
  ptx.cp.reduce.async.bulk.global.shared_cta or s64 %dst, %src, %size
  func.return
}

// -----

// The spec's example 'xor.s32' contradicts its table; the table wins (ptxas: "Incorrect type '.s32' for operation '.xor'").
func.func @global_xor_s32(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.redOp' xor is not valid with '.type' s32 for '.dst' global (valid: b32, b64)
  ptx.cp.reduce.async.bulk.global.shared_cta xor s32 %dst, %src, %size
  func.return
}

// -----

func.func @global_add_f16_without_noftz(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.noftz' is required with '.redOp' add and '.type' f16
  ptx.cp.reduce.async.bulk.global.shared_cta add f16 %dst, %src, %size
  func.return
}

// -----

func.func @global_add_bf16_without_noftz(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.noftz' is required with '.redOp' add and '.type' bf16
  ptx.cp.reduce.async.bulk.global.shared_cta add bf16 %dst, %src, %size
  func.return
}

// -----

func.func @global_min_f16_noftz(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.noftz' is only valid with '.redOp' add and '.type' f16 or bf16, got '.redOp' min and '.type' f16
  ptx.cp.reduce.async.bulk.global.shared_cta min noftz f16 %dst, %src, %size
  func.return
}

// -----

func.func @global_add_f32_noftz(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.noftz' is only valid with '.redOp' add and '.type' f16 or bf16, got '.redOp' add and '.type' f32
  ptx.cp.reduce.async.bulk.global.shared_cta add noftz f32 %dst, %src, %size
  func.return
}

// -----

func.func @global_hint_without_policy(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' '.L2::cache_hint' needs operand 'cachePolicy', which is absent
  ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" add f32 %dst, %src, %size
  func.return
}

// -----

func.func @global_policy_without_hint(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32, %policy: i64) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' operand 'cachePolicy' is only valid with '.L2::cache_hint', which is absent
  ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size cachePolicy = %policy
  func.return
}

// -----

func.func @cluster_size(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %mbar: !ptx.ptr<shared::cluster>) {
  %size = arith.constant 1000 : i32
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' 'size' must be a non-negative multiple of 16, got 1000
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @global_size(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>) {
  %size = arith.constant 2 : i32
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' 'size' must be a non-negative multiple of 16, got 2
  ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size
  func.return
}

// -----

// The mbarrier of the shared::cluster form is a .shared::cluster address.
func.func @cluster_mbar_space(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cta>) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' operand 'mbar' at position 3 does not verify: Expected attribute !ptx.ptr<shared::cluster> but got !ptx.ptr<shared::cta>
  "ptx.cp.reduce.async.bulk.shared_cluster.shared_cta"(%dst, %src, %size, %mbar) <{redOp = #ptx<bulk_red_op add>, type = #ptx<bulk_red_type u32>}> : (!ptx.ptr<shared::cluster>, !ptx.ptr<shared::cta>, i32, !ptx.ptr<shared::cta>) -> ()
  func.return
}

// -----

func.func @global_dst_space(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' operand 'dstMem' at position 0 does not verify: Expected attribute !ptx.ptr<global> but got !ptx.ptr<shared::cluster>
  "ptx.cp.reduce.async.bulk.global.shared_cta"(%dst, %src, %size) <{redOp = #ptx<bulk_red_op add>, type = #ptx<bulk_red_type u32>}> : (!ptx.ptr<shared::cluster>, !ptx.ptr<shared::cta>, i32) -> ()
  func.return
}

// -----

func.func @unknown_red_op(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: Expected `and`, `or`, `xor`, `add`, `inc`, `dec`, `min`, or `max`.
  ptx.cp.reduce.async.bulk.global.shared_cta mul f32 %dst, %src, %size
  func.return
}

// -----

// Alignment: dstMem and srcMem 16 bytes, mbar 8, where known at compile time (ptx.alloc's
// align, constant ptx.add.ptr offsets, kept through ptx.mapa).
func.func @cluster_dst_via_mapa(%src: !ptx.ptr<shared::cta>, %size: i32, %mbar: !ptx.ptr<shared::cluster>, %rank: i32) {
  ptx.alloc shared @acc size 256 align 8
  %acc = ptx.mov.addr @acc : !ptx.ptr<shared::cta>
  %dst = ptx.mapa %acc, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' 'dstMem' must be 16-byte aligned, known alignment 8
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u32 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @cluster_src_offset_4(%dst: !ptx.ptr<shared::cluster>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  ptx.alloc shared @tile size 256 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %c4 = arith.constant 4 : i32
  %src = ptx.add.ptr %tile, %c4 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' 'srcMem' must be 16-byte aligned, known alignment 4
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta min s32 %dst, %src, %size, %mbar
  func.return
}

// -----

// STDERR: cp_reduce_async_bulk_invalid.mlir:[[# @LINE + 8]]:3: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' 'mbar' must be 8-byte aligned, known alignment 4
func.func @cluster_mbar_offset_4(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %rank: i32) {
  ptx.alloc shared @bars size 64 align 16
  %bars = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c12 = arith.constant 12 : i32
  %bar = ptx.add.ptr %bars, %c12 : !ptx.ptr<shared::cta>, i32
  %mbar = ptx.mapa %bar, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' 'mbar' must be 8-byte aligned, known alignment 4
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u64 %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @global_src_offset_8(%dst: !ptx.ptr<global>, %size: i32) {
  ptx.alloc shared @tile size 256 align 128
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %src = ptx.add.ptr %tile, %c8 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' 'srcMem' must be 16-byte aligned, known alignment 8
  ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size
  func.return
}

// -----

func.func @global_src_alloc_align_2(%dst: !ptx.ptr<global>, %size: i32) {
  ptx.alloc shared @tile size 256 align 2
  %src = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' 'srcMem' must be 16-byte aligned, known alignment 2
  ptx.cp.reduce.async.bulk.global.shared_cta add noftz bf16 %dst, %src, %size
  func.return
}

// -----

// A constant size past the end of the array behind a known address (undefined in PTX).
func.func @global_src_past_array(%dst: !ptx.ptr<global>) {
  ptx.alloc shared @tile size 64 align 16
  %src = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %size = arith.constant 80 : i32
  // CHECK: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' 'srcMem' + 'size' must lie inside @tile (64 bytes), got bytes [0, 80)
  ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size
  func.return
}

// -----

func.func @cluster_mbar_too_small(%size: i32, %rank: i32) {
  ptx.alloc shared @tile size 64 align 16
  ptx.alloc shared @bar size 4 align 8
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %rt = ptx.mapa %tile, %rank : !ptx.ptr<shared::cta>
  %rb = ptx.mapa %bar, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' 'mbar' (an 8-byte mbarrier object) must lie inside @bar (4 bytes), got bytes [0, 8)
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u32 %rt, %tile, %size, %rb
  func.return
}
