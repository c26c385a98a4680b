// lower-bulk-ops rejects a bulk op into cluster_shared in a kernel without a cluster
// launch (also a multicast copy), with a located error naming the op
// (docs/lowering.md, "Bulk operations"); so does bulkred-to-ptx, which runs it.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p lower-bulk-ops | filecheck %s
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'bulkred-to-ptx{target=sm_90a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p lower-bulk-ops 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// Without a bulkred.launch the verifier cannot know the cluster; the lowering needs it
// (the receiver expects the bytes of every other CTA).
// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 7]]:3: error: 'bulkred.bulk_copy' a bulk operation into cluster_shared needs a kernel whose bulkred.launch has a cluster of 2 or more CTAs
func.func @shared_to_peer_no_launch() {
  %a = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %b = memref.alloca() : memref<64xi32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %r = arith.constant 0 : index
  // CHECK: error: 'bulkred.bulk_copy' a bulk operation into cluster_shared needs a kernel whose bulkred.launch has a cluster of 2 or more CTAs
  bulkred.bulk_copy %a, %b, %m rank %r : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// The errors come before any rewrite: the first bulk op, which could be lowered, is
// left as it was.
// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 8]]:3: error: 'bulkred.bulk_reduce' a bulk operation into cluster_shared needs
func.func @second_op_fails(%g: memref<64xi32, #bulkred.scope<global>>) {
  %a = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %b = memref.alloca() : memref<64xi32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %r = arith.constant 0 : index
  bulkred.bulk_copy %a, %g : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  // CHECK: error: 'bulkred.bulk_reduce' a bulk operation into cluster_shared needs a kernel whose bulkred.launch has a cluster of 2 or more CTAs
  bulkred.bulk_reduce sum %a, %b, %m rank %r : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.bulk_copy' a bulk operation into cluster_shared needs a kernel whose bulkred.launch has a cluster of 2 or more CTAs
func.func @multicast_no_launch(%g: memref<64xf32, #bulkred.scope<global>>) {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %mask = arith.constant 3 : i16
  // CHECK: error: 'bulkred.bulk_copy' a bulk operation into cluster_shared needs a kernel whose bulkred.launch has a cluster of 2 or more CTAs
  bulkred.bulk_copy %g, %s, %m multicast %mask : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// A bulkred.launch of another kind: the elected thread would be computed from all three
// thread ids, and the kernel printed without .reqntid.
// CHECK: error: 'func.func' 'bulkred.launch' must be a #bulkred.launch<grid = [..], block = [..], cluster = [..]> attribute, got "block = [128]"
func.func @launch_not_a_launch(%g: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.launch = "block = [128]"} {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  bulkred.bulk_copy %s, %g : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}
