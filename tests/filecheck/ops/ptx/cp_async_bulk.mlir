// cp.async.bulk in its four directions and cp.async.bulk.prefetch (PTX ISA 9.7.9.25.4.1, .3).
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// Every form runs on sm_100a; on sm_90a only .cp_mask is rejected; sm_89 runs none.
// RUN: bulkred-opt %s --split-input-file -p 'check-target{target=sm_100a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_90a}' 2>&1 >/dev/null \
// RUN:   | filecheck %s --check-prefix=SM90A
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_89}' 2>&1 >/dev/null \
// RUN:   | filecheck %s --check-prefix=SM89

// .cp_mask comes first: on sm_90a its error must be the only one (SM90A-NOT at the end).
// CHECK-LABEL: func.func @global_shared_cta_cp_mask
// GENERIC-LABEL: sym_name = "global_shared_cta_cp_mask"
func.func @global_shared_cta_cp_mask(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32,
                                     %policy: i64, %mask: i16) {
  // SM90A: cp_async_bulk.mlir:[[# @LINE + 4]]:3: error: 'ptx.cp.async.bulk.global.shared_cta' 'cp.async.bulk.global.shared::cta.bulk_group.cp_mask' needs sm_100 and PTX ISA 8.6, but the target is sm_90a
  // SM89: cp_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.async.bulk.global.shared_cta' 'cp.async.bulk.global.shared::cta.bulk_group.cp_mask' needs sm_100 and PTX ISA 8.6, but the target is sm_89
  // CHECK: ptx.cp.async.bulk.global.shared_cta cp_mask %dst, %src, %size byteMask = %mask{{$}}
  // GENERIC: "ptx.cp.async.bulk.global.shared_cta"(%dst, %src, %size, %mask) <{cp_mask, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}> : (!ptx.ptr<global>, !ptx.ptr<shared::cta>, i32, i16) -> ()
  ptx.cp.async.bulk.global.shared_cta cp_mask %dst, %src, %size byteMask = %mask
  // CHECK: ptx.cp.async.bulk.global.shared_cta cache_hint "L2::cache_hint" cp_mask %dst, %src, %size cachePolicy = %policy byteMask = %mask{{$}}
  // GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>
  ptx.cp.async.bulk.global.shared_cta cache_hint "L2::cache_hint" cp_mask %dst, %src, %size
      cachePolicy = %policy byteMask = %mask
  func.return
}

// -----

// CHECK-LABEL: func.func @shared_cta_global
// GENERIC-LABEL: sym_name = "shared_cta_global"
func.func @shared_cta_global(%dst: !ptx.ptr<shared::cta>, %src: !ptx.ptr<global>, %size: i32,
                             %mbar: !ptx.ptr<shared::cta>, %policy: i64) {
  // SM89: cp_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.async.bulk.shared_cta.global' 'cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes' needs sm_90 and PTX ISA 8.6, but the target is sm_89
  // CHECK: ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar{{$}}
  // GENERIC: "ptx.cp.async.bulk.shared_cta.global"(%dst, %src, %size, %mbar) : (!ptx.ptr<shared::cta>, !ptx.ptr<global>, i32, !ptx.ptr<shared::cta>) -> ()
  ptx.cp.async.bulk.shared_cta.global %dst, %src, %size, %mbar
  // CHECK: ptx.cp.async.bulk.shared_cta.global cache_hint "L2::cache_hint" %dst, %src, %size, %mbar cachePolicy = %policy{{$}}
  // GENERIC: "ptx.cp.async.bulk.shared_cta.global"(%dst, %src, %size, %mbar, %policy) <{cache_hint = #ptx<bulk_cache_hint "L2::cache_hint">}> : (!ptx.ptr<shared::cta>, !ptx.ptr<global>, i32, !ptx.ptr<shared::cta>, i64) -> ()
  ptx.cp.async.bulk.shared_cta.global cache_hint "L2::cache_hint" %dst, %src, %size, %mbar cachePolicy = %policy
  func.return
}

// -----

