// The tile-level bulkred dialect: reduce, copy, bulk_copy, bulk_reduce and the launch
// attribute, in custom syntax and through a generic-syntax round trip.
// RUN: bulkred-opt %s | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | bulkred-opt | filecheck %s
// RUN: bulkred-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @seed_sum32
// CHECK-SAME: attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>}
// GENERIC-LABEL: sym_name = "seed_sum32"
func.func @seed_sum32(%A: memref<32xf32, #bulkred.scope<global>>, %B: memref<1xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} {
  // CHECK: %[[AL:.*]] = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
  %A_local = memref.alloca() : memref<32xf32, #bulkred.scope<local>>
  // CHECK: %[[BL:.*]] = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  %B_local = memref.alloca() : memref<1xf32, #bulkred.scope<local>>
  // CHECK: bulkred.copy %{{.*}}, %[[AL]] : memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>
  // GENERIC: "bulkred.copy"(%{{.*}}, %{{.*}}) : (memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>) -> ()
  bulkred.copy %A, %A_local : memref<32xf32, #bulkred.scope<global>>, memref<32xf32, #bulkred.scope<local>>
  // CHECK: bulkred.reduce sum thread %[[AL]], %[[BL]] : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // GENERIC: "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind sum>, scope = #bulkred<exec_scope thread>}> : (memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>) -> ()
  bulkred.reduce sum thread %A_local, %B_local : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // CHECK: bulkred.copy %[[BL]], %{{.*}} : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
  bulkred.copy %B_local, %B : memref<1xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<global>>
  // GENERIC: }) {bulkred.launch = #bulkred.launch<grid = [1], block = [1], cluster = [1]>} : () -> ()
  func.return
}

// Every reduce kind; the bitwise ones on integers.
// CHECK-LABEL: func.func @reduce_kinds
func.func @reduce_kinds(%f: memref<8xf32, #bulkred.scope<local>>, %fd: memref<1xf32, #bulkred.scope<local>>,
                        %i: memref<8xi32, #bulkred.scope<local>>, %id: memref<1xi32, #bulkred.scope<local>>) {
  // CHECK: bulkred.reduce sum thread
  bulkred.reduce sum thread %f, %fd : memref<8xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce max thread
  bulkred.reduce max thread %f, %fd : memref<8xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce min thread
  bulkred.reduce min thread %f, %fd : memref<8xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce and thread %{{.*}}, %{{.*}} : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  // GENERIC: "bulkred.reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind and>, scope = #bulkred<exec_scope thread>}>
  bulkred.reduce and thread %i, %id : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce or thread
  bulkred.reduce or thread %i, %id : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce xor thread
  bulkred.reduce xor thread %i, %id : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce sum thread {{.*}} : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  bulkred.reduce sum thread %i, %id : memref<8xi32, #bulkred.scope<local>>, memref<1xi32, #bulkred.scope<local>>
  func.return
}

// Every execution scope, accum, variant, and both together.
// CHECK-LABEL: func.func @reduce_scopes
func.func @reduce_scopes(%s: memref<256xf32, #bulkred.scope<shared>>, %d: memref<1xf32, #bulkred.scope<shared>>) {
  // CHECK: bulkred.reduce sum warp %{{.*}}, %{{.*}} : memref<256xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
  bulkred.reduce sum warp %s, %d : memref<256xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.reduce max cta %{{.*}}, %{{.*}} :
  // GENERIC: <{kind = #bulkred<reduce_kind max>, scope = #bulkred<exec_scope cta>}>
  bulkred.reduce max cta %s, %d : memref<256xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.reduce min cluster %{{.*}}, %{{.*}} :
  bulkred.reduce min cluster %s, %d : memref<256xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.reduce sum thread accum %{{.*}}, %{{.*}} :
  // GENERIC: <{kind = #bulkred<reduce_kind sum>, scope = #bulkred<exec_scope thread>, accum}>
  bulkred.reduce sum thread accum %s, %d : memref<256xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.reduce sum thread variant "local" %{{.*}}, %{{.*}} :
  // GENERIC: <{kind = #bulkred<reduce_kind sum>, scope = #bulkred<exec_scope thread>, variant = "local"}>
  bulkred.reduce sum thread variant "local" %s, %d : memref<256xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.reduce max cta accum variant "shared" %{{.*}}, %{{.*}} :
  bulkred.reduce max cta accum variant "shared" %s, %d : memref<256xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>
  func.return
}

