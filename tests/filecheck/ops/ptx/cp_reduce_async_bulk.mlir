// cp.reduce.async.bulk, both forms (PTX ISA 9.7.9.25.4.2): every valid .redOp x .type of the spec's table.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// Both forms need sm_90 and PTX ISA 8.0 and nothing more: sm_90a runs them all, sm_89 none.
// RUN: bulkred-opt %s --split-input-file -p 'check-target{target=sm_90a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'check-target{target=sm_89}' 2>&1 >/dev/null \
// RUN:   | filecheck %s --check-prefix=SM89

// CHECK-LABEL: func.func @shared_cluster_table
// GENERIC-LABEL: sym_name = "shared_cluster_table"
func.func @shared_cluster_table(%dst: !ptx.ptr<shared::cluster>, %src: !ptx.ptr<shared::cta>, %size: i32,
                                %mbar: !ptx.ptr<shared::cluster>) {
  // SM89: cp_reduce_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.reduce.async.bulk.shared_cluster.shared_cta' 'cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u64' needs sm_90 and PTX ISA 8.0, but the target is sm_89
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u64 %dst, %src, %size, %mbar{{$}}
  // GENERIC: "ptx.cp.reduce.async.bulk.shared_cluster.shared_cta"(%dst, %src, %size, %mbar) <{redOp = #ptx<bulk_red_op add>, type = #ptx<bulk_red_type u64>}> : (!ptx.ptr<shared::cluster>, !ptx.ptr<shared::cta>, i32, !ptx.ptr<shared::cluster>) -> ()
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u64 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add s32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add s32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u64 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u64 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta min u32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta min u32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta min s32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta min s32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta max u32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta max u32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta max s32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta max s32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta inc u32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta inc u32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta dec u32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta dec u32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta and b32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta and b32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta or b32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta or b32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta xor b32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta xor b32 %dst, %src, %size, %mbar
  func.return
}

// -----

// CHECK-LABEL: func.func @global_table
// GENERIC-LABEL: sym_name = "global_table"
func.func @global_table(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %size: i32) {
  // SM89: cp_reduce_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' 'cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32' needs sm_90 and PTX ISA 8.0, but the target is sm_89
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size{{$}}
  // GENERIC: "ptx.cp.reduce.async.bulk.global.shared_cta"(%dst, %src, %size) <{redOp = #ptx<bulk_red_op add>, type = #ptx<bulk_red_type f32>}> : (!ptx.ptr<global>, !ptx.ptr<shared::cta>, i32) -> ()
  ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size
  // GENERIC: "ptx.cp.reduce.async.bulk.global.shared_cta"(%dst, %src, %size) <{redOp = #ptx<bulk_red_op add>, noftz, type = #ptx<bulk_red_type bf16>}> : (!ptx.ptr<global>, !ptx.ptr<shared::cta>, i32) -> ()
  ptx.cp.reduce.async.bulk.global.shared_cta add noftz bf16 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add u32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add u32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add s32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add s32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add u64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add u64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add f32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add f64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add f64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add noftz f16 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add noftz f16 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add noftz bf16 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add noftz bf16 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta min u32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta min u32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta min s32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta min s32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta min u64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta min u64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta min s64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta min s64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta min f16 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta min f16 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta min bf16 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta min bf16 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta max u32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta max u32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta max s32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta max s32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta max u64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta max u64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta max s64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta max s64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta max f16 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta max f16 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta max bf16 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta max bf16 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta inc u32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta inc u32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta dec u32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta dec u32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta and b32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta and b32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta and b64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta and b64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta or b32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta or b32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta or b64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta or b64 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta xor b32 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta xor b32 %dst, %src, %size
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta xor b64 %dst, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta xor b64 %dst, %src, %size
  func.return
}

// -----

// CHECK-LABEL: func.func @global_cache_hint
// GENERIC-LABEL: sym_name = "global_cache_hint"
func.func @global_cache_hint(%dst: !ptx.ptr<global>, %src: !ptx.ptr<shared::cta>, %policy: i64) {
  %size = arith.constant 4096 : i32
  // SM89: cp_reduce_async_bulk.mlir:[[# @LINE + 3]]:3: error: 'ptx.cp.reduce.async.bulk.global.shared_cta' 'cp.reduce.async.bulk.global.shared::cta.bulk_group.L2::cache_hint.add.noftz.f16' needs sm_90 and PTX ISA 8.0, but the target is sm_89
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" add noftz f16 %dst, %src, %size cachePolicy = %policy{{$}}
  // GENERIC: "ptx.cp.reduce.async.bulk.global.shared_cta"(%dst, %src, %size, %policy) <{cache_hint = #ptx<bulk_cache_hint "L2::cache_hint">, redOp = #ptx<bulk_red_op add>, noftz, type = #ptx<bulk_red_type f16>}> : (!ptx.ptr<global>, !ptx.ptr<shared::cta>, i32, i64) -> ()
  ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" add noftz f16 %dst, %src, %size cachePolicy = %policy
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" max s64 %dst, %src, %size cachePolicy = %policy{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" max s64 %dst, %src, %size cachePolicy = %policy
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" xor b64 %dst, %src, %size cachePolicy = %policy{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta cache_hint "L2::cache_hint" xor b64 %dst, %src, %size cachePolicy = %policy
  func.return
}

// -----

// Known alignments that are multiples of 16 (8 for the mbarrier) are accepted.
// CHECK-LABEL: func.func @aligned_addresses
// GENERIC-LABEL: sym_name = "aligned_addresses"
func.func @aligned_addresses(%g: !ptx.ptr<global>, %size: i32, %rank: i32) {
  ptx.alloc shared @tile size 256 align 128
  ptx.alloc shared @bar size 8 align 8
  %tile = ptx.mov.addr @tile : !ptx.ptr<shared::cta>
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %c48 = arith.constant 48 : i32
  %src = ptx.add.ptr %tile, %c48 : !ptx.ptr<shared::cta>, i32
  %dst = ptx.mapa %tile, %rank : !ptx.ptr<shared::cta>
  %mbar = ptx.mapa %bar, %rank : !ptx.ptr<shared::cta>
  // CHECK: ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u32 %dst, %src, %size, %mbar{{$}}
  ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add u32 %dst, %src, %size, %mbar
  // CHECK: ptx.cp.reduce.async.bulk.global.shared_cta add f32 %g, %src, %size{{$}}
  ptx.cp.reduce.async.bulk.global.shared_cta add f32 %g, %src, %size
  func.return
}