// CHECK-LABEL: func.func @shared_cluster_global
// GENERIC-LABEL: sym_name = "shared_cluster_global"
func.func @shared_cluster_global(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<global>, %size: i32,
                                 %mbar: !ptx.ptr<shared::cluster>, %mask: i16, %policy: i64) {
  // SM89: cp_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.async.bulk.shared_cluster.global' 'cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes' needs sm_90 and PTX ISA 8.0, but the target is sm_89
  // CHECK: ptx.cp.async.bulk.shared_cluster.global %dst, %src, %size, %mbar{{$}}
  // GENERIC: "ptx.cp.async.bulk.shared_cluster.global"(%dst, %src, %size, %mbar) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}>
  ptx.cp.async.bulk.shared_cluster.global %dst, %src, %size, %mbar
  // CHECK: ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" %dst, %src, %size, %mbar ctaMask = %mask{{$}}
  // GENERIC: "ptx.cp.async.bulk.shared_cluster.global"(%dst, %src, %size, %mbar, %mask) <{multicast = #ptx<bulk_multicast "multicast::cluster">, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>}> : (!ptx.ptr<shared::cluster>, !ptx.ptr<global>, i32, !ptx.ptr<shared::cluster>, i16) -> ()
  ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" %dst, %src, %size, %mbar ctaMask = %mask
  // CHECK: ptx.cp.async.bulk.shared_cluster.global cache_hint "L2::cache_hint" %dst, %src, %size, %mbar cachePolicy = %policy{{$}}
  // GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1>
  ptx.cp.async.bulk.shared_cluster.global cache_hint "L2::cache_hint" %dst, %src, %size, %mbar cachePolicy = %policy
  // CHECK: ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" cache_hint "L2::cache_hint" %dst, %src, %size, %mbar ctaMask = %mask cachePolicy = %policy{{$}}
  // GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>
  ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" cache_hint "L2::cache_hint"
      %dst, %src, %size, %mbar ctaMask = %mask cachePolicy = %policy
  func.return
}

// -----

// CHECK-LABEL: func.func @shared_cluster_shared_cta
// GENERIC-LABEL: sym_name = "shared_cluster_shared_cta"
func.func @shared_cluster_shared_cta(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>,
                                     %size: i32, %mbar: !ptx.ptr<shared::cluster>) {
  // SM89: cp_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.async.bulk.shared_cluster.shared_cta' 'cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes' needs sm_90 and PTX ISA 8.0, but the target is sm_89
  // CHECK: ptx.cp.async.bulk.shared_cluster.shared_cta %dst, %src, %size, %mbar{{$}}
  // GENERIC: "ptx.cp.async.bulk.shared_cluster.shared_cta"(%dst, %src, %size, %mbar) : (!ptx.ptr<shared::cluster>, !ptx.ptr<shared::cta>, i32, !ptx.ptr<shared::cluster>) -> ()
  ptx.cp.async.bulk.shared_cluster.shared_cta %dst, %src, %size, %mbar
  func.return
}

// -----

// CHECK-LABEL: func.func @global_shared_cta
// GENERIC-LABEL: sym_name = "global_shared_cta"
func.func @global_shared_cta(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32,
                             %policy: i64) {
  // SM89: cp_async_bulk.mlir:[[# @LINE + 4]]:3: error: 'ptx.cp.async.bulk.global.shared_cta' 'cp.async.bulk.global.shared::cta.bulk_group' needs sm_90 and PTX ISA 8.0, but the target is sm_89
  // CHECK: ptx.cp.async.bulk.global.shared_cta %dst, %src, %size{{$}}
  // GENERIC: "ptx.cp.async.bulk.global.shared_cta"(%dst, %src, %size) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (!ptx.ptr<global>, !ptx.ptr<shared::cta>, i32) -> ()
  %c256 = arith.constant 256 : i32
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %size
  // A compile-time size that is a multiple of 16.
  // CHECK: ptx.cp.async.bulk.global.shared_cta %dst, %src, %c256{{$}}
  ptx.cp.async.bulk.global.shared_cta %dst, %src, %c256
  // CHECK: ptx.cp.async.bulk.global.shared_cta cache_hint "L2::cache_hint" %dst, %src, %size cachePolicy = %policy{{$}}
  // GENERIC: <{cache_hint = #ptx<bulk_cache_hint "L2::cache_hint">, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}>
  ptx.cp.async.bulk.global.shared_cta cache_hint "L2::cache_hint" %dst, %src, %size cachePolicy = %policy
  func.return
}

// -----

// CHECK-LABEL: func.func @prefetch
// GENERIC-LABEL: sym_name = "prefetch"
func.func @prefetch(%src: !ptx.ptr<global>, %size: i32, %policy: i64) {
  // SM89: cp_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.async.bulk.prefetch.L2.global' 'cp.async.bulk.prefetch.L2.global' needs sm_90 and PTX ISA 8.0, but the target is sm_89
  // CHECK: ptx.cp.async.bulk.prefetch.L2.global %src, %size{{$}}
  // GENERIC: "ptx.cp.async.bulk.prefetch.L2.global"(%src, %size) : (!ptx.ptr<global>, i32) -> ()
  ptx.cp.async.bulk.prefetch.L2.global %src, %size
  // CHECK: ptx.cp.async.bulk.prefetch.L2.global cache_hint "L2::cache_hint" %src, %size cachePolicy = %policy{{$}}
  // GENERIC: "ptx.cp.async.bulk.prefetch.L2.global"(%src, %size, %policy) <{cache_hint = #ptx<bulk_cache_hint "L2::cache_hint">}> : (!ptx.ptr<global>, i32, i64) -> ()
  ptx.cp.async.bulk.prefetch.L2.global cache_hint "L2::cache_hint" %src, %size cachePolicy = %policy
  func.return
}

