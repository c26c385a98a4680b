// Every verifier rule of cp.async.bulk and cp.async.bulk.prefetch, rejected with its message.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: not bulkred-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: cp_async_bulk_invalid.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.async.bulk.shared_cta.global' '.L2::cache_hint' needs operand 'cachePolicy', which is absent
func.func @shared_cta_global_hint_without_policy(%dst: !ptx.ptr<shared::cta>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cta>) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' '.L2::cache_hint' needs operand 'cachePolicy', which is absent
  ptx.cp.async.bulk.shared_cta.global cache_hint "L2::cache_hint" %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @shared_cta_global_policy_without_hint(%dst: !ptx.ptr<shared::cta>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cta>, %policy: i64) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' operand 'cachePolicy' is only valid with '.L2::cache_hint', which is absent
  ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar cachePolicy = %policy
  func.return
}

// -----

func.func @shared_cta_global_size(%dst: !ptx.ptr<shared::cta>, %src: !ptx.ptr<global>, %mbar: !ptx.ptr<shared::cta>) {
  %size = arith.constant 100 : i32
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' 'size' must be a non-negative multiple of 16, got 100
  ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar
  func.return
}

// -----

// The mbarrier of a .shared::cta destination is in the executing CTA's shared memory.
func.func @shared_cta_global_mbar_space(%dst: !ptx.ptr<shared::cta>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' operand 'mbar' at position 3 does not verify: Expected attribute !ptx.ptr<shared::cta> but got !ptx.ptr<shared::cluster>
  "ptx.cp.async.bulk.shared_cta.global"(%dst, %src, %size, %mbar) : (!ptx.ptr<shared::cta>, !ptx.ptr<global>, i32, !ptx.ptr<shared::cluster>) -> ()
  func.return
}

// -----

func.func @shared_cluster_global_multicast_without_mask(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' '.multicast::cluster' needs operand 'ctaMask', which is absent
  ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @shared_cluster_global_mask_without_multicast(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cluster>, %mask: i16) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' operand 'ctaMask' is only valid with '.multicast::cluster', which is absent
  ptx.cp.async.bulk.shared_cluster.global %dst, %src, %size, %mbar ctaMask = %mask
  func.return
}

// -----

func.func @shared_cluster_global_hint_without_policy(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cluster>, %mask: i16) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' '.L2::cache_hint' needs operand 'cachePolicy', which is absent
  ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" cache_hint "L2::cache_hint" %dst, %src, %size, %mbar ctaMask = %mask
  func.return
}

// -----

func.func @shared_cluster_global_policy_without_hint(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cluster>, %policy: i64) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' operand 'cachePolicy' is only valid with '.L2::cache_hint', which is absent
  ptx.cp.async.bulk.shared_cluster.global %dst, %src, %size, %mbar cachePolicy = %policy
  func.return
}

// -----

func.func @shared_cluster_global_size(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %mbar: !ptx.ptr<shared::cluster>) {
  %size = arith.constant 8 : i32
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' 'size' must be a non-negative multiple of 16, got 8
  ptx.cp.async.bulk.shared_cluster.global %dst, %src, %size, %mbar
  func.return
}

// -----

// The mbarrier of a .shared::cluster destination is a .shared::cluster address.
func.func @shared_cluster_global_mbar_space(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cta>) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' operand 'mbar' at position 3 does not verify: Expected attribute !ptx.ptr<shared::cluster> but got !ptx.ptr<shared::cta>
  "ptx.cp.async.bulk.shared_cluster.global"(%dst, %src, %size, %mbar) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}> : (!ptx.ptr<shared::cluster>, !ptx.ptr<global>, i32, !ptx.ptr<shared::cta>) -> ()
  func.return
}

// -----

