// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: bulkred-opt %s -p 'check-target{target=sm_90a}' | filecheck %s

// CHECK-LABEL: func.func @mbarrier
// GENERIC-LABEL: sym_name = "mbarrier"
func.func @mbarrier(%m: !ptx.ptr<shared::cta>, %remote: !ptx.ptr<shared::cluster>, %n: i32) {
  // CHECK: ptx.mbarrier.init %{{.*}}, %{{.*}} : !ptx.ptr<shared::cta>
  // GENERIC: "ptx.mbarrier.init"(%m, %n) : (!ptx.ptr<shared::cta>, i32) -> ()
  ptx.mbarrier.init %m, %n : !ptx.ptr<shared::cta>
  // CHECK: %{{.*}} = ptx.mbarrier.arrive %{{.*}} : !ptx.ptr<shared::cta>
  // GENERIC: %{{.*}} = "ptx.mbarrier.arrive"(%m) : (!ptx.ptr<shared::cta>) -> i64
  %s0 = ptx.mbarrier.arrive %m : !ptx.ptr<shared::cta>
  // CHECK: %{{.*}} = ptx.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !ptx.ptr<shared::cta> -> i64
  // GENERIC: %{{.*}} = "ptx.mbarrier.arrive.expect_tx"(%m, %n) : (!ptx.ptr<shared::cta>, i32) -> i64
  %s1 = ptx.mbarrier.arrive.expect_tx %m, %n : !ptx.ptr<shared::cta> -> i64
  // CHECK: ptx.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !ptx.ptr<shared::cta>{{$}}
  // GENERIC: "ptx.mbarrier.arrive.expect_tx"(%m, %n) : (!ptx.ptr<shared::cta>, i32) -> ()
  ptx.mbarrier.arrive.expect_tx %m, %n : !ptx.ptr<shared::cta>
  // CHECK: ptx.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !ptx.ptr<shared::cluster>{{$}}
  ptx.mbarrier.arrive.expect_tx %remote, %n : !ptx.ptr<shared::cluster>
  // CHECK: %{{.*}} = ptx.mbarrier.try_wait.parity %{{.*}}, %{{.*}} : !ptx.ptr<shared::cta>
  // GENERIC: %{{.*}} = "ptx.mbarrier.try_wait.parity"(%m, %n) : (!ptx.ptr<shared::cta>, i32) -> i1
  %done = ptx.mbarrier.try_wait.parity %m, %n : !ptx.ptr<shared::cta>
  // CHECK: ptx.mbarrier.inval %{{.*}} : !ptx.ptr<shared::cta>
  // GENERIC: "ptx.mbarrier.inval"(%m) : (!ptx.ptr<shared::cta>) -> ()
  ptx.mbarrier.inval %m : !ptx.ptr<shared::cta>
  func.return
}

// mbarrier objects that fill their arrays: an 8-byte array, and the second object of a
// 16-byte one (through ptx.mapa).
// CHECK-LABEL: func.func @mbarrier_objects_inside_arrays
// GENERIC-LABEL: sym_name = "mbarrier_objects_inside_arrays"
func.func @mbarrier_objects_inside_arrays(%n: i32, %rank: i32) {
  ptx.alloc shared @bar size 8 align 8
  ptx.alloc shared @bars size 16 align 16
  %b = ptx.mov.addr @bar : !ptx.ptr<shared::cta>
  %bs = ptx.mov.addr @bars : !ptx.ptr<shared::cta>
  %c8 = arith.constant 8 : i32
  %b1 = ptx.add.ptr %bs, %c8 : !ptx.ptr<shared::cta>, i32
  // CHECK: ptx.mbarrier.init %{{.*}}, %{{.*}} : !ptx.ptr<shared::cta>
  ptx.mbarrier.init %b, %n : !ptx.ptr<shared::cta>
  // CHECK: ptx.mbarrier.init %{{.*}}, %{{.*}} : !ptx.ptr<shared::cta>
  ptx.mbarrier.init %b1, %n : !ptx.ptr<shared::cta>
  %r = ptx.mapa %b1, %rank : !ptx.ptr<shared::cta>
  // CHECK: ptx.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !ptx.ptr<shared::cluster>{{$}}
  ptx.mbarrier.arrive.expect_tx %r, %n : !ptx.ptr<shared::cluster>
  func.return
}