// -----

// Known alignments that are multiples of 16 (8 for the mbarrier) are accepted: a 16-byte
// base plus 16, plus 8 + 8, through ptx.mov and ptx.mapa; an offset that is not a
// constant, or a block argument, is unknown and accepted.
// CHECK-LABEL: func.func @aligned_addresses
// GENERIC-LABEL: sym_name = "aligned_addresses"
func.func @aligned_addresses(%g: !ptx.ptr<global>, %size: i32, %off: i32, %rank: i32) {
  ptx.alloc shared @tile size 256 align 16
  ptx.alloc shared @bars size 16 align 8
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %bars = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %c16 = arith.constant 16 : i32
  %t16 = ptx.add.ptr %tile, %c16 : !ptx.ptr<shared::cta>, i32
  %t8 = ptx.add.ptr %tile, %c8 : !ptx.ptr<shared::cta>, i32
  %t8p8 = ptx.add.ptr %t8, %c8 : !ptx.ptr<shared::cta>, i32
  %bar1 = ptx.add.ptr %bars, %c8 : !ptx.ptr<shared::cta>, i32
  %tvar = ptx.add.ptr %t8, %off : !ptx.ptr<shared::cta>, i32
  // SM89: cp_async_bulk.mlir:[[# @LINE + 2]]:3: error: 'ptx.cp.async.bulk.shared_cta.global' 'cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes' needs sm_90 and PTX ISA 8.6, but the target is sm_89
  // CHECK: ptx.cp.async.bulk.shared_cta.global %t16, %g, %size, %bar1{{$}}
  ptx.cp.async.bulk.shared_cta.global %t16, %g, %size, %bar1
  // CHECK: ptx.cp.async.bulk.global.shared_cta %g, %t8p8, %size{{$}}
  ptx.cp.async.bulk.global.shared_cta %g, %t8p8, %size
  // CHECK: ptx.cp.async.bulk.global.shared_cta %g, %tvar, %size{{$}}
  ptx.cp.async.bulk.global.shared_cta %g, %tvar, %size
  %ct = ptx.mov %t16 : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  %cb = ptx.mov %bar1 : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  // CHECK: ptx.cp.async.bulk.shared_cluster.global %ct, %g, %size, %cb{{$}}
  ptx.cp.async.bulk.shared_cluster.global %ct, %g, %size, %cb
  %rt = ptx.mapa %t8p8, %rank : !ptx.ptr<shared::cta>
  %rb = ptx.mapa %bars, %rank : !ptx.ptr<shared::cta>
  // CHECK: ptx.cp.async.bulk.shared_cluster.shared_cta %rt, %tile, %size, %rb{{$}}
  ptx.cp.async.bulk.shared_cluster.shared_cta %rt, %tile, %size, %rb
  func.return
}

// -----

// Constant sizes that end exactly at the end of the array: [0, 256), [128, 256) through
// ptx.mov; the mbarrier is the last 8 bytes of its array.
// CHECK-LABEL: func.func @sizes_inside_arrays
// GENERIC-LABEL: sym_name = "sizes_inside_arrays"
func.func @sizes_inside_arrays(%g: !ptx.ptr<global>) {
  ptx.alloc shared @tile size 256 align 128
  ptx.alloc shared @bar size 16 align 16
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %c128 = arith.constant 128 : i32
  %c256 = arith.constant 256 : i32
  %last = ptx.add.ptr %bar, %c8 : !ptx.ptr<shared::cta>, i32
  %half = ptx.add.ptr %tile, %c128 : !ptx.ptr<shared::cta>, i32
  // CHECK: ptx.cp.async.bulk.global.shared_cta %g, %tile, %c256{{$}}
  ptx.cp.async.bulk.global.shared_cta %g, %tile, %c256
  %chalf = ptx.mov %half : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  %clast = ptx.mov %last : !ptx.ptr<shared::cta> -> !ptx.ptr<shared::cluster>
  // CHECK: ptx.cp.async.bulk.shared_cluster.global %chalf, %g, %c128, %clast{{$}}
  ptx.cp.async.bulk.shared_cluster.global %chalf, %g, %c128, %clast
  func.return
}

// SM90A-NOT: error:
