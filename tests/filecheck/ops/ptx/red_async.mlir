// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -p 'check-target{target=sm_100a}' | filecheck %s

// CHECK-LABEL: func.func @relaxed_cluster
// GENERIC-LABEL: sym_name = "relaxed_cluster"
func.func @relaxed_cluster(%a: !ptx.ptr<shared::cluster>, %mbar: !ptx.ptr<shared::cluster>, %b: i32, %c: i64) {
  // CHECK: ptx.red.async.relaxed.cluster add u32 %{{.*}}, %{{.*}}, %{{.*}} : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // GENERIC: "ptx.red.async.relaxed.cluster"(%a, %b, %mbar) <{op = #ptx<red_async_op add>, type = #ptx<red_async_type u32>}> : (!ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>) -> ()
  ptx.red.async.relaxed.cluster add u32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster add s32
  ptx.red.async.relaxed.cluster add s32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster add u64 %{{.*}}, %{{.*}}, %{{.*}} : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  ptx.red.async.relaxed.cluster add u64 %a, %c, %mbar : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  // add.s64 is beyond the spec's table; ptxas accepts it (docs/differential.md)
  // CHECK: ptx.red.async.relaxed.cluster add s64 %{{.*}}, %{{.*}}, %{{.*}} : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  // GENERIC: "ptx.red.async.relaxed.cluster"(%a, %c, %mbar) <{op = #ptx<red_async_op add>, type = #ptx<red_async_type s64>}> : (!ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>) -> ()
  ptx.red.async.relaxed.cluster add s64 %a, %c, %mbar : !ptx.ptr<shared::cluster>, i64, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster inc u32
  ptx.red.async.relaxed.cluster inc u32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster dec u32
  ptx.red.async.relaxed.cluster dec u32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster min u32
  ptx.red.async.relaxed.cluster min u32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster max s32
  ptx.red.async.relaxed.cluster max s32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster and b32
  ptx.red.async.relaxed.cluster and b32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster or b32
  ptx.red.async.relaxed.cluster or b32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  // CHECK: ptx.red.async.relaxed.cluster xor b32
  ptx.red.async.relaxed.cluster xor b32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}

// Without '.ss' (generic addressing) both addresses are generic pointers.
// CHECK-LABEL: func.func @relaxed_cluster_generic
func.func @relaxed_cluster_generic(%a: !ptx.ptr<generic>, %mbar: !ptx.ptr<generic>, %b: i32) {
  // CHECK: ptx.red.async.relaxed.cluster max u32 %{{.*}}, %{{.*}}, %{{.*}} : !ptx.ptr<generic>, i32, !ptx.ptr<generic>
  // GENERIC: "ptx.red.async.relaxed.cluster"(%a, %b, %mbar) <{op = #ptx<red_async_op max>, type = #ptx<red_async_type u32>}> : (!ptx.ptr<generic>, i32, !ptx.ptr<generic>) -> ()
  ptx.red.async.relaxed.cluster max u32 %a, %b, %mbar : !ptx.ptr<generic>, i32, !ptx.ptr<generic>
  func.return
}

// CHECK-LABEL: func.func @release
// GENERIC-LABEL: sym_name = "release"
func.func @release(%g: !ptx.ptr<global>, %p: !ptx.ptr<generic>, %b: i32, %c: i64) {
  // CHECK: ptx.red.async.release gpu u32 %{{.*}}, %{{.*}} : !ptx.ptr<global>, i32
  // GENERIC: "ptx.red.async.release"(%g, %b) <{scope = #ptx<red_async_scope gpu>, type = #ptx<red_async_release_type u32>}> : (!ptx.ptr<global>, i32) -> ()
  ptx.red.async.release gpu u32 %g, %b : !ptx.ptr<global>, i32
  // CHECK: ptx.red.async.release gpu s32 %{{.*}}, %{{.*}} : !ptx.ptr<generic>, i32
  ptx.red.async.release gpu s32 %p, %b : !ptx.ptr<generic>, i32
  // CHECK: ptx.red.async.release sys u64 %{{.*}}, %{{.*}} : !ptx.ptr<global>, i64
  ptx.red.async.release sys u64 %g, %c : !ptx.ptr<global>, i64
  // CHECK: ptx.red.async.release mmio sys s64 %{{.*}}, %{{.*}} : !ptx.ptr<global>, i64
  // GENERIC: "ptx.red.async.release"(%g, %c) <{mmio, scope = #ptx<red_async_scope sys>, type = #ptx<red_async_release_type s64>}> : (!ptx.ptr<global>, i64) -> ()
  ptx.red.async.release mmio sys s64 %g, %c : !ptx.ptr<global>, i64
  // CHECK: ptx.red.async.release mmio sys u32 %{{.*}}, %{{.*}} : !ptx.ptr<generic>, i32
  ptx.red.async.release mmio sys u32 %p, %b : !ptx.ptr<generic>, i32
  func.return
}

// Known alignments of the element's size (8 for the mbarrier) are accepted: u32 at offset 4.
// CHECK-LABEL: func.func @aligned_addresses
// GENERIC-LABEL: sym_name = "aligned_addresses"
func.func @aligned_addresses(%b: i32, %rank: i32) {
  ptx.alloc shared @acc size 64 align 16
  ptx.alloc shared @bar size 8 align 8
  %acc = ptx.mov.addr @acc : !ptx.ptr<shared::cta>
  %bar = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %c4 = arith.constant 4 : i32
  %p = ptx.add.ptr %acc, %c4 : !ptx.ptr<shared::cta>, i32
  %a = ptx.mapa %p, %rank : !ptx.ptr<shared::cta>
  %mbar = ptx.mapa %bar, %rank : !ptx.ptr<shared::cta>
  // CHECK: ptx.red.async.relaxed.cluster add u32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  ptx.red.async.relaxed.cluster add u32 %a, %b, %mbar : !ptx.ptr<shared::cluster>, i32, !ptx.ptr<shared::cluster>
  func.return
}