// CHECK-LABEL: func.func @fences
// GENERIC-LABEL: sym_name = "fences"
func.func @fences() {
  // CHECK: ptx.fence.mbarrier_init.release.cluster
  // GENERIC: "ptx.fence.mbarrier_init.release.cluster"() : () -> ()
  ptx.fence.mbarrier_init.release.cluster
  // CHECK: ptx.fence.proxy.async{{$}}
  // GENERIC: "ptx.fence.proxy.async"() : () -> ()
  ptx.fence.proxy.async
  // CHECK: ptx.fence.proxy.async space "shared::cta"
  // GENERIC: "ptx.fence.proxy.async"() <{space = #ptx<state_space "shared::cta">}> : () -> ()
  ptx.fence.proxy.async space "shared::cta"
  // CHECK: ptx.fence.proxy.async space "shared::cluster"
  ptx.fence.proxy.async space "shared::cluster"
  // CHECK: ptx.fence.proxy.async space global
  ptx.fence.proxy.async space global
  func.return
}

// CHECK-LABEL: func.func @bulk_groups
// GENERIC-LABEL: sym_name = "bulk_groups"
func.func @bulk_groups() {
  // CHECK: ptx.cp.async.bulk.commit_group
  // GENERIC: "ptx.cp.async.bulk.commit_group"() : () -> ()
  ptx.cp.async.bulk.commit_group
  // CHECK: ptx.cp.async.bulk.wait_group read 0
  // GENERIC: "ptx.cp.async.bulk.wait_group"() <{read, n = 0 : i32}> : () -> ()
  ptx.cp.async.bulk.wait_group read 0
  // CHECK: ptx.cp.async.bulk.wait_group 2
  // GENERIC: "ptx.cp.async.bulk.wait_group"() <{n = 2 : i32}> : () -> ()
  ptx.cp.async.bulk.wait_group 2
  func.return
}

// CHECK-LABEL: func.func @barriers
// GENERIC-LABEL: sym_name = "barriers"
func.func @barriers(%a: !ptx.ptr<shared::cta>, %rank: i32) {
  // CHECK: ptx.barrier.cluster.arrive{{$}}
  // GENERIC: "ptx.barrier.cluster.arrive"() : () -> ()
  ptx.barrier.cluster.arrive
  // CHECK: ptx.barrier.cluster.arrive sem release{{$}}
  // GENERIC: "ptx.barrier.cluster.arrive"() <{sem = #ptx<cluster_arrive_sem release>}> : () -> ()
  ptx.barrier.cluster.arrive sem release
  // CHECK: ptx.barrier.cluster.arrive sem relaxed aligned
  // GENERIC: "ptx.barrier.cluster.arrive"() <{sem = #ptx<cluster_arrive_sem relaxed>, aligned}> : () -> ()
  ptx.barrier.cluster.arrive sem relaxed aligned
  // CHECK: ptx.barrier.cluster.arrive aligned
  ptx.barrier.cluster.arrive aligned
  // CHECK: ptx.barrier.cluster.wait{{$}}
  ptx.barrier.cluster.wait
  // CHECK: ptx.barrier.cluster.wait acquire{{$}}
  // GENERIC: "ptx.barrier.cluster.wait"() <{acquire}> : () -> ()
  ptx.barrier.cluster.wait acquire
  // CHECK: ptx.barrier.cluster.wait acquire aligned
  ptx.barrier.cluster.wait acquire aligned
  // CHECK: ptx.bar.sync 0
  // GENERIC: "ptx.bar.sync"() <{id = 0 : i32}> : () -> ()
  ptx.bar.sync 0
  // CHECK: ptx.bar.sync 15
  ptx.bar.sync 15
  // CHECK: %{{.*}} = ptx.mapa %{{.*}}, %{{.*}} : !ptx.ptr<shared::cta>
  // GENERIC: %{{.*}} = "ptx.mapa"(%a, %rank) : (!ptx.ptr<shared::cta>, i32) -> !ptx.ptr<shared::cluster>
  %remote = ptx.mapa %a, %rank : !ptx.ptr<shared::cta>
  func.return
}