// A 2-D source reduces along its last axis; every element type the dialect accepts.
// CHECK-LABEL: func.func @reduce_types
func.func @reduce_types(%a: memref<4x16xf16, #bulkred.scope<local>>, %b: memref<4xf16, #bulkred.scope<local>>,
                        %c: memref<16xbf16, #bulkred.scope<local>>, %d: memref<1xbf16, #bulkred.scope<local>>,
                        %e: memref<16xf64, #bulkred.scope<local>>, %f: memref<1xf64, #bulkred.scope<local>>,
                        %g: memref<2x3x16xi64, #bulkred.scope<local>>, %h: memref<2x3xi64, #bulkred.scope<local>>,
                        %i: memref<16xi16, #bulkred.scope<local>>, %j: memref<1xi16, #bulkred.scope<local>>) {
  // CHECK: bulkred.reduce sum thread %{{.*}}, %{{.*}} : memref<4x16xf16, #bulkred.scope<local>>, memref<4xf16, #bulkred.scope<local>>
  bulkred.reduce sum thread %a, %b : memref<4x16xf16, #bulkred.scope<local>>, memref<4xf16, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce max thread %{{.*}}, %{{.*}} : memref<16xbf16, #bulkred.scope<local>>, memref<1xbf16, #bulkred.scope<local>>
  bulkred.reduce max thread %c, %d : memref<16xbf16, #bulkred.scope<local>>, memref<1xbf16, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce min thread %{{.*}}, %{{.*}} : memref<16xf64, #bulkred.scope<local>>, memref<1xf64, #bulkred.scope<local>>
  bulkred.reduce min thread %e, %f : memref<16xf64, #bulkred.scope<local>>, memref<1xf64, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce xor thread %{{.*}}, %{{.*}} : memref<2x3x16xi64, #bulkred.scope<local>>, memref<2x3xi64, #bulkred.scope<local>>
  bulkred.reduce xor thread %g, %h : memref<2x3x16xi64, #bulkred.scope<local>>, memref<2x3xi64, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.reduce min thread %{{.*}}, %{{.*}} : memref<16xi16, #bulkred.scope<local>>, memref<1xi16, #bulkred.scope<local>>
  bulkred.reduce min thread %i, %j : memref<16xi16, #bulkred.scope<local>>, memref<1xi16, #bulkred.scope<local>>
  func.return
}

// copy between any two scopes.
// CHECK-LABEL: func.func @copies
func.func @copies(%g: memref<4x8xi32, #bulkred.scope<global>>, %s: memref<4x8xi32, #bulkred.scope<shared>>) {
  %l = memref.alloca() : memref<4x8xi32, #bulkred.scope<local>>
  // CHECK: bulkred.copy %{{.*}}, %{{.*}} : memref<4x8xi32, #bulkred.scope<global>>, memref<4x8xi32, #bulkred.scope<shared>>
  bulkred.copy %g, %s : memref<4x8xi32, #bulkred.scope<global>>, memref<4x8xi32, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.copy %{{.*}}, %{{.*}} : memref<4x8xi32, #bulkred.scope<shared>>, memref<4x8xi32, #bulkred.scope<local>>
  bulkred.copy %s, %l : memref<4x8xi32, #bulkred.scope<shared>>, memref<4x8xi32, #bulkred.scope<local>>
  // CHECK-NEXT: bulkred.copy %{{.*}}, %{{.*}} : memref<4x8xi32, #bulkred.scope<local>>, memref<4x8xi32, #bulkred.scope<global>>
  bulkred.copy %l, %g : memref<4x8xi32, #bulkred.scope<local>>, memref<4x8xi32, #bulkred.scope<global>>
  func.return
}