// ctaMask is 16 bits.
func.func @shared_cluster_global_mask_width(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cluster>, %mask: i32) {
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' operand 'ctaMask' at position 4 does not verify: Expected attribute i16 but got i32
  "ptx.cp.async.bulk.shared_cluster.global"(%dst, %src, %size, %mbar, %mask) <{multicast = #ptx<bulk_multicast "multicast::cluster">, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>}> : (!ptx.ptr<shared::cluster>, !ptx.ptr<global>, i32, !ptx.ptr<shared::cluster>, i32) -> ()
  func.return
}

// -----

func.func @shared_cluster_shared_cta_size(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %mbar: !ptx.ptr<shared::cluster>) {
  %size = arith.constant 33 : i32
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.shared_cta' 'size' must be a non-negative multiple of 16, got 33
  ptx.cp.async.bulk.shared_cluster.shared_cta %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @global_shared_cta_hint_without_policy(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' '.L2::cache_hint' needs operand 'cachePolicy', which is absent
  ptx.cp.async.bulk.global.shared_cta cache_hint "L2::cache_hint" %dst, %src, %size
  func.return
}

// -----

func.func @global_shared_cta_policy_without_hint(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32, %policy: i64) {
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' operand 'cachePolicy' is only valid with '.L2::cache_hint', which is absent
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %size cachePolicy = %policy
  func.return
}

// -----

func.func @global_shared_cta_cp_mask_without_byte_mask(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32, %policy: i64) {
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' '.cp_mask' needs operand 'byteMask', which is absent
  ptx.cp.async.bulk.global.shared_cta cache_hint "L2::cache_hint" cp_mask %dst, %src, %size cachePolicy = %policy
  func.return
}

// -----

func.func @global_shared_cta_byte_mask_without_cp_mask(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32, %mask: i16) {
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' operand 'byteMask' is only valid with '.cp_mask', which is absent
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %size byteMask = %mask
  func.return
}

// -----

func.func @global_shared_cta_size(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>) {
  %size = arith.constant 16 : i32
  %bad = arith.constant 24 : i32
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %size
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' 'size' must be a non-negative multiple of 16, got 24
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %bad
  func.return
}

// -----

// -16 is a multiple of 16, but the .u32 operand would read it as 4294967280 bytes.
func.func @global_shared_cta_negative_size(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>) {
  %size = arith.constant -16 : i32
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' 'size' must be a non-negative multiple of 16, got -16
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %size
  func.return
}

// -----

func.func @prefetch_hint_without_policy(%src: !ptx.ptr<global>, %size: i32) {
  // CHECK: error: 'ptx.cp.async.bulk.prefetch.L2.global' '.L2::cache_hint' needs operand 'cachePolicy', which is absent
  ptx.cp.async.bulk.prefetch.L2.global cache_hint "L2::cache_hint" %src, %size
  func.return
}

// -----

func.func @prefetch_policy_without_hint(%src: !ptx.ptr<global>, %size: i32, %policy: i64) {
  // CHECK: error: 'ptx.cp.async.bulk.prefetch.L2.global' operand 'cachePolicy' is only valid with '.L2::cache_hint', which is absent
  ptx.cp.async.bulk.prefetch.L2.global %src, %size cachePolicy = %policy
  func.return
}

// -----

func.func @prefetch_size(%src: !ptx.ptr<global>) {
  %size = arith.constant 4 : i32
  // CHECK: error: 'ptx.cp.async.bulk.prefetch.L2.global' 'size' must be a non-negative multiple of 16, got 4
  ptx.cp.async.bulk.prefetch.L2.global %src, %size
  func.return
}

// -----

// A cache policy is 64 bits.
func.func @prefetch_policy_width(%src: !ptx.ptr<global>, %size: i32, %policy: i32) {
  // CHECK: error: 'ptx.cp.async.bulk.prefetch.L2.global' operand 'cachePolicy' at position 2 does not verify: Expected attribute i64 but got i32
  "ptx.cp.async.bulk.prefetch.L2.global"(%src, %size, %policy) <{cache_hint = #ptx<bulk_cache_hint "L2::cache_hint">}> : (!ptx.ptr<global>, i32, i32) -> ()
  func.return
}

// -----

// Alignment: "the addresses dstMem and srcMem must be aligned to 16 bytes", where known at
// compile time: from the ptx.alloc that ptx.mov.addr names, plus constant ptx.add.ptr offsets.
// STDERR: cp_async_bulk_invalid.mlir:[[# @LINE + 7]]:3: error: 'ptx.cp.async.bulk.shared_cta.global' 'dstMem' must be 16-byte aligned, known alignment 4
func.func @shared_cta_global_dst_alloc_align_4(%src: !ptx.ptr<global>, %size: i32) {
  ptx.alloc shared @tile size 256 align 4
  ptx.alloc shared @mbar size 8 align 8
  %dst = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %mbar = ptx.mov.addr @mbar : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' 'dstMem' must be 16-byte aligned, known alignment 4
  ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @shared_cta_global_dst_offset_8(%src: !ptx.ptr<global>, %size: i32) {
  ptx.alloc shared @tile size 256 align 128
  ptx.alloc shared @mbar size 8 align 8
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %mbar = ptx.mov.addr @mbar : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %dst = ptx.add.ptr %tile, %c8 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' 'dstMem' must be 16-byte aligned, known alignment 8
  ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar
  func.return
}

// -----

// Offsets add up along a chain of ptx.add.ptr (16 + 8), through ptx.mov.imm constants too.
func.func @shared_cta_global_dst_offset_chain(%src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cta>) {
  ptx.alloc shared @tile size 256 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %c16 = ptx.mov.imm 16 : i32
  %c8 = arith.constant 8 : i32
  %a = ptx.add.ptr %tile, %c16 : !ptx.ptr<shared::cta>, i32
  %dst = ptx.add.ptr %a, %c8 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' 'dstMem' must be 16-byte aligned, known alignment 8
  ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar
  func.return
}

// -----

// An mbarrier object is an 8-byte aligned .b64.
func.func @shared_cta_global_mbar_align_4(%dst: !ptx.ptr<shared::cta>, %src: !ptx.ptr<global>, %size: i32) {
  ptx.alloc shared @bars size 16 align 8
  %bars = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c4 = arith.constant 4 : i32
  %mbar = ptx.add.ptr %bars, %c4 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' 'mbar' must be 8-byte aligned, known alignment 4
  ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar
  func.return
}

// -----

// A shared::cta address seen as shared::cluster (ptx.mov) keeps its alignment.
func.func @shared_cluster_global_dst_via_mov(%src: !ptx.ptr<global>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  ptx.alloc shared @tile size 64 align 8
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %dst = ptx.mov %tile : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' 'dstMem' must be 16-byte aligned, known alignment 8
  ptx.cp.async.bulk.shared_cluster.global %dst, %src, %size, %mbar
  func.return
}

// -----

// ptx.mapa maps to the same offset in another CTA's shared memory: the alignment is kept.
func.func @shared_cluster_shared_cta_mbar_via_mapa(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32, %rank: i32) {
  ptx.alloc shared @bar size 8 align 4
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %mbar = ptx.mapa %bar, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.shared_cta' 'mbar' must be 8-byte aligned, known alignment 4
  ptx.cp.async.bulk.shared_cluster.shared_cta %dst, %src, %size, %mbar
  func.return
}

// -----

func.func @shared_cluster_shared_cta_src_offset(%dst: !ptx.ptr<shared::cluster>, %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  ptx.alloc shared @tile size 512 align 128
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %c100 = arith.constant 100 : i32
  %src = ptx.add.ptr %tile, %c100 : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.shared_cta' 'srcMem' must be 16-byte aligned, known alignment 4
  ptx.cp.async.bulk.shared_cluster.shared_cta %dst, %src, %size, %mbar
  func.return
}

// -----

// A negative offset: 16-byte base - 8.
func.func @global_shared_cta_src_negative_offset(%dst: !ptx.ptr<global>, %size: i32) {
  ptx.alloc shared @tile size 512 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %c = arith.constant -8 : i32
  %src = ptx.add.ptr %tile, %c : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' 'srcMem' must be 16-byte aligned, known alignment 8
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %size
  func.return
}

// -----

// A constant address is its own alignment (through cvta.to.global).
func.func @prefetch_src_constant_address(%size: i32) {
  %c = arith.constant 4104 : i64
  %src = ptx.cvta.to.global %c : i64
  // CHECK: error: 'ptx.cp.async.bulk.prefetch.L2.global' 'srcMem' must be 16-byte aligned, known alignment 8
  ptx.cp.async.bulk.prefetch.L2.global %src, %size
  func.return
}

// -----

// A constant size past the end of the array behind a known address (undefined in PTX).
func.func @global_shared_cta_size_past_array(%dst: !ptx.ptr<global>) {
  ptx.alloc shared @tile size 64 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %size = arith.constant 128 : i32
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' 'srcMem' + 'size' must lie inside @tile (64 bytes), got bytes [0, 128)
  ptx.cp.async.bulk.global.shared_cta %dst, %tile, %size
  func.return
}

// -----

// ... at a constant offset, through ptx.mov.
func.func @shared_cluster_global_dst_past_array(%src: !ptx.ptr<global>) {
  ptx.alloc shared @tile size 256 align 128
  ptx.alloc shared @bar size 8 align 8
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %c192 = arith.constant 192 : i32
  %size = arith.constant 128 : i32
  %at = ptx.add.ptr %tile, %c192 : !ptx.ptr<shared::cta>, i32
  %dst = ptx.mov %at : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  %mbar = ptx.mov %bar : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.global' 'dstMem' + 'size' must lie inside @tile (256 bytes), got bytes [192, 320)
  ptx.cp.async.bulk.shared_cluster.global %dst, %src, %size, %mbar
  func.return
}

// -----

// ... before the start of the array.
func.func @global_shared_cta_src_before_array(%dst: !ptx.ptr<global>) {
  ptx.alloc shared @tile size 256 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %c = arith.constant -16 : i32
  %size = arith.constant 16 : i32
  %src = ptx.add.ptr %tile, %c : !ptx.ptr<shared::cta>, i32
  // CHECK: error: 'ptx.cp.async.bulk.global.shared_cta' 'srcMem' + 'size' must lie inside @tile (256 bytes), got bytes [-16, 0)
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %size
  func.return
}

// -----

// An mbarrier object is 8 bytes: a 4-byte array cannot hold one.
func.func @shared_cta_global_mbar_too_small(%src: !ptx.ptr<global>, %size: i32) {
  ptx.alloc shared @tile size 256 align 128
  ptx.alloc shared @bar size 4 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.async.bulk.shared_cta.global' 'mbar' (an 8-byte mbarrier object) must lie inside @bar (4 bytes), got bytes [0, 8)
  ptx.cp.async.bulk.shared_cta.global %tile, %src, %size, %bar
  func.return
}

// -----

// ... nor the last 8 bytes of a 12-byte array, through ptx.mapa.
func.func @shared_cluster_shared_cta_mbar_past_array(%size: i32, %rank: i32) {
  ptx.alloc shared @tile size 256 align 128
  ptx.alloc shared @bar size 12 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %b8 = ptx.add.ptr %bar, %c8 : !ptx.ptr<shared::cta>, i32
  %rt = ptx.mapa %tile, %rank : !ptx.ptr<shared::cta>
  %rb = ptx.mapa %b8, %rank : !ptx.ptr<shared::cta>
  // CHECK: error: 'ptx.cp.async.bulk.shared_cluster.shared_cta' 'mbar' (an 8-byte mbarrier object) must lie inside @bar (12 bytes), got bytes [8, 16)
  ptx.cp.async.bulk.shared_cluster.shared_cta %rt, %tile, %size, %rb
  func.return
}
