// lower-bulk-ops rejects the directions into cluster_shared, which need a peer CTA rank
// the tile ops do not carry, with a located error naming the op (docs/lowering.md,
// "Bulk operations"); so does bulkred-to-ptx, which runs it.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p lower-bulk-ops | filecheck %s
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'bulkred-to-ptx{target=sm_90a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p lower-bulk-ops 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 5]]:3: error: 'bulkred.bulk_copy' a bulk copy from global into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
func.func @global_to_cluster(%g: memref<64xf32, #bulkred.scope<global>>) {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  // CHECK: error: 'bulkred.bulk_copy' a bulk copy from global into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
  bulkred.bulk_copy %g, %s, %m : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.bulk_copy' a multicast bulk copy from global into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
func.func @multicast(%g: memref<64xf32, #bulkred.scope<global>>) {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %mask = arith.constant 3 : i16
  // CHECK: error: 'bulkred.bulk_copy' a multicast bulk copy from global into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
  bulkred.bulk_copy %g, %s, %m multicast %mask : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.bulk_copy' a bulk copy from shared into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
func.func @shared_to_peer() {
  %a = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %b = memref.alloca() : memref<64xi32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  // CHECK: error: 'bulkred.bulk_copy' a bulk copy from shared into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
  bulkred.bulk_copy %a, %b, %m : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.bulk_reduce' a bulk reduce into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
func.func @reduce_to_peer() {
  %a = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %b = memref.alloca() : memref<64xi32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  // CHECK: error: 'bulkred.bulk_reduce' a bulk reduce into cluster_shared is not lowered yet: the tile op carries no peer CTA rank
  bulkred.bulk_reduce sum %a, %b, %m : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}

// -----

// The errors come before any rewrite: the first bulk op, which could be lowered, is
// left as it was.
// STDERR: lower_bulk_ops_invalid.mlir:[[# @LINE + 7]]:3: error: 'bulkred.bulk_reduce' a bulk reduce into cluster_shared
func.func @second_op_fails(%g: memref<64xi32, #bulkred.scope<global>>) {
  %a = memref.alloca() : memref<64xi32, #bulkred.scope<shared>>
  %b = memref.alloca() : memref<64xi32, #bulkred.scope<cluster_shared>>
  %m = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  bulkred.bulk_copy %a, %g : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<global>>
  // CHECK: error: 'bulkred.bulk_reduce' a bulk reduce into cluster_shared is not lowered yet
  bulkred.bulk_reduce sum %a, %b, %m : memref<64xi32, #bulkred.scope<shared>>, memref<64xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
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