// bulk_copy in its four directions; multicast for global -> cluster_shared.
// CHECK-LABEL: func.func @bulk_copies
// CHECK-SAME: bulkred.launch = #bulkred.launch<grid = [8, 2, 1], block = [128], cluster = [4, 1, 1]>
func.func @bulk_copies(%g: memref<64xf32, #bulkred.scope<global>>) attributes {bulkred.launch = #bulkred.launch<grid = [8, 2, 1], block = [128], cluster = [4, 1, 1]>} {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  %c = memref.alloca() : memref<64xf32, #bulkred.scope<cluster_shared>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  // CHECK: %[[MASK:.*]] = arith.constant 15 : i16
  %mask = arith.constant 15 : i16
  // CHECK-NEXT: %[[R:.*]] = bulkred.cluster_rank
  // GENERIC: "bulkred.cluster_rank"() : () -> index
  %r = bulkred.cluster_rank
  // CHECK-NEXT: %{{.*}} = bulkred.cluster_size
  // GENERIC: "bulkred.cluster_size"() : () -> index
  %n = bulkred.cluster_size
  // CHECK: bulkred.bulk_copy %{{.*}}, %[[S:.*]], %[[MBAR:.*]] : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  // GENERIC: "bulkred.bulk_copy"(%{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>) -> ()
  bulkred.bulk_copy %g, %s, %mbar : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.bulk_copy %{{.*}}, %[[C:.*]], %[[MBAR]] rank %[[R]] : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  // GENERIC: "bulkred.bulk_copy"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}> : (memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>, index) -> ()
  bulkred.bulk_copy %g, %c, %mbar rank %r : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.bulk_copy %{{.*}}, %[[C]], %[[MBAR]] multicast %[[MASK]] : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  // GENERIC: "bulkred.bulk_copy"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>, i16) -> ()
  bulkred.bulk_copy %g, %c, %mbar multicast %mask : memref<64xf32, #bulkred.scope<global>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.bulk_copy %[[S]], %[[C]], %[[MBAR]] rank %[[R]] : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  bulkred.bulk_copy %s, %c, %mbar rank %r : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.bulk_copy %[[S]], %{{.*}} : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  // GENERIC: "bulkred.bulk_copy"(%{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>) -> ()
  bulkred.bulk_copy %s, %g : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  func.return
}

// bulk_reduce into global (bulk group) and into a peer CTA's shared memory (mbarrier);
// 16-byte sizes from 2-D and 16-bit element types.
// CHECK-LABEL: func.func @bulk_reduces
func.func @bulk_reduces(%g: memref<64xf32, #bulkred.scope<global>>, %gi: memref<2x4xi32, #bulkred.scope<global>>,
                        %gh: memref<8xbf16, #bulkred.scope<global>>) {
  %s = memref.alloca() : memref<64xf32, #bulkred.scope<shared>>
  %si = memref.alloca() : memref<2x4xi32, #bulkred.scope<shared>>
  %ci = memref.alloca() : memref<2x4xi32, #bulkred.scope<cluster_shared>>
  %h = memref.alloca() : memref<8xbf16, #bulkred.scope<shared>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %c0 = arith.constant 0 : index
  // CHECK: bulkred.bulk_reduce sum %{{.*}}, %{{.*}} : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  // GENERIC: "bulkred.bulk_reduce"(%{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind sum>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>) -> ()
  bulkred.bulk_reduce sum %s, %g : memref<64xf32, #bulkred.scope<shared>>, memref<64xf32, #bulkred.scope<global>>
  // CHECK-NEXT: bulkred.bulk_reduce max %{{.*}}, %{{.*}} : memref<2x4xi32, #bulkred.scope<shared>>, memref<2x4xi32, #bulkred.scope<global>>
  bulkred.bulk_reduce max %si, %gi : memref<2x4xi32, #bulkred.scope<shared>>, memref<2x4xi32, #bulkred.scope<global>>
  // CHECK-NEXT: bulkred.bulk_reduce and %{{.*}}, %{{.*}}, %{{.*}} rank %{{.*}} : memref<2x4xi32, #bulkred.scope<shared>>, memref<2x4xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  // GENERIC: "bulkred.bulk_reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{kind = #bulkred<reduce_kind and>, operandSegmentSizes = array<i32: 1, 1, 1, 1>}> : (memref<2x4xi32, #bulkred.scope<shared>>, memref<2x4xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>, index) -> ()
  bulkred.bulk_reduce and %si, %ci, %mbar rank %c0 : memref<2x4xi32, #bulkred.scope<shared>>, memref<2x4xi32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.bulk_reduce min %{{.*}}, %{{.*}} : memref<8xbf16, #bulkred.scope<shared>>, memref<8xbf16, #bulkred.scope<global>>
  bulkred.bulk_reduce min %h, %gh : memref<8xbf16, #bulkred.scope<shared>>, memref<8xbf16, #bulkred.scope<global>>
  func.return
}

// The largest bulk size: 232448 bytes, all the shared memory one CTA can have.
// CHECK-LABEL: func.func @bulk_largest
func.func @bulk_largest(%g: memref<58112xf32, #bulkred.scope<global>>, %s: memref<58112xf32, #bulkred.scope<shared>>,
                        %mbar: memref<1xi64, #bulkred.scope<shared>>) {
  // CHECK: bulkred.bulk_copy %{{.*}}, %{{.*}}, %{{.*}} : memref<58112xf32, #bulkred.scope<global>>, memref<58112xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  bulkred.bulk_copy %g, %s, %mbar : memref<58112xf32, #bulkred.scope<global>>, memref<58112xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  // CHECK-NEXT: bulkred.bulk_copy %{{.*}}, %{{.*}} : memref<58112xf32, #bulkred.scope<shared>>, memref<58112xf32, #bulkred.scope<global>>
  bulkred.bulk_copy %s, %g : memref<58112xf32, #bulkred.scope<shared>>, memref<58112xf32, #bulkred.scope<global>>
  // CHECK-NEXT: bulkred.bulk_reduce sum %{{.*}}, %{{.*}} : memref<58112xf32, #bulkred.scope<shared>>, memref<58112xf32, #bulkred.scope<global>>
  bulkred.bulk_reduce sum %s, %g : memref<58112xf32, #bulkred.scope<shared>>, memref<58112xf32, #bulkred.scope<global>>
  func.return
}

// A tile op anywhere inside a kernel, not only directly in its body.
// CHECK-LABEL: func.func @nested_in_loop
func.func @nested_in_loop(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // CHECK: bulkred.reduce sum thread accum %{{.*}}, %{{.*}}
    bulkred.reduce sum thread accum %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  }
  func.return
}

// The launch attribute: 1 to 3 entries, missing fields default to [1], any field order.
// CHECK-LABEL: func.func @launch_defaults
// CHECK-SAME: attributes {bulkred.launch = #bulkred.launch<grid = [132], block = [1], cluster = [1]>}
// GENERIC: {bulkred.launch = #bulkred.launch<grid = [132], block = [1], cluster = [1]>}
func.func @launch_defaults() attributes {bulkred.launch = #bulkred.launch<grid = [132]>} {
  func.return
}

// CHECK-LABEL: func.func @launch_reordered
// CHECK-SAME: attributes {bulkred.launch = #bulkred.launch<grid = [4, 4, 2], block = [32, 4, 2], cluster = [2, 2, 2]>}
func.func @launch_reordered() attributes {bulkred.launch = #bulkred.launch<cluster = [2, 2, 2], block = [32, 4, 2], grid = [4, 4, 2]>} {
  func.return
}

// The largest launch shapes CUDA allows: 1024 threads per block in any arrangement
// (z <= 64), grid x up to 2^31 - 1 and y, z up to 65535, 8 CTAs per portable cluster
// and up to 16 per non-portable one.
// CHECK-LABEL: func.func @launch_limits
// CHECK-SAME: #bulkred.launch<grid = [2147483647], block = [1024], cluster = [1]>
func.func @launch_limits() attributes {bulkred.launch = #bulkred.launch<grid = [2147483647], block = [1024]>} {
  func.return
}

// CHECK-LABEL: func.func @launch_limits_3d
// CHECK-SAME: #bulkred.launch<grid = [1, 65535, 65535], block = [16, 1, 64], cluster = [1]>
func.func @launch_limits_3d() attributes {bulkred.launch = #bulkred.launch<grid = [1, 65535, 65535], block = [16, 1, 64]>} {
  func.return
}

// CHECK-LABEL: func.func @launch_portable_cluster
// CHECK-SAME: #bulkred.launch<grid = [16, 2], block = [32, 32], cluster = [4, 2]>
func.func @launch_portable_cluster() attributes {bulkred.launch = #bulkred.launch<grid = [16, 2], block = [32, 32], cluster = [4, 2]>} {
  func.return
}

// CHECK-LABEL: func.func @launch_nonportable_cluster
// CHECK-SAME: #bulkred.launch<grid = [32, 2], block = [128], cluster = [8, 2]>
func.func @launch_nonportable_cluster() attributes {bulkred.launch = #bulkred.launch<grid = [32, 2], block = [128], cluster = [8, 2]>} {
  func.return
}

// Tile views (memref.subview) as operands: bulkred.copy takes any view; the bulk ops a
// contiguous one (full rows of a matrix, a 1-D slice at a dynamic or 16-byte offset).
// CHECK-LABEL: func.func @views
func.func @views(%M: memref<8x64xf32, #bulkred.scope<global>>, %i: index) attributes {bulkred.launch = #bulkred.launch<grid = [2], block = [32], cluster = [2]>} {
  %s = memref.alloca() : memref<2x64xf32, #bulkred.scope<shared>>
  %c = memref.alloca() : memref<256xf32, #bulkred.scope<cluster_shared>>
  %l = memref.alloca() : memref<4x8xf32, #bulkred.scope<local>>
  %mbar = memref.alloca() : memref<1xi64, #bulkred.scope<shared>>
  %rows = memref.subview %M[%i, 0] [2, 64] [1, 1] : memref<8x64xf32, #bulkred.scope<global>> to memref<2x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  // CHECK: bulkred.bulk_copy %{{.*}}, %{{.*}}, %{{.*}} : memref<2x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>, memref<2x64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  bulkred.bulk_copy %rows, %s, %mbar : memref<2x64xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>, memref<2x64xf32, #bulkred.scope<shared>>, memref<1xi64, #bulkred.scope<shared>>
  %block = memref.subview %M[%i, 8] [4, 8] [1, 1] : memref<8x64xf32, #bulkred.scope<global>> to memref<4x8xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>
  // CHECK: bulkred.copy %{{.*}}, %{{.*}} : memref<4x8xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>, memref<4x8xf32, #bulkred.scope<local>>
  bulkred.copy %block, %l : memref<4x8xf32, strided<[64, 1], offset: ?>, #bulkred.scope<global>>, memref<4x8xf32, #bulkred.scope<local>>
  %row = memref.subview %s[1, 0] [1, 64] [1, 1] : memref<2x64xf32, #bulkred.scope<shared>> to memref<1x64xf32, strided<[64, 1], offset: 64>, #bulkred.scope<shared>>
  %c1 = arith.constant 1 : index
  %two = memref.alloca() : memref<1x64xf32, #bulkred.scope<cluster_shared>>
  // CHECK: bulkred.bulk_copy %{{.*}}, %{{.*}}, %{{.*}} rank %{{.*}} : memref<1x64xf32, strided<[64, 1], offset: 64>, #bulkred.scope<shared>>, memref<1x64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  bulkred.bulk_copy %row, %two, %mbar rank %c1 : memref<1x64xf32, strided<[64, 1], offset: 64>, #bulkred.scope<shared>>, memref<1x64xf32, #bulkred.scope<cluster_shared>>, memref<1xi64, #bulkred.scope<shared>>
  func.return
}
