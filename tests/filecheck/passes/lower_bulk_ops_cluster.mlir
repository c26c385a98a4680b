// lower-bulk-ops: the bulk ops into cluster_shared with a rank (docs/lowering.md,
// "Bulk operations into a peer CTA"): the receiver (own rank == rank) initializes its
// mbarrier and expects the bytes of every other CTA; a cluster barrier; each other CTA's
// elected thread issues into the receiver's dst through mapa of dst and mbarrier; the
// receiver waits; a cluster barrier keeps the senders' src alive; the receiver
// invalidates its mbarrier.
// RUN: bulkred-opt %s --split-input-file -p lower-bulk-ops | filecheck %s
// RUN: bulkred-opt %s --split-input-file -p lower-bulk-ops | bulkred-opt --split-input-file | filecheck %s --check-prefix=NOLEFT
// NOLEFT-NOT: bulkred.bulk
// RUN: bulkred-opt %s --split-input-file -p lower-bulk-ops --print-debuginfo | filecheck %s --check-prefix=LOC
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_90a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX
// RUN: bulkred-opt %s --split-input-file -p 'bulkred-to-ptx{target=sm_100a}' -t 'ptx{assemble=true}' | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @reduce_to_rank0
// CHECK:      %tid_x = ptx.mov.sreg tid.x : i32
// CHECK:      %elected = arith.cmpi eq, %tid_x, %{{.*}} : i32
// CHECK-NEXT: %cluster_ctarank = ptx.mov.sreg cluster_ctarank : i32
// CHECK-NEXT: %[[R:.*]] = arith.index_cast %c0 : index to i32
// CHECK-NEXT: %receiver = arith.cmpi eq, %cluster_ctarank, %[[R]] : i32
// CHECK-NEXT: %[[T:.*]] = arith.constant true
// CHECK-NEXT: %[[SENDER:.*]] = arith.xori %receiver, %[[T]] : i1
// CHECK-NEXT: %[[M:.*]] = builtin.unrealized_conversion_cast %mbar : memref<1xi64, #bulkred.scope<shared>> to !ptx.ptr<shared::cta>
// The cluster has 4 CTAs: the receiver expects 3 x 256 bytes.
// CHECK-NEXT: %expected_bytes = arith.constant 768 : i32
// CHECK-NEXT: scf.if %receiver {
// CHECK-NEXT:   scf.if %elected {
// CHECK-NEXT:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT:     ptx.mbarrier.init %[[M]], %[[ONE]] : !ptx.ptr<shared::cta>
// CHECK-NEXT:     ptx.fence.mbarrier_init.release.cluster
// CHECK-NEXT:     ptx.mbarrier.arrive.expect_tx %[[M]], %expected_bytes : !ptx.ptr<shared::cta>
// CHECK:      ptx.fence.proxy.async
// CHECK-NEXT: ptx.barrier.cluster.arrive sem release
// CHECK-NEXT: ptx.barrier.cluster.wait acquire
// CHECK-NEXT: %bytes = arith.constant 256 : i32
// CHECK-NEXT: scf.if %[[SENDER]] {
// CHECK-NEXT:   scf.if %elected {
// CHECK-NEXT:     %[[D:.*]] = builtin.unrealized_conversion_cast %acc : memref<64xi32, #bulkred.scope<cluster_shared>> to !ptx.ptr<shared::cta>
// CHECK-NEXT:     %[[RD:.*]] = ptx.mapa %[[D]], %[[R]] : !ptx.ptr<shared::cta>
// CHECK-NEXT:     %[[RM:.*]] = ptx.mapa %[[M]], %[[R]] : !ptx.ptr<shared::cta>
// CHECK-NEXT:     %[[S:.*]] = builtin.unrealized_conversion_cast %tile : memref<64xi32, #bulkred.scope<shared>> to !ptx.ptr<shared::cta>
// CHECK-NEXT:     ptx.cp.reduce.async.bulk.shared_cluster.shared_cta add s32 %[[RD]], %[[S]], %bytes, %[[RM]]
// CHECK:      scf.if %receiver {
// CHECK:        scf.while
// CHECK:          ptx.mbarrier.try_wait.parity %[[M]]
// CHECK:      ptx.barrier.cluster.arrive sem release
// CHECK-NEXT: ptx.barrier.cluster.wait acquire
// CHECK-NEXT: scf.if %receiver {
// CHECK-NEXT:   scf.if %elected {
// CHECK-NEXT:     ptx.mbarrier.inval %[[M]] : !ptx.ptr<shared::cta>
// LOC-LABEL: func.func @reduce_to_rank0
// LOC: ptx.mapa {{.*}} loc("{{.*}}lower_bulk_ops_cluster.mlir":[[# @LINE + 13]]:3)
// PTX-LABEL: .visible .entry reduce_to_rank0(
// PTX: .reqnctapercluster 4, 1, 1
// PTX: mov.u32 %r{{[0-9]+}}, %cluster_ctarank;
// PTX: barrier.cluster.arrive.release;
// PTX: mapa.shared::cluster.u32
// PTX: cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.s32
// PTX: mbarrier.try_wait.parity.shared::cta.b64
func.func @reduce_to_rank0(%g: memref<64xi32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [4], block = [64], cluster = [4]>} {
  %tile = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %acc = memref.alloca() : memref<64xi32, #bulkred.scope<cluster_shared>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %c0 = arith.constant 0 : index
  bulkred.bulk_reduce sum %tile, %acc, %mbar rank %c0 : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// shared -> cluster_shared into a view of the receiver's buffer at the sender's own
// slot (rank * 16 floats): the copies of the CTAs land side by side.
// CHECK-LABEL: func.func @gather_to_rank1
// CHECK: ptx.cp.async.bulk.shared_cluster.shared_cta
// PTX-LABEL: .visible .entry gather_to_rank1(
// PTX: mapa.shared::cluster.u32
// PTX: cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes
func.func @gather_to_rank1() attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [32], cluster = [2]>} {
  %tile = memref.alloca() : memref<16xf32, #bulkred.scope<shared>>
  %all = memref.alloca() : memref<32xf32, #bulkred.scope<cluster_shared>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %own = bulkred.cluster_rank
  %c16 = arith.constant 16 : index
  %o = arith.muli %own, %c16 : index
  %slot = memref.subview %all[%o] [16] [1] : memref<32xf32, #bulkred.scope<cluster_shared>> to memref<16xf32, strided<[1], offset: ?>, #bulkred.scope<cluster_shared>>
  %c1 = arith.constant 1 : index
  bulkred.bulk_copy %tile, %slot, %mbar rank %c1 : memref<16xf32, #bulkred.scope<shared>>, memref<16xf32, strided<[1], offset: ?>, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// global -> cluster_shared: every CTA but 0 loads its row of %g into CTA 0's buffer.
// CHECK-LABEL: func.func @global_to_rank0
// CHECK: ptx.cp.async.bulk.shared_cluster.global
// PTX-LABEL: .visible .entry global_to_rank0(
// PTX: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
func.func @global_to_rank0(%g: memref<2x64xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [32], cluster = [2]>} {
  %dst = memref.alloca() : memref<1x64xf32, #bulkred.scope<cluster_shared>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %own = bulkred.cluster_rank
  %row = memref.subview %g[%own, 0] [1, 64] [1, 1] : memref<2x64xf32, #bulkred.scope<global>> to memref<1x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  %c0 = arith.constant 0 : index
  bulkred.bulk_copy %row, %dst, %mbar rank %c0 : memref<1x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>, memref<1x64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// Multicast: CTA 0 issues one copy for the CTAs of the mask (0x8001: ranks 0 and 15 of
// 16); each of them expects the bytes on its own mbarrier and waits.
// CHECK-LABEL: func.func @multicast
// CHECK:      %cluster_ctarank = ptx.mov.sreg cluster_ctarank : i32
// CHECK-NEXT: %[[MASK:.*]] = arith.extui %mask : i16 to i32
// CHECK-NEXT: %[[SH:.*]] = ptx.shr b32 %[[MASK]], %cluster_ctarank : i32
// CHECK:      %[[BIT:.*]] = ptx.and b32 %[[SH]], %{{.*}} : i32
// CHECK:      %receiver = arith.cmpi ne, %[[BIT]], %{{.*}} : i32
// CHECK:      %issuer = arith.cmpi eq, %cluster_ctarank, %{{.*}} : i32
// CHECK:      scf.if %receiver {
// CHECK:        ptx.mbarrier.arrive.expect_tx %{{.*}}, %bytes : !ptx.ptr<shared::cta>
// CHECK:      ptx.barrier.cluster.wait acquire
// CHECK-NEXT: scf.if %issuer {
// CHECK-NEXT:   scf.if %elected {
// CHECK:          ptx.cp.async.bulk.shared_cluster.global multicast "multicast::cluster" %{{.*}}, %{{.*}}, %bytes, %{{.*}} ctaMask = %mask
// PTX-LABEL: .visible .entry multicast(
// PTX: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster
func.func @multicast(%g: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [16], block = [32], cluster = [16]>} {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %mask = arith.constant -32767 : i16
  bulkred.bulk_copy %g, %s, %m multicast %mask : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}
