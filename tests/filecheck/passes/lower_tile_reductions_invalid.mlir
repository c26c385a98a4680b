// Reductions that no variant lowers: the error names the op's location and carries
// the whole dispatch table; forced variants that do not apply or do not exist.
// RUN: bulkred-opt %s --split-input-file --verify-diagnostics -p 'lower-tile-reductions{target=sm_100a}' | filecheck %s
// RUN: not bulkred-opt %s --split-input-file -p 'lower-tile-reductions{target=sm_100a}' 2>&1 >/dev/null | filecheck %s --check-prefix=STDERR

// A warp-scope reduction: exec_scope declines both thread-scope variants.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 9]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 8]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK-NEXT: dispatch of 'bulkred.reduce' at {{.*}}lower_tile_reductions_invalid.mlir:[[# @LINE + 7]]:3 on sm_100a
// CHECK:        sm100_packed 20 exec_scope FAIL thread warp
// CHECK:        local 10 exec_scope FAIL thread warp
// CHECK:        sm100_packed priority 20: rejected: exec_scope
// CHECK-NEXT:   local priority 10: rejected: exec_scope
// CHECK-NEXT: chosen: none
func.func @warp(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum warp %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// A shared-memory source: local_scope declines both variants.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 7]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:        sm100_packed 20 local_scope FAIL src local, dst local src shared, dst local
// CHECK:        local 10 local_scope FAIL src local, dst local src shared, dst local
// CHECK:        sm100_packed priority 20: rejected: local_scope
// CHECK-NEXT:   local priority 10: rejected: local_scope
func.func @shared_src(%a: memref<32xf32, #bulkred.scope<shared>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread %a, %b : memref<32xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}

// -----

// A cluster-scope reduction of global buffers: every reason is collected. (These cases
// change when warp, CTA or cluster variants are registered.)
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 18]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 17]]:3: error: 'bulkred.reduce' no lowering variant applies on sm_100a
// CHECK-NEXT: dispatch of 'bulkred.reduce' at {{.*}}lower_tile_reductions_invalid.mlir:[[# @LINE + 16]]:3 on sm_100a
// CHECK-NEXT:   variant priority predicate verdict expected actual
// CHECK-NEXT:   sm100_packed 20 exec_scope FAIL thread cluster
// CHECK-NEXT:   sm100_packed 20 local_scope FAIL src local, dst local src global, dst global
// CHECK-NEXT:   sm100_packed 20 dst_len FAIL 1 4
// CHECK-NEXT:   sm100_packed 20 src_ndim FAIL 1 2
// CHECK-NEXT:   sm100_packed 20 dtype FAIL float32 int32
// CHECK-NEXT:   sm100_packed 20 sm_version ok >= 100 100 (sm_100a)
// CHECK-NEXT:   sm100_packed 20 reduction_len ok >= 8 64
// CHECK-NEXT:   local 10 exec_scope FAIL thread cluster
// CHECK-NEXT:   local 10 local_scope FAIL src local, dst local src global, dst global
// CHECK-NEXT:   local 10 dtype ok {{.*}} int32
// CHECK-NEXT:   sm100_packed priority 20: rejected: exec_scope, local_scope, dst_len, src_ndim, dtype
// CHECK-NEXT:   local priority 10: rejected: exec_scope, local_scope
// CHECK-NEXT: chosen: none
func.func @cluster(%a: memref<4x64xi32, #bulkred.scope<global>>, %b: memref<4xi32, #bulkred.scope<global>>) {
  bulkred.reduce sum cluster %a, %b : memref<4x64xi32, #bulkred.scope<global>>, memref<4xi32, #bulkred.scope<global>>
  func.return
}

// -----

// Forcing sm100_packed onto an f16 vector names the failing predicate.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 6]]:3: error: 'bulkred.reduce' forced 'variant' 'sm100_packed' does not apply: dtype (expected float32, got float16)
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 5]]:3: error: 'bulkred.reduce' forced 'variant' 'sm100_packed' does not apply: dtype (expected float32, got float16)
// CHECK:        sm100_packed priority 20: rejected: dtype
// CHECK:      forced by 'variant': sm100_packed
// CHECK-NEXT: chosen: none
func.func @forced_fails(%a: memref<32xf16, #bulkred.scope<local>>, %b: memref<1xf16, #bulkred.scope<local>>) {
  bulkred.reduce sum thread variant "sm100_packed" %a, %b : memref<32xf16, #bulkred.scope<local>>, memref<1xf16, #bulkred.scope<local>>
  func.return
}

// -----

// Forcing sm100_packed below length 8 and on a 2-D source: both reasons.
// CHECK: error: 'bulkred.reduce' forced 'variant' 'sm100_packed' does not apply: dst_len (expected 1, got 3); src_ndim (expected 1, got 2); reduction_len (expected >= 8, got 5)
func.func @forced_fails_twice(%a: memref<3x5xf32, #bulkred.scope<local>>, %b: memref<3xf32, #bulkred.scope<local>>) {
  bulkred.reduce max thread variant "sm100_packed" %a, %b : memref<3x5xf32, #bulkred.scope<local>>, memref<3xf32, #bulkred.scope<local>>
  func.return
}

// -----

// An unknown variant name lists the known ones.
// STDERR:     lower_tile_reductions_invalid.mlir:[[# @LINE + 3]]:3: error: 'bulkred.reduce' 'variant' 'packed' is not a known variant (known: sm100_packed, local)
// CHECK:      lower_tile_reductions_invalid.mlir:[[# @LINE + 2]]:3: error: 'bulkred.reduce' 'variant' 'packed' is not a known variant (known: sm100_packed, local)
func.func @forced_unknown(%a: memref<32xf32, #bulkred.scope<local>>, %b: memref<1xf32, #bulkred.scope<local>>) {
  bulkred.reduce sum thread variant "packed" %a, %b : memref<32xf32, #bulkred.scope<local>>, memref<1xf32, #bulkred.scope<local>>
  func.return
}
